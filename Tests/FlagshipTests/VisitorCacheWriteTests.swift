import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// The visitor cache off the request path (issue 19, points 4 and 5): `fetchFlags` returns once
/// the flags are in memory; the visitor documents wait, one per visitor, for the writer's next
/// group commit with the hits; a lookup reads them meanwhile; consent erasure is one transaction.
final class VisitorCacheWriteTests: TrackingTestCase {
    private var storePath: String {
        StoreLocation.databaseFile(envId: Self.envId, in: directory.url).path
    }

    func testFetchFlagsReturnsWithoutWaitingForAStoreLockedByAnotherProcessAndItsDocumentsAreGroupCommitted() async throws {
        start(trackingBuilder())
        let trace = try StatementTrace(flagship)
        let holder = try Database(path: storePath)
        defer { holder.close() }
        try holder.withConnection { _ = try $0.execute("BEGIN IMMEDIATE") }
        var locked = true
        defer { if locked { _ = try? holder.withConnection { try $0.execute("ROLLBACK") } } }

        let instance = flagship!
        let started = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in 0..<64 {
                group.addTask {
                    // `buildAsync`: its lookup of the cache is bounded by the lookup timeout
                    // without holding a thread while the store's connection is busy.
                    let visitor = await instance.newVisitor(visitorId: "visitor-\(number)", hasConsented: true,
                                                            instanceType: .NEW_INSTANCE).buildAsync()
                    try await visitor.fetchFlags()
                }
            }
            try await group.waitForAll()
        }
        let fetching = Date().timeIntervalSince(started)
        XCTAssertLessThan(fetching, 2, "64 fetches took \(fetching) s with the store locked: they waited for the disk")

        // Read back before any of it is written: a lookup sees the documents waiting.
        let again = await instance.newVisitor(visitorId: "visitor-7", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        XCTAssertEqual(again.requiredFetchReason, .FETCHED_FROM_CACHE, "the waiting document is read back")
        XCTAssertEqual(again.getFlag(key: "btnColor").value(defaultValue: "none"), "red")

        _ = try holder.withConnection { try $0.execute("ROLLBACK") }
        locked = false
        await instance.flushCaches()

        let store = try inspectStore()
        defer { store.close() }
        let count = try await store.read { try $0.visitors.count() }
        XCTAssertEqual(count, 64, "every visitor's document is in the table")
        let statements = trace.statements
        XCTAssertEqual(statements.filter { $0.hasPrefix("INSERT INTO main.visitors") }.count, 64)
        let commitsWithVisitors = trace.transactions.filter { $0.contains { $0.hasPrefix("INSERT INTO main.visitors") } }
        XCTAssertLessThanOrEqual(commitsWithVisitors.count, 3,
                                 "64 documents that waited together are written in a group commit, not one transaction each")
    }

    func testConsentWithdrawnErasesTheVisitorAndItsHitsInOneTransaction() async throws {
        server.injectFault(.status(503), on: .events)
        start(trackingBuilder())
        let visitor = makeVisitor("erased")
        try await visitor.fetchFlags()
        try await visitor.sendHit(click(1))
        await flagship.flushCaches()
        XCTAssertEqual(try inspectedVisitorIds(), ["erased"])
        let trace = try StatementTrace(flagship)

        visitor.setConsent(hasConsented: false)
        await flagship.flushCaches()

        XCTAssertEqual(try inspectedVisitorIds(), [], "the visitor's row is gone")
        XCTAssertEqual(try storedClickLabels(), [], "its hits are gone")
        let erasures = trace.transactions.filter { transaction in
            transaction.contains { $0.hasPrefix("DELETE FROM main.visitors") } || transaction.contains { $0.hasPrefix("DELETE FROM main.hits") }
        }
        XCTAssertEqual(erasures.count, 1, "one transaction erases both: \(erasures)")
        let erasure = try XCTUnwrap(erasures.first)
        XCTAssertTrue(erasure.contains { $0.hasPrefix("DELETE FROM main.visitors") } && erasure.contains { $0.hasPrefix("DELETE FROM main.hits") },
                      "\(erasure)")
    }

    func testASettleRoundIsOneTransaction() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        await flagship.waitUntilTrackingIsIdle()
        let trace = try StatementTrace(flagship)

        try await visitor.sendHit(click(1))
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()

        let settles = trace.transactions.filter { $0.contains { $0.hasPrefix("DELETE FROM main.hits WHERE id") } }
        XCTAssertEqual(settles.count, 1, "\(trace.transactions)")
    }

    private func inspectedVisitorIds() throws -> [String] {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { try $0.visitors.visitors() }.map(\.visitorId).sorted()
    }
}

/// Every statement the SDK's store connection runs, through SQLite's own trace hook
/// (`sqlite3_trace_v2`), grouped into the transactions `BEGIN` … `COMMIT` they ran in.
final class StatementTrace: Sendable {
    private let recorded = Locked<[String]>([])
    private let database: Database

    init(_ flagship: Flagship) throws {
        database = try XCTUnwrap(flagship.currentRuntime?.caches?.store.database)
        let recorded = recorded
        try database.traceStatements { statement in
            recorded.withLock { $0.append(statement.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
    }

    deinit {
        try? database.traceStatements(nil)
    }

    var statements: [String] { recorded.withLock { $0 } }

    /// The statements of each committed transaction, in order.
    var transactions: [[String]] {
        var result: [[String]] = []
        var current: [String]?
        for statement in statements {
            if statement.hasPrefix("BEGIN") {
                current = []
            } else if statement == "COMMIT" {
                if let current { result.append(current) }
                current = nil
            } else if statement == "ROLLBACK" {
                current = nil
            } else {
                current?.append(statement)
            }
        }
        return result
    }
}
