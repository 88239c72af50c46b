import CSQLite
import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// `sendHit(_:inTransactionOn:)`: a hit written through the app's own SQLite connection to the
/// SDK's store file, in the app's transaction, commits or rolls back with the app's rows; the
/// SDK's sender delivers a committed one at its next batch interval, once.
final class HitsInTransactionTests: TrackingTestCase {
    private var storeFile: URL {
        StoreLocation.databaseFile(envId: Self.envId, in: directory.url)
    }

    /// The app's connection: the SDK's file opened read-write, with a busy timeout, and an
    /// `orders` table of the app's own beside the SDK's.
    private func openAppConnection(_ file: URL? = nil, flags: Int32 = SQLITE_OPEN_READWRITE) throws -> OpaquePointer {
        var db: OpaquePointer?
        let path = (file ?? storeFile).path
        guard sqlite3_open_v2(path, &db, flags, nil) == SQLITE_OK, let db else {
            sqlite3_close(db)
            throw SQLiteFailure(description: "cannot open \(path)")
        }
        sqlite3_busy_timeout(db, 5_000)
        addTeardownBlock { sqlite3_close_v2(db) }
        if flags & SQLITE_OPEN_READWRITE != 0 {
            try execute(db, "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, total REAL NOT NULL)")
        }
        return db
    }

