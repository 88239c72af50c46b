#if Postgres
import FlagshipLocalServer
import FlagshipStore
import Foundation
import PostgresTestSupport
import XCTest

@testable import Flagship
@testable import FlagshipPostgres

/// What a fleet's instances tell the platform about a visitor: what one reported is recorded in
/// the shared store, so another instance serving the visitor's next request does not report it
/// again; an erasure made on one is seen by the other, which reports a new consent again.
final class PostgresDeduplicationTests: PostgresTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-dedup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Seconds added to the system clock of both instances: how a test moves past the hot
    /// visitors' lifetime without waiting for it (waits stay real).
    private let clockOffset = Locked(0.0)

    private func instance(_ number: Int, store: FlagshipPostgresStore, server: LocalFlagshipServer) -> Flagship {
        let flagship = Flagship()
        let offset = clockOffset
        flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
            .withClock { Date().addingTimeInterval(offset.withLock { $0 }) }
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheDirectory(directory.appendingPathComponent("instance-\(number)"))
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 1, batchIntervalTimer: 0.05))
            .withLogLevel(.WARNING)
            .withPostgresStore(store)
            .build())
        return flagship
    }

    /// A request: the visitor built, fetched, one flag read; then everything it sent delivered.
    @discardableResult
    private func request(_ visitorId: String, hasConsented: Bool = true, on flagship: Flagship) async throws -> FSVisitor {
        let visitor = await flagship.newVisitor(visitorId: visitorId, hasConsented: hasConsented, instanceType: .NEW_INSTANCE).buildAsync()
        if hasConsented {
            try await visitor.fetchFlags()
            _ = visitor.getFlag(key: "btnColor").value(defaultValue: "none")
        }
        await flagship.waitUntilTrackingIsIdle()
        return visitor
    }

    /// Whether the server received `expected` (consent hits, activates) since the last check, once
    /// both instances are idle: either instance's sender may deliver a row of the shared store,
    /// so what one committed is awaited until it arrives (10 s at most), then nothing more may.
    private func expect(_ expected: [Int], from server: LocalFlagshipServer, instances: [Flagship],
                        _ message: String = "", file: StaticString = #filePath, line: UInt = #line) async throws {
        func counts() -> [Int] { [server.hits.filter { $0["ea"] == "fs_consent" }.count, server.activates.count] }
        let deadline = ContinuousClock.now + .seconds(10)
        while counts() != expected, zip(counts(), expected).allSatisfy({ $0 <= $1 }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        for instance in instances { await instance.waitUntilTrackingIsIdle() }
        XCTAssertEqual(counts(), expected, message, file: file, line: line)
        server.clearReceived()
    }

    func testAnotherInstanceDoesNotReportAgainWhatOneReportedAndReportsAgainAfterAnErasure() async throws {
        let postgres = try postgres()
        let database = try postgres.createDatabase()
        let server = try startedFleetServer()
        defer { server.stop() }
        let stores = (0..<2).map { _ in store(postgres, database: database) }
        for store in stores { try await store.prepare() }
        let first = instance(0, store: stores[0], server: server)
        let second = instance(1, store: stores[1], server: server)

        try await request("shared-visitor", on: first)
        await first.waitUntilTrackingIsIdle()
        try await expect([1, 1], from: server, instances: [first, second], "a new visitor: its consent and its exposure")

        try await request("shared-visitor", on: second)
        try await expect([0, 0], from: server, instances: [first, second], "the other instance reads what was reported from the shared store")

        // Withdrawn on the second instance: the record goes with the rest. The first, which
        // served the visitor a moment ago, still has its document in memory for the hot
        // visitors' lifetime (2 s), then reads the store and sees the erasure.
        try await request("shared-visitor", hasConsented: false, on: second)
        try await expect([1, 0], from: server, instances: [first, second])
        try await request("shared-visitor", on: first)
        try await expect([0, 0], from: server, instances: [first, second], "within the bound: what the first instance saw last")
        clockOffset.withLock { $0 += 2 }
        try await request("shared-visitor", on: first)
        try await expect([1, 1], from: server, instances: [first, second], "past the bound: the erasure is seen, the visitor consented again is reported again")

        await first.close()
        await second.close()
    }
}
#endif
