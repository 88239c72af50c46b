import Foundation
import XCTest

import FlagshipStore

/// The store operations of the tracking manager's sending cycle: they compose into one
/// transaction, claims keep two senders apart, and nested access fails instead of hanging.
final class HitDeliveryStoreTests: StoreTestCase {
    private var store: FlagshipDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        store = try openStore()
    }

    private func sample(_ count: Int, type: String = "EVENT") -> [HitRecord] {
        (1...count).map { HitRecord.sample(String(format: "%@-%03d", type, $0), type: type, createdAt: 1_000 + Int64($0)) }
    }

    // MARK: Composing

    func testDeliveredFailedAndEvictedAreRecordedInOneTransaction() throws {
        try store.write { try $0.hits.insert(sample(5)) }

        try store.write { db in
            try db.hits.delete(ids: ["visitor-1:EVENT-001"])
            try db.hits.recordFailedAttempt(ids: ["visitor-1:EVENT-002"], nextAttemptAt: 9_000)
            try db.hits.evictOldest(beyond: 3)
        }

        let left = try store.read { try $0.hits.all() }
        XCTAssertEqual(left.map(\.id), ["visitor-1:EVENT-003", "visitor-1:EVENT-004", "visitor-1:EVENT-005"])
        XCTAssertEqual(try store.read { try $0.hits.count() }, 3)
    }

    func testTheRecordStoresOfEveryTableRunInTheTransactionOfTheirConnectionAndOpenNoneOfTheirOwn() throws {
        let statements = Locked<[String]>([])
        try store.database.traceStatements { statement in statements.withLock { $0.append(statement) } }
        defer { try? store.database.traceStatements(nil) }

        try store.write { db in
            try db.visitors.save(.sample("visitor-1"))
            try db.hits.insert(sample(2), capacity: 10)
            try db.bucketing.save(BucketingRecord(envId: "env-1", document: "{}", lastModified: nil, downloadedAt: 1))
            try db.state.setValue("1", forKey: "first_init", now: 1)
        }
        let read = try store.read { db in
            (try db.visitors.count(), try db.hits.count(), try db.bucketing.summaries().count, try db.state.value(forKey: "first_init"))
        }

        XCTAssertEqual(read.0, 1)
        XCTAssertEqual(read.1, 2)
        XCTAssertEqual(read.2, 1)
        XCTAssertEqual(read.3, "1")
        let boundaries = statements.withLock { $0 }.filter { statement in
            ["BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"].contains { statement.hasPrefix($0) }
        }
        XCTAssertEqual(boundaries, ["BEGIN IMMEDIATE", "COMMIT", "BEGIN DEFERRED", "COMMIT"])
    }

    func testAFailureInsideTheTransactionUndoesEveryStepOfIt() throws {
        try store.write { try $0.hits.insert(sample(3)) }
        struct Interrupted: Error {}

        XCTAssertThrowsError(try store.write { db in
            try db.hits.delete(ids: ["visitor-1:EVENT-001"])
            try db.hits.recordFailedAttempt(ids: ["visitor-1:EVENT-002"], nextAttemptAt: 9_000)
            throw Interrupted()
        })

        XCTAssertEqual(try store.read { try $0.hits.all() }.map(\.attempts), [0, 0, 0])
        XCTAssertEqual(try store.read { try $0.hits.count() }, 3)
    }

    func testASavepointUndoesItsOwnStepsAndLetsTheTransactionGoOn() throws {
        struct Refused: Error {}
        try store.write { db in
            try db.hits.insert([.sample("kept", createdAt: 1)])
            XCTAssertThrowsError(try db.savepoint { db in
                try db.hits.insert([.sample("undone", createdAt: 2)])
                throw Refused()
            })
            _ = try db.savepoint { db in try db.hits.insert([.sample("nested", createdAt: 3)]) }
        }

        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:kept", "visitor-1:nested"])
        XCTAssertEqual(try store.read { try $0.hits.count() }, 2, "the trigger-kept count followed the savepoint's undo")
    }

    func testANestedCallOnTheSameThreadFailsAtOnceInsteadOfDeadlocking() throws {
        XCTAssertThrowsError(try store.write { _ in try store.read { try $0.hits.count() } }) { error in
            XCTAssertEqual(error as? StoreError, .reentrantAccess(path: store.database.path))
            XCTAssertTrue("\(error)".contains("not reentrant"))
        }
        XCTAssertEqual(try store.read { try $0.hits.count() }, 0, "the database still works")
    }

    func testTheCountIsKeptThroughInsertsReplacesAndDeletesAndHealsAtOpenAfterAHandEdit() throws {
        try store.write { try $0.hits.insert(sample(4)) }
        let replaced = HitRecord.sample("EVENT-001", createdAt: 5)
        try store.write { try $0.hits.insert([replaced, .sample("new", createdAt: 6)]) }
        XCTAssertEqual(try store.read { try $0.hits.count() }, 5, "a replaced row is not counted twice")
        XCTAssertEqual(try store.read { try $0.hits.all() }.first { $0.id == replaced.id }?.createdAt, 5, "and it was replaced")
        try store.write { try $0.hits.delete(ids: ["visitor-1:EVENT-002", "visitor-1:absent"]) }
        try store.write { try $0.hits.deleteHits(createdBefore: 1_004) }
        XCTAssertEqual(try store.read { try $0.hits.count() }, 1)
        XCTAssertEqual(try store.database.integer("SELECT count(*) FROM hits"), 1)

        // As the sqlite3 shell would: rows added behind the store's back.
        try store.write { db in
            try db.execute("INSERT INTO hits (id, visitor_id, type, document, created_at) VALUES ('x:1', 'x', 'EVENT', '{}', 1), ('x:2', 'x', 'EVENT', '{}', 2)")
        }
        XCTAssertEqual(try store.read { try $0.hits.count() }, 1, "out of step until the next open")
        store.close()
        store = try openStore()
        XCTAssertEqual(try store.read { try $0.hits.count() }, 3, "counted again at open")
    }

    // MARK: Claiming

    func testAClaimTakesTheOldestOfItsEndpointInInsertionOrder() throws {
        let sameMillisecond = ["z", "a", "m"].map { HitRecord.sample($0, createdAt: 7) }
        try store.write { try $0.hits.insert(sample(2, type: "ACTIVATE") + sameMillisecond + [.sample("older", createdAt: 3)]) }

        let events = try store.write { try $0.hits.claim(.events, owner: "A", now: 100, leaseUntil: 200, limit: 3) }
        let activates = try store.write { try $0.hits.claim(.activate, owner: "A", now: 100, leaseUntil: 200, limit: 10) }

        XCTAssertEqual(events.map(\.id), ["visitor-1:older", "visitor-1:z", "visitor-1:a"])
        XCTAssertEqual(activates.map(\.id), ["visitor-1:ACTIVATE-001", "visitor-1:ACTIVATE-002"])
        XCTAssertEqual(Set(events.map(\.leaseOwner)), ["A"])
        XCTAssertEqual(Set(events.map(\.leaseUntil)), [200])
    }

    func testTwoSendersNeverClaimTheSameRowUntilTheClaimLapses() throws {
        try store.write { try $0.hits.insert(sample(6)) }

        let first = try store.write { try $0.hits.claim(.events, owner: "A", now: 100, leaseUntil: 200, limit: 4) }
        let second = try store.write { try $0.hits.claim(.events, owner: "B", now: 150, leaseUntil: 250, limit: 10) }
        let afterLapse = try store.write { try $0.hits.claim(.events, owner: "B", now: 200, leaseUntil: 300, limit: 10) }

        XCTAssertEqual(first.count, 4)
        XCTAssertEqual(Set(first.map(\.id)).intersection(second.map(\.id)), [], "no row in both claims")
        XCTAssertEqual(second.count, 2)
        XCTAssertEqual(afterLapse.map(\.id), first.map(\.id), "A's claim lapsed at 200 (a sender that died) and is taken over; B's own rows are in flight")
    }

    func testClaimsAreExclusiveAcrossConnectionsToOneFile() throws {
        try store.write { try $0.hits.insert(sample(200)) }
        let other = try openStore()
        defer { other.close() }
        let claimed = Locked<[String]>([])
        let stores: [FlagshipDatabase] = [store, other]

        onThreads(2) { index in
            let database = stores[index]
            while true {
                let page = (try? database.write {
                    try $0.hits.claim(.events, owner: "owner-\(index)", now: 100, leaseUntil: 10_000, limit: 7)
                }) ?? []
                if page.isEmpty { return }
                claimed.withLock { $0 += page.map(\.id) }
            }
        }

        let ids = claimed.withLock { $0 }
        XCTAssertEqual(ids.count, 200)
        XCTAssertEqual(Set(ids).count, 200, "every row claimed exactly once")
    }

    func testAFailedAttemptIsCountedWithItsNextTimeAndEndsTheClaim() throws {
        try store.write { try $0.hits.insert(sample(1)) }
        _ = try store.write { try $0.hits.claim(.events, owner: "A", now: 100, leaseUntil: 200, limit: 1) }

        try store.write { try $0.hits.recordFailedAttempt(ids: ["visitor-1:EVENT-001"], nextAttemptAt: 1_100) }

        let row = try XCTUnwrap(try store.read { try $0.hits.all() }.first)
        XCTAssertEqual(row.attempts, 1)
        XCTAssertEqual(row.nextAttemptAt, 1_100)
        XCTAssertNil(row.leaseOwner)
        XCTAssertNil(row.leaseUntil)
    }

    func testReleasingClaimsTouchesOnlyTheOwnersRows() throws {
        try store.write { try $0.hits.insert(sample(4)) }
        _ = try store.write { try $0.hits.claim(.events, owner: "A", now: 100, leaseUntil: 200, limit: 2) }
        _ = try store.write { try $0.hits.claim(.events, owner: "B", now: 100, leaseUntil: 200, limit: 2) }

        let released = try store.write { try $0.hits.releaseClaims(owner: "A") }

        XCTAssertEqual(released, 2)
        XCTAssertEqual(try store.read { try $0.hits.all() }.map(\.leaseOwner), [nil, nil, "B", "B"])
    }

    func testRowsSetAsideAreNeverClaimedButExpireLikeAnyHit() throws {
        try store.write { try $0.hits.insert(sample(2)) }
        try store.write { try $0.hits.setAside(ids: ["visitor-1:EVENT-001"], reason: "unreadable document") }

        let claimed = try store.write { try $0.hits.claim(.events, owner: "A", now: .max - 1, leaseUntil: .max, limit: 10) }

        XCTAssertEqual(claimed.map(\.id), ["visitor-1:EVENT-002"])
        XCTAssertEqual(try store.write { try $0.hits.deleteHits(createdBefore: 2_000) }, 2)
    }
}
