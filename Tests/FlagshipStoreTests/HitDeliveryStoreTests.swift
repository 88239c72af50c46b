import Foundation
import XCTest

import FlagshipStore

/// The store operations of the tracking manager's sending cycle: they compose into one
/// transaction, claims keep two senders apart, and nested access fails instead of hanging.
final class HitDeliveryStoreTests: StoreTestCase {
    private var store: FlagshipDatabase!
    private var hits: HitRecordStore { store.hits }

    override func setUpWithError() throws {
        try super.setUpWithError()
        store = try openStore()
    }

    private func sample(_ count: Int, type: String = "EVENT") -> [HitRecord] {
        (1...count).map { HitRecord.sample(String(format: "%@-%03d", type, $0), type: type, createdAt: 1_000 + Int64($0)) }
    }

    // MARK: Composing

    func testDeliveredFailedAndEvictedAreRecordedInOneTransaction() throws {
        try hits.insert(sample(5))

        try store.database.write { db in
            try hits.delete(ids: ["visitor-1:EVENT-001"], in: db)
            try hits.recordFailedAttempt(ids: ["visitor-1:EVENT-002"], nextAttemptAt: 9_000, in: db)
            try hits.evictOldest(beyond: 3, in: db)
        }

        let left = try hits.all()
        XCTAssertEqual(left.map(\.id), ["visitor-1:EVENT-003", "visitor-1:EVENT-004", "visitor-1:EVENT-005"])
        XCTAssertEqual(try hits.count(), 3)
    }

    func testAFailureInsideTheTransactionUndoesEveryStepOfIt() throws {
        try hits.insert(sample(3))
        struct Interrupted: Error {}

        XCTAssertThrowsError(try store.database.write { db in
            try hits.delete(ids: ["visitor-1:EVENT-001"], in: db)
            try hits.recordFailedAttempt(ids: ["visitor-1:EVENT-002"], nextAttemptAt: 9_000, in: db)
            throw Interrupted()
        })

        XCTAssertEqual(try hits.all().map(\.attempts), [0, 0, 0])
        XCTAssertEqual(try hits.count(), 3)
    }

    func testASavepointUndoesItsOwnStepsAndLetsTheTransactionGoOn() throws {
        struct Refused: Error {}
        try store.database.write { db in
            try hits.insert([.sample("kept", createdAt: 1)], in: db)
            XCTAssertThrowsError(try db.savepoint { db in
                try hits.insert([.sample("undone", createdAt: 2)], in: db)
                throw Refused()
            })
            _ = try db.savepoint { db in try hits.insert([.sample("nested", createdAt: 3)], in: db) }
        }

        XCTAssertEqual(try hits.allIds(), ["visitor-1:kept", "visitor-1:nested"])
        XCTAssertEqual(try hits.count(), 2, "the trigger-kept count followed the savepoint's undo")
    }

    func testANestedCallOnTheSameThreadFailsAtOnceInsteadOfDeadlocking() throws {
        XCTAssertThrowsError(try store.database.write { _ in try hits.count() }) { error in
            XCTAssertEqual(error as? StoreError, .reentrantAccess(path: store.database.path))
            XCTAssertTrue("\(error)".contains("not reentrant"))
        }
        XCTAssertEqual(try hits.count(), 0, "the database still works")
    }

    func testTheCountIsKeptThroughInsertsReplacesAndDeletesAndHealsAtOpenAfterAHandEdit() throws {
        try hits.insert(sample(4))
        let replaced = HitRecord.sample("EVENT-001", createdAt: 5)
        try hits.insert([replaced, .sample("new", createdAt: 6)])
        XCTAssertEqual(try hits.count(), 5, "a replaced row is not counted twice")
        XCTAssertEqual(try hits.all().first { $0.id == replaced.id }?.createdAt, 5, "and it was replaced")
        try hits.delete(ids: ["visitor-1:EVENT-002", "visitor-1:absent"])
        try hits.deleteHits(createdBefore: 1_004)
        XCTAssertEqual(try hits.count(), 1)
        XCTAssertEqual(try store.database.integer("SELECT count(*) FROM hits"), 1)

        // As the sqlite3 shell would: rows added behind the store's back.
        try store.database.write { db in
            try db.execute("INSERT INTO hits (id, visitor_id, type, document, created_at) VALUES ('x:1', 'x', 'EVENT', '{}', 1), ('x:2', 'x', 'EVENT', '{}', 2)")
        }
        XCTAssertEqual(try hits.count(), 1, "out of step until the next open")
        store.close()
        store = try openStore()
        XCTAssertEqual(try hits.count(), 3, "counted again at open")
    }