    private func execute(_ db: OpaquePointer, _ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw SQLiteFailure(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    private func count(_ db: OpaquePointer, _ sql: String) throws -> Int {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw SQLiteFailure(description: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw SQLiteFailure(description: "\(sql): no row") }
        return Int(sqlite3_column_int64(statement, 0))
    }

    private struct SQLiteFailure: Error, CustomStringConvertible {
        let description: String
    }

    private static func order(_ id: String) -> FSTransaction {
        let transaction = FSTransaction(transactionId: id, affiliation: "checkout")
        transaction.revenue = 42.5
        return transaction
    }

    /// The transaction ids of the TRANSACTION hits the server received, in arrival order.
    private var deliveredOrders: [String] {
        server.hits.filter { $0["t"]?.stringValue == "TRANSACTION" }.compactMap { $0["tid"]?.stringValue }
    }

    private var storedTransactionHits: Int {
        get throws { try storedHits().filter { $0.type == "TRANSACTION" }.count }
    }

    /// The next batch interval's round, which looks in the table for rows it did not write.
    private func nextInterval() async throws {
        try await waitForSleepers(1)
        clock.advance(by: 10)
    }

    /// The SDK started (a 10 s batch interval), a visitor `buyer`, and the app's connection.
    private func openShop() throws -> (visitor: FSVisitor, db: OpaquePointer) {
        start(trackingBuilder(interval: 10))
        return (makeVisitor("buyer"), try openAppConnection())
    }

    /// The order `id` and its hit in one transaction, ended with `end` (COMMIT or ROLLBACK).
    private func placeOrder(_ id: String, by visitor: FSVisitor, on db: OpaquePointer, ending end: String) throws {
        try execute(db, "BEGIN IMMEDIATE")
        try execute(db, "INSERT INTO orders (id, total) VALUES ('\(id)', 42.5)")
        try visitor.sendHit(Self.order(id), inTransactionOn: db)
        try execute(db, end)
    }

    func testACommittedOrdersHitIsDeliveredOnceAtTheNextBatchInterval() async throws {
        let (visitor, db) = try openShop()

        try placeOrder("o-1", by: visitor, on: db, ending: "COMMIT")

        XCTAssertEqual(try storedTransactionHits, 1, "committed with the order")
        try await nextInterval()
        try await waitUntil("the hit is delivered") { deliveredOrders == ["o-1"] }
        try await waitUntil("its row is deleted once delivered") { try storedTransactionHits == 0 }
        let hit = try XCTUnwrap(server.hits.first { $0["t"]?.stringValue == "TRANSACTION" })
        XCTAssertEqual(hit["vid"]?.stringValue, "buyer")
        XCTAssertEqual(hit["ta"]?.stringValue, "checkout")
        XCTAssertEqual(hit["tr"]?.doubleValue, 42.5)
        XCTAssertEqual(hit["cid"]?.stringValue, Self.envId)
        try await nextInterval()
        await flagship.close()
        XCTAssertEqual(deliveredOrders, ["o-1"], "once")
        XCTAssertEqual(try count(db, "SELECT count(*) FROM orders"), 1)
    }

    /// `close()` sends what waits, the rows of the app's transactions included, with no interval
    /// in between.
    func testAnOrderCommittedJustBeforeCloseIsSentByTheLastRound() async throws {
        let (visitor, db) = try openShop()
        await flagship.waitUntilTrackingIsIdle()

        try placeOrder("o-1", by: visitor, on: db, ending: "COMMIT")
        await flagship.close()

        XCTAssertEqual(deliveredOrders, ["o-1"])
        XCTAssertEqual(try storedTransactionHits, 0)
    }

    func testARolledBackOrderSendsNothing() async throws {
        let (visitor, db) = try openShop()

        try placeOrder("o-1", by: visitor, on: db, ending: "ROLLBACK")

        XCTAssertEqual(try storedTransactionHits, 0)
        try await nextInterval()
        await flagship.waitUntilTrackingIsIdle()
        await flagship.close()
        XCTAssertEqual(deliveredOrders, [])
        XCTAssertEqual(try count(db, "SELECT count(*) FROM orders"), 0)
    }

    /// The hit is written first, then the app's own insert breaks its primary key: the app rolls
    /// back, and the hit goes with its order.
    func testAnOrderRefusedByTheAppsOwnConstraintLeavesNoHit() async throws {
        let (visitor, db) = try openShop()
        try execute(db, "INSERT INTO orders (id, total) VALUES ('o-1', 10)")

        try execute(db, "BEGIN IMMEDIATE")
        try visitor.sendHit(Self.order("o-1"), inTransactionOn: db)
        XCTAssertThrowsError(try execute(db, "INSERT INTO orders (id, total) VALUES ('o-1', 42.5)")) { error in
            XCTAssertTrue("\(error)".contains("UNIQUE constraint failed"), "\(error)")
        }
        try execute(db, "ROLLBACK")

        XCTAssertEqual(try storedTransactionHits, 0)
        try await nextInterval()
        await flagship.close()
        XCTAssertEqual(deliveredOrders, [])
        XCTAssertEqual(try count(db, "SELECT total FROM orders WHERE id = 'o-1'"), 10, "the app's first order, untouched")
    }

    /// Refused as `sendHit` refuses it, before anything is written: the app's transaction holds
    /// only the app's rows, and can still commit.
    func testARefusedHitThrowsBeforeAnythingIsWritten() async throws {
        start(trackingBuilder(interval: 10))
        let db = try openAppConnection()
        try execute(db, "BEGIN IMMEDIATE")
        try execute(db, "INSERT INTO orders (id, total) VALUES ('o-1', 42.5)")
        let changes = sqlite3_total_changes64(db)

        let buyer = makeVisitor("buyer")
        XCTAssertThrowsError(try buyer.sendHit(FSTransaction(transactionId: "", affiliation: "checkout"), inTransactionOn: db)) { error in
            XCTAssertEqual(error as? FlagshipError, .invalidHit(.missingField(hit: "TRANSACTION", field: "tid")))
        }
        let withdrawn = await flagship.newVisitor(visitorId: "shy", hasConsented: false, instanceType: .NEW_INSTANCE).buildAsync()
        XCTAssertThrowsError(try withdrawn.sendHit(Self.order("o-2"), inTransactionOn: db)) { error in
            XCTAssertEqual(error as? FlagshipError, .consentNotGiven(visitorId: "shy"))
        }

        XCTAssertEqual(sqlite3_total_changes64(db), changes, "nothing written")
        try execute(db, "COMMIT")
        XCTAssertEqual(try storedTransactionHits, 0)
        XCTAssertEqual(try count(db, "SELECT count(*) FROM orders"), 1)
    }

    func testAConnectionWithoutATransactionOnAnotherFileOrReadOnlyIsRefused() async throws {
        start(trackingBuilder(interval: 10))
        let visitor = makeVisitor("buyer")

        let autocommit = try openAppConnection()
        assertNotWritten(.notInTransaction) { try visitor.sendHit(Self.order("o-1"), inTransactionOn: autocommit) }

        let other = try openAppConnection(directory.url.appendingPathComponent("shop.sqlite"), flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        try execute(other, "BEGIN IMMEDIATE")
        assertNotWritten(.notTheStore) { try visitor.sendHit(Self.order("o-2"), inTransactionOn: other) }
        try execute(other, "ROLLBACK")

        let reader = try openAppConnection(flags: SQLITE_OPEN_READONLY)
        try execute(reader, "BEGIN")
        assertNotWritten(.readOnly) { try visitor.sendHit(Self.order("o-3"), inTransactionOn: reader) }
        try execute(reader, "ROLLBACK")

        XCTAssertEqual(try storedTransactionHits, 0)
    }

    /// The SDK's own store is busy with its writer: the app's transaction holds the write lock,
    /// and a hit sent meanwhile with `sendHit` waits in memory, then is written after the commit.
    func testTheSDKsOwnHitsWaitForTheAppsTransactionAndLoseNothing() async throws {
        let (visitor, db) = try openShop()

        try execute(db, "BEGIN IMMEDIATE")
        try visitor.sendHit(Self.order("o-1"), inTransactionOn: db)
        fireAndForget(visitor, click(1))
        try await Task.sleep(for: .milliseconds(50))
        try execute(db, "COMMIT")

        try await nextInterval()
        try await waitUntil("both are delivered") { deliveredOrders == ["o-1"] && deliveredClickLabels() == ["hit-1"] }
        await flagship.close()
    }

    /// Consent withdrawn while the app's transaction holds the file's write lock past the busy
    /// timeout (5 s): the erasure fails, is recorded, and runs at the first interval after the
    /// app commits. The order's hit, committed after the withdrawal, is never sent; the visitor's
    /// row and decisions go.
    func testAnErasureThatFindsTheFileLockedRunsOnceTheAppCommitsAndTheVisitorsHitsAreNotSent() async throws {
        let (visitor, db) = try openShop()
        try await visitor.fetchFlags()
        await flagship.waitUntilTrackingIsIdle()
        try await waitUntil("the visitor's row is written") { try count(db, "SELECT count(*) FROM visitors WHERE visitor_id = 'buyer'") == 1 }

        try execute(db, "BEGIN IMMEDIATE")
        try execute(db, "INSERT INTO orders (id, total) VALUES ('o-1', 42.5)")
        try visitor.sendHit(Self.order("o-1"), inTransactionOn: db)
        visitor.setConsent(hasConsented: false)
        try await waitUntil("the erasure found the file locked", timeout: 20) {
            log.allText.contains("the erasure is tried again at each interval until it runs")
        }
        try execute(db, "COMMIT")
        XCTAssertEqual(try storedTransactionHits, 1, "committed after the withdrawal")

        try await nextInterval()
        try await waitUntil("the erasure ran") { log.allText.contains("A visitor's data was deleted after consent was withdrawn") }
        XCTAssertEqual(try storedTransactionHits, 0)
        XCTAssertEqual(try count(db, "SELECT count(*) FROM visitors WHERE visitor_id = 'buyer'"), 0)
        XCTAssertEqual(try count(db, "SELECT count(*) FROM decisions WHERE visitor_id = 'buyer'"), 0)
        try await nextInterval()
        await flagship.close()
        XCTAssertEqual(deliveredOrders, [], "the order's hit was never sent")
        XCTAssertTrue(server.hits.contains { $0["ea"]?.stringValue == "fs_consent" && $0["el"]?.stringValue?.hasSuffix(":false") == true },
                      "the withdrawal itself is told")
    }

    /// At most `erasuresWaitingLimit` failed erasures wait to be tried again: past it one is
    /// logged and counted as abandoned, and the ones kept still run once the lock is gone.
    func testFailedErasuresPastTheLimitAreCountedAsAbandoned() async throws {
        start(trackingBuilder(interval: 10).withTrackingSettings { $0.erasuresWaitingLimit = 1 })
        let (first, second) = (makeVisitor("first"), makeVisitor("second"))
        await flagship.waitUntilTrackingIsIdle()
        let db = try openAppConnection()

        try execute(db, "BEGIN IMMEDIATE")
        first.setConsent(hasConsented: false)
        second.setConsent(hasConsented: false)
        try await waitUntil("both erasures found the file locked", timeout: 20) {
            log.allText.contains("erasures already wait to be tried again: this one is not")
        }
        try execute(db, "COMMIT")
        let reported = await flagship.trackingStatistics()
        let statistics = try XCTUnwrap(reported)
        XCTAssertEqual(statistics.erasuresWaiting, 1)
        XCTAssertEqual(statistics.erasuresAbandoned, 1)

        try await nextInterval()
        try await waitUntil("the kept erasure ran") { log.allText.contains("A visitor's data was deleted after consent was withdrawn") }
        let after = await flagship.trackingStatistics()
        XCTAssertEqual(after?.erasuresWaiting, 0)
        XCTAssertEqual(after?.erasuresAbandoned, 1)
        await flagship.close()
    }

    /// A TEMP table named `hits` on the app's connection (searched before `main` for an
    /// unqualified name) does not take the SDK's hit: every statement names its schema.
    func testATempTableNamedHitsOnTheAppsConnectionDoesNotTakeTheHit() async throws {
        let (visitor, db) = try openShop()
        try execute(db, "CREATE TEMP TABLE hits (id TEXT PRIMARY KEY, visitor_id TEXT, type TEXT, is_consent INTEGER, document TEXT, created_at INTEGER, attempts INTEGER, file_version TEXT, decided_at INTEGER, lease_owner TEXT, lease_until INTEGER)")
        try execute(db, "CREATE TEMP TABLE hits_total (id INTEGER PRIMARY KEY, total INTEGER)")

        try placeOrder("o-1", by: visitor, on: db, ending: "COMMIT")

        XCTAssertEqual(try count(db, "SELECT count(*) FROM temp.hits"), 0)
        XCTAssertEqual(try storedTransactionHits, 1, "in the store's table")
        try await nextInterval()
        try await waitUntil("the hit is delivered") { deliveredOrders == ["o-1"] }
        await flagship.close()
    }

    /// A cap of 40: backpressure from 20 hits waiting. The events endpoint answers, slowly: a
    /// hit in the app's transaction is refused at once, nothing written, and evicts no hit taken.
    func testUnderBackpressureAHitInTheAppsTransactionIsRefusedAtOnceAndEvictsNothing() async throws {
        start(trackingBuilder(maxCachedHits: 40).withTrackingSettings { $0.backpressureWait = 0 })
        let visitor = makeVisitor("buyer")
        let db = try openAppConnection()
        try await visitor.sendHit(click(0))
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()
        let slow = server.injectFault(.latency(.seconds(3)), on: .events)
        for number in 1...20 { try await visitor.sendHit(click(number)) }
        XCTAssertEqual(flagship.health.status, .overloaded)

        for number in 1...30 {
            try execute(db, "BEGIN IMMEDIATE")
            try execute(db, "INSERT INTO orders (id, total) VALUES ('o-\(number)', 42.5)")
            XCTAssertEqual(refusal { try visitor.sendHit(Self.order("o-\(number)"), inTransactionOn: db) }, 0,
                           "refused at once: the app's write lock is not held to wait")
            try execute(db, "COMMIT")
        }

        server.removeFault(slow)
        await flagship.waitUntilTrackingIsIdle()
        let reported = await flagship.trackingStatistics()
        let statistics = try XCTUnwrap(reported)
        XCTAssertEqual(statistics.evicted, 0)
        XCTAssertEqual(statistics.lost, 0)
        XCTAssertEqual(statistics.refusedOverloaded, 30)
        XCTAssertEqual(deliveredClickLabels(), labels(0...20), "every hit taken was delivered")
        XCTAssertEqual(deliveredOrders, [])
        XCTAssertEqual(try count(db, "SELECT count(*) FROM orders"), 30, "the app committed its orders without the hits")
        await flagship.close()
    }

    /// Rows other transactions committed, which this instance has not counted yet, refuse the hit
    /// too: the app's view of the table is read in its transaction.
    func testHitsCommittedByEarlierTransactionsCountTowardBackpressure() async throws {
        start(trackingBuilder(interval: 10, maxCachedHits: 40))
        let visitor = makeVisitor("buyer")
        let db = try openAppConnection()
        try await visitor.sendHit(click(0))
        try await nextInterval()
        try await waitUntil("a batch is accepted: the endpoint answers") { deliveredClickLabels() == ["hit-0"] }
        await flagship.waitUntilTrackingIsIdle()

        var refused = 0
        for number in 1...25 {
            try execute(db, "BEGIN IMMEDIATE")
            if refusal({ try visitor.sendHit(Self.order("o-\(number)"), inTransactionOn: db) }) != nil { refused += 1 }
            try execute(db, "COMMIT")
        }

        XCTAssertEqual(refused, 5, "20 waiting (half the cap of 40): the 21st and later are refused")
        XCTAssertEqual(try storedTransactionHits, 20)
        try await nextInterval()
        try await waitUntil("the 20 taken are delivered") { deliveredOrders.count == 20 }
        let reported = await flagship.trackingStatistics()
        let statistics = try XCTUnwrap(reported)
        XCTAssertEqual(statistics.evicted, 0)
        await flagship.close()
    }

    /// How long `body` says it waited before refusing with `overloaded`; `nil` when it did not.
    private func refusal(_ body: () throws -> Void) -> TimeInterval? {
        do {
            try body()
            return nil
        } catch {
            guard let error = error as? FlagshipError, error.code == .overloaded else { return nil }
            return error.waited
        }
    }

    private func assertNotWritten(_ code: FSCacheError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let thrown = error as? FlagshipError, thrown.code == .hitNotWritten, let reason = thrown.cacheError else {
                return XCTFail("expected hitNotWritten(\(code)), got \(error)", file: file, line: line)
            }
            XCTAssertEqual(reason.code, code, "\(reason)", file: file, line: line)
        }
    }
}