    // MARK: Claiming

    func testAClaimTakesTheOldestOfItsEndpointInInsertionOrder() throws {
        let sameMillisecond = ["z", "a", "m"].map { HitRecord.sample($0, createdAt: 7) }
        try hits.insert(sample(2, type: "ACTIVATE") + sameMillisecond + [.sample("older", createdAt: 3)])

        let events = try store.database.write { try hits.claim(.events, owner: "A", now: 100, leaseUntil: 200, limit: 3, in: $0) }
        let activates = try store.database.write { try hits.claim(.activate, owner: "A", now: 100, leaseUntil: 200, limit: 10, in: $0) }

        XCTAssertEqual(events.map(\.id), ["visitor-1:older", "visitor-1:z", "visitor-1:a"])
        XCTAssertEqual(activates.map(\.id), ["visitor-1:ACTIVATE-001", "visitor-1:ACTIVATE-002"])
        XCTAssertEqual(Set(events.map(\.leaseOwner)), ["A"])
        XCTAssertEqual(Set(events.map(\.leaseUntil)), [200])
    }

    func testTwoSendersNeverClaimTheSameRowUntilTheClaimLapses() throws {
        try hits.insert(sample(6))

        let first = try store.database.write { try hits.claim(.events, owner: "A", now: 100, leaseUntil: 200, limit: 4, in: $0) }
        let second = try store.database.write { try hits.claim(.events, owner: "B", now: 150, leaseUntil: 250, limit: 10, in: $0) }
        let afterLapse = try store.database.write { try hits.claim(.events, owner: "B", now: 200, leaseUntil: 300, limit: 10, in: $0) }

        XCTAssertEqual(first.count, 4)
        XCTAssertEqual(Set(first.map(\.id)).intersection(second.map(\.id)), [], "no row in both claims")
        XCTAssertEqual(second.count, 2)
        XCTAssertEqual(afterLapse.map(\.id), first.map(\.id), "A's claim lapsed at 200 (a sender that died) and is taken over; B's own rows are in flight")
    }

    func testClaimsAreExclusiveAcrossConnectionsToOneFile() throws {
        try hits.insert(sample(200))
        let other = try openStore()
        defer { other.close() }
        let claimed = Locked<[String]>([])
        let stores: [FlagshipDatabase] = [store, other]

        onThreads(2) { index in
            let database = stores[index]
            while true {
                let page = (try? database.database.write {
                    try database.hits.claim(.events, owner: "owner-\(index)", now: 100, leaseUntil: 10_000, limit: 7, in: $0)
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
        try hits.insert(sample(1))
        _ = try store.database.write { try hits.claim(.events, owner: "A", now: 100, leaseUntil: 200, limit: 1, in: $0) }

        try hits.recordFailedAttempt(ids: ["visitor-1:EVENT-001"], nextAttemptAt: 1_100)

        let row = try XCTUnwrap(try hits.all().first)
        XCTAssertEqual(row.attempts, 1)
        XCTAssertEqual(row.nextAttemptAt, 1_100)
        XCTAssertNil(row.leaseOwner)
        XCTAssertNil(row.leaseUntil)
    }

    func testReleasingClaimsTouchesOnlyTheOwnersRows() throws {
        try hits.insert(sample(4))
        _ = try store.database.write { try hits.claim(.events, owner: "A", now: 100, leaseUntil: 200, limit: 2, in: $0) }
        _ = try store.database.write { try hits.claim(.events, owner: "B", now: 100, leaseUntil: 200, limit: 2, in: $0) }

        let released = try store.database.write { try hits.releaseClaims(owner: "A", in: $0) }

        XCTAssertEqual(released, 2)
        XCTAssertEqual(try hits.all().map(\.leaseOwner), [nil, nil, "B", "B"])
    }

    func testRowsSetAsideAreNeverClaimedButExpireLikeAnyHit() throws {
        try hits.insert(sample(2))
        try store.database.write { try hits.setAside(ids: ["visitor-1:EVENT-001"], reason: "unreadable document", in: $0) }

        let claimed = try store.database.write { try hits.claim(.events, owner: "A", now: .max - 1, leaseUntil: .max, limit: 10, in: $0) }

        XCTAssertEqual(claimed.map(\.id), ["visitor-1:EVENT-002"])
        XCTAssertEqual(try hits.deleteHits(createdBefore: 2_000), 2)
    }
}
