import Foundation
import XCTest

import FlagshipStore

final class HitRecordStoreTests: StoreTestCase {
    private var store: FlagshipDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        store = try openStore()
    }

    // MARK: - Inserting and reading

    func testInsertingManyHitsInOneCallStoresEveryOneExactly() throws {
        let records = (0..<1_000).map { HitRecord.sample(String(format: "hit-%04d", $0), createdAt: fixedNowMilliseconds + Int64($0)) }

        let outcome = try store.write { try $0.hits.insert(records) }

        XCTAssertEqual(outcome.inserted, 1_000)
        XCTAssertEqual(outcome.evicted, 0)
        XCTAssertEqual(try store.read { try $0.hits.count() }, 1_000)
        XCTAssertEqual(try store.read { try $0.hits.page(limit: 2_000) }, records)
    }

    /// A `created_at` edited into a REAL, a text or a blob: each row listed once, in SQLite's
    /// order (integers, then reals by value among them, then text, then blobs), never a walk
    /// that stops or goes round for ever (issue 33: the listing failed on such a row).
    func testAWalkListsRowsWhoseCreationTimeIsNotAnIntegerOnceEach() throws {
        try store.write { try $0.hits.insert([.sample("a", createdAt: 5), .sample("b", createdAt: 6), .sample("c", createdAt: 7),
                                              .sample("d", createdAt: 8), .sample("e", createdAt: 9)]) }
        try store.write { connection in
            try connection.execute("UPDATE hits SET created_at = 'yesterday' WHERE id = 'visitor-1:a'")
            try connection.execute("UPDATE hits SET created_at = 6.5 WHERE id = 'visitor-1:b'")
            try connection.execute("UPDATE hits SET created_at = x'00ff' WHERE id = 'visitor-1:c'")
            try connection.execute("UPDATE hits SET created_at = 'yesterday' WHERE id = 'visitor-1:d'")
        }

        for pageSize in [1, 2, 10] {
            var pages: [[HitRecord]] = []
            try store.forEachHitPage(pageSize: pageSize) { pages.append($0) }
            XCTAssertEqual(pages.joined().map(\.id), ["visitor-1:b", "visitor-1:e", "visitor-1:a", "visitor-1:d", "visitor-1:c"],
                           "pages of \(pageSize)")
            XCTAssertLessThanOrEqual(pages.count, 5)
        }
        let listed = try store.read { try $0.hits.page(limit: 10) }
        XCTAssertEqual(listed.map(\.createdAt), [7, 9, .min, .min, .min], "a REAL to its nearest integer; text and blob have none")
        XCTAssertEqual(listed.map(\.storedCreatedAt), [.real(6.5), nil, .text("yesterday"), .text("yesterday"), .blob([0x00, 0xFF])])
    }

    func testInsertingNothingChangesNothing() throws {
        let outcome = try store.write { try $0.hits.insert([]) }

        XCTAssertEqual(outcome.inserted, 0)
        XCTAssertEqual(outcome.evicted, 0)
        XCTAssertEqual(try store.read { try $0.hits.count() }, 0)
    }

    func testPageReturnsTheOldestFirstAndTheNextPageStartsAfterTheCursor() throws {
        // Inserted newest first; b and c share a creation time, so the id decides.
        try store.write { try $0.hits.insert([
            .sample("e", createdAt: 30), .sample("d", createdAt: 20), .sample("c", createdAt: 10),
            .sample("b", createdAt: 10), .sample("a", createdAt: 5),
        ]) }

        let first = try store.read { try $0.hits.page(limit: 2) }
        let last = try XCTUnwrap(first.last)
        let second = try store.read { try $0.hits.page(after: HitCursor(createdAt: last.createdAt, id: last.id), limit: 2) }
        let third = try store.read { try $0.hits.page(after: HitCursor(createdAt: 20, id: "visitor-1:d"), limit: 2) }

        XCTAssertEqual(first.map(\.id), ["visitor-1:a", "visitor-1:b"])
        XCTAssertEqual(second.map(\.id), ["visitor-1:c", "visitor-1:d"])
        XCTAssertEqual(third.map(\.id), ["visitor-1:e"])
        XCTAssertEqual(try store.read { try $0.hits.page(after: HitCursor(createdAt: 30, id: "visitor-1:e"), limit: 2) }, [])
    }

    func testForEachHitPageVisitsEveryHitOnceInCreationThenIdOrderIncludingTies() throws {
        // 1,003 hits over 144 distinct times: most pages cut through a run of equal times.
        var records = (0..<1_003).map { HitRecord.sample(String(format: "hit-%04d", $0), createdAt: 1_000 + Int64($0 / 7)) }
        var generator = SplitMix64(seed: 42)
        records.shuffle(using: &generator)
        XCTAssertNotEqual(records.prefix(20).map(\.id), (0..<20).map { String(format: "visitor-1:hit-%04d", $0) }, "inserted out of order")
        try store.write { try $0.hits.insert(records) }

        var pages: [[HitRecord]] = []
        try store.forEachHitPage(pageSize: 10) { pages.append($0) }

        let expected = records.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        XCTAssertEqual(pages.flatMap { $0 }, expected)
        XCTAssertEqual(pages.count, 101)
        XCTAssertEqual(pages.dropLast().map(\.count), Array(repeating: 10, count: 100))
        XCTAssertEqual(pages.last?.count, 3)
    }

    func testForEachHitPageOverAnEmptyTableCallsNothing() throws {
        var calls = 0

        try store.forEachHitPage(pageSize: 10) { _ in calls += 1 }

        XCTAssertEqual(calls, 0)
    }

    // MARK: - Deleting

    func testDeleteByIdsRemovesExactlyThoseIdsAndIgnoresUnknownOnes() throws {
        try store.write { db in try db.hits.insert((0..<6).map { .sample("hit-\($0)", createdAt: Int64($0)) }) }

        let deleted = try store.write { try $0.hits.delete(ids: ["visitor-1:hit-1", "visitor-1:hit-4", "visitor-1:never-stored", "visitor-2:hit-1"]) }

        XCTAssertEqual(deleted, 2)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:hit-0", "visitor-1:hit-2", "visitor-1:hit-3", "visitor-1:hit-5"])
    }

    func testDeleteWithNoIdsDeletesNothing() throws {
        try store.write { try $0.hits.insert([.sample("a")]) }

        XCTAssertEqual(try store.write { try $0.hits.delete(ids: []) }, 0)
        XCTAssertEqual(try store.read { try $0.hits.count() }, 1)
    }

    func testDeleteAllEmptiesTheTableAndSaysHowManyWent() throws {
        try store.write { db in try db.hits.insert((0..<5).map { .sample("hit-\($0)") }) }

        XCTAssertEqual(try store.write { try $0.hits.deleteAll() }, 5)
        XCTAssertEqual(try store.read { try $0.hits.count() }, 0)
    }

    func testWithdrawingConsentDeletesTheVisitorsHitsButItsConsentHitAndLeavesOtherVisitorsAlone() throws {
        try store.write { try $0.hits.insert([
            .sample("event-1", visitorId: "alice", createdAt: 1),
            .sample("consent", visitorId: "alice", isConsent: true, createdAt: 2),
            .sample("activate", visitorId: "alice", type: "ACTIVATE", createdAt: 3),
            .sample("event-2", visitorId: "alice", type: "PAGEVIEW", createdAt: 4),
            .sample("event-1", visitorId: "bob", createdAt: 5),
            .sample("consent", visitorId: "bob", isConsent: true, createdAt: 6),
        ]) }

        let deleted = try store.write { try $0.hits.deleteHits(visitorId: "alice", keepingConsentHits: true) }

        XCTAssertEqual(deleted, 3)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["alice:consent", "bob:event-1", "bob:consent"])
    }

    func testDeletingAVisitorsHitsWithoutKeepingConsentDeletesThemAll() throws {
        try store.write { try $0.hits.insert([
            .sample("event", visitorId: "alice", createdAt: 1),
            .sample("consent", visitorId: "alice", isConsent: true, createdAt: 2),
            .sample("event", visitorId: "bob", createdAt: 3),
        ]) }

        XCTAssertEqual(try store.write { try $0.hits.deleteHits(visitorId: "alice", keepingConsentHits: false) }, 2)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["bob:event"])
    }

    func testExpiryDeletesExactlyTheHitsCreatedBeforeTheBoundary() throws {
        let boundary = fixedNowMilliseconds - 4 * 3_600_000
        try store.write { try $0.hits.insert([
            .sample("long-ago", createdAt: boundary - 3_600_000),
            .sample("just-before", createdAt: boundary - 1),
            .sample("at-boundary", createdAt: boundary),
            .sample("just-after", createdAt: boundary + 1),
            .sample("now", createdAt: fixedNowMilliseconds),
        ]) }

        let deleted = try store.write { try $0.hits.deleteHits(createdBefore: boundary) }

        XCTAssertEqual(deleted, 2)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:at-boundary", "visitor-1:just-after", "visitor-1:now"])
    }

    // MARK: - Capacity

    func testInsertBeyondCapacityEvictsTheOldestFirstAndCountsThem() throws {
        try store.write { db in try db.hits.insert((1...5).map { .sample("old-\($0)", createdAt: Int64($0)) }) }

        let outcome = try store.write { db in try db.hits.insert((6...8).map { .sample("new-\($0)", createdAt: Int64($0)) }, capacity: 6) }

        XCTAssertEqual(outcome.inserted, 3)
        XCTAssertEqual(outcome.evicted, 2)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, [
            "visitor-1:old-3", "visitor-1:old-4", "visitor-1:old-5", "visitor-1:new-6", "visitor-1:new-7", "visitor-1:new-8",
        ])
    }

    func testInsertWithinCapacityEvictsNothing() throws {
        try store.write { try $0.hits.insert([.sample("a", createdAt: 1)]) }

        let outcome = try store.write { try $0.hits.insert([.sample("b", createdAt: 2)], capacity: 2) }

        XCTAssertEqual(outcome.evicted, 0)
        XCTAssertEqual(try store.read { try $0.hits.count() }, 2)
    }

    func testEvictOldestKeepsTheNewestUpToTheCapacityBreakingTiesByInsertionOrder() throws {
        try store.write { try $0.hits.insert([
            .sample("d", createdAt: 20), .sample("c", createdAt: 10), .sample("b", createdAt: 10), .sample("a", createdAt: 5),
        ]) }

        XCTAssertEqual(try store.write { try $0.hits.evictOldest(beyond: 10) }, 0)
        XCTAssertEqual(try store.write { try $0.hits.evictOldest(beyond: 2) }, 2)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:b", "visitor-1:d"], "c was inserted before b in the same millisecond")
        XCTAssertEqual(try store.write { try $0.hits.evictOldest(beyond: 0) }, 2)
        XCTAssertEqual(try store.read { try $0.hits.count() }, 0)
    }

    func testEvictionNeverTakesARowInFlightAndCountsExactlyWhatItRemoved() throws {
        var claimed = HitRecord.sample("claimed-oldest", createdAt: 1)
        claimed.leaseOwner = "host pid 1 sender"
        claimed.leaseUntil = 1_000
        var lapsed = HitRecord.sample("lapsed", createdAt: 2)
        lapsed.leaseOwner = "host pid 2 gone"
        lapsed.leaseUntil = 400
        try store.write { try $0.hits.insert([claimed, lapsed, .sample("free-3", createdAt: 3), .sample("free-4", createdAt: 4)]) }

        let outcome = try store.write { try $0.hits.insert([.sample("new-5", createdAt: 5)], capacity: 2, now: 500) }

        XCTAssertEqual(outcome.evicted, 3, "the lapsed claim and the two oldest free rows; the row in flight stays")
        XCTAssertEqual(outcome.total, 2)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:claimed-oldest", "visitor-1:new-5"])
        XCTAssertEqual(try store.read { try $0.hits.count() }, 2)
        XCTAssertEqual(try store.write { try $0.hits.evictOldest(beyond: 0, now: 500) }, 1, "all in flight but one: only that one goes")
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:claimed-oldest"])
    }

    func testAHitInsertedClaimedIsHeldByItsOwnerUntilTheClaimLapses() throws {
        var hit = HitRecord.sample("sent-from-memory", createdAt: 1)
        hit.leaseOwner = "host pid 1 sender"
        hit.leaseUntil = 1_000
        try store.write { try $0.hits.insert([hit]) }

        XCTAssertEqual(try store.write { try $0.hits.claim(.events, owner: "other", now: 999, leaseUntil: 2_000, limit: 10) }, [])
        XCTAssertEqual(try store.write { try $0.hits.claim(.events, owner: "other", now: 1_000, leaseUntil: 2_000, limit: 10) }.map(\.id),
                       ["visitor-1:sent-from-memory"], "lapsed: a claim takes it over")
    }

    /// One reader for every read of a row: a claim carries an activate's provenance as a listing
    /// and a visitor's hits do.
    func testAClaimAPageAndAVisitorsHitsReadTheSameRow() throws {
        var activate = HitRecord.sample("activate", type: "ACTIVATE", createdAt: 1)
        activate.fileVersion = String(repeating: "ab", count: 32)
        activate.decidedAt = -4
        try store.write { try $0.hits.insert([activate]) }

        var unreadable = 0
        let listed = try store.read { try $0.hits.page(limit: 10) }
        let visitors = try store.read { try $0.hits.hits(visitorId: "visitor-1", unreadable: &unreadable) }
        let claimed = try store.write { try $0.hits.claim(.activate, owner: "me", now: 1, leaseUntil: 2_000, limit: 10) }

        XCTAssertEqual(listed, [activate])
        XCTAssertEqual(visitors, [activate])
        var leased = activate
        (leased.leaseOwner, leased.leaseUntil) = ("me", 2_000)
        XCTAssertEqual(claimed, [leased], "the claim reads the provenance too")
    }

    /// The provenance is never sent: a claim reads it as near as it goes, and a row whose
    /// provenance was edited into another type is claimed as before, not set aside.
    func testAClaimReadsAProvenanceEditedByHandAsNearAsItGoes() throws {
        try store.write { try $0.hits.insert([.sample("activate", type: "ACTIVATE", createdAt: 1)]) }
        _ = try store.write { try $0.execute("UPDATE hits SET file_version = x'00ff', decided_at = 'yesterday'") }

        let claimed = try store.write { try $0.hits.claim(.activate, owner: "me", now: 1, leaseUntil: 2_000, limit: 10) }
        let listed = try store.read { try $0.hits.page(limit: 10) }

        XCTAssertEqual(claimed.map(\.id), ["visitor-1:activate"])
        XCTAssertEqual(claimed.map(\.fileVersion), [nil])
        XCTAssertEqual(claimed.map(\.decidedAt), [nil])
        XCTAssertEqual(try store.read { try $0.hits.deadLetterCount() }, 0)
        XCTAssertEqual(listed.map(\.columnsNotAsWritten), [["file_version", "decided_at"]], "a listing says so")
    }

    // MARK: - Attempts and replacement

    func testRecordFailedAttemptAddsOneToEachNamedHitOnly() throws {
        try store.write { try $0.hits.insert([.sample("a", createdAt: 1), .sample("b", createdAt: 2), .sample("c", createdAt: 3)]) }

        try store.write { try $0.hits.recordFailedAttempt(ids: ["visitor-1:a", "visitor-1:b", "visitor-1:unknown"]) }
        try store.write { try $0.hits.recordFailedAttempt(ids: ["visitor-1:a"]) }
        try store.write { try $0.hits.recordFailedAttempt(ids: []) }

        XCTAssertEqual(try store.read { try $0.hits.all() }.map(\.attempts), [2, 1, 0])
    }

    func testReinsertingAnIdReplacesTheDocumentAndKeepsTheAttemptCount() throws {
        try store.write { try $0.hits.insert([.sample("a", createdAt: 1)]) }
        try store.write { try $0.hits.recordFailedAttempt(ids: ["visitor-1:a"]) }
        try store.write { try $0.hits.recordFailedAttempt(ids: ["visitor-1:a"]) }
        var replacement = HitRecord.sample("a", type: "PAGEVIEW", createdAt: 7)
        replacement.document = hitDocument(visitorId: "visitor-1", type: "PAGEVIEW", time: 7, label: "replaced")

        try store.write { try $0.hits.insert([replacement]) }

        var expected = replacement
        expected.attempts = 2
        XCTAssertEqual(try store.read { try $0.hits.all() }, [expected])
    }

    // MARK: - Counting

    func testCountByTypeCountsEachStoredType() throws {
        try store.write { try $0.hits.insert([
            .sample("1"), .sample("2"), .sample("3", type: "ACTIVATE"), .sample("4", type: "SCREENVIEW"),
            .sample("5", type: "SCREENVIEW"), .sample("6", type: "TRANSACTION"),
        ]) }

        XCTAssertEqual(try store.read { try $0.hits.countByType() }, ["EVENT": 2, "ACTIVATE": 1, "SCREENVIEW": 2, "TRANSACTION": 1])
    }

    func testOldestCreatedAtIsTheSmallestCreationTimeAndNilWhenEmpty() throws {
        XCTAssertNil(try store.read { try $0.hits.oldestCreatedAt() })

        try store.write { try $0.hits.insert([.sample("a", createdAt: 300), .sample("b", createdAt: 100), .sample("c", createdAt: 200)]) }

        XCTAssertEqual(try store.read { try $0.hits.oldestCreatedAt() }, 100)
    }

    // MARK: - Constraints

    func testEveryWireTypeIsAccepted() throws {
        let types = ["SCREENVIEW", "PAGEVIEW", "TRANSACTION", "ITEM", "EVENT", "SEGMENT", "ACTIVATE"]

        try store.write { db in try db.hits.insert(types.map { .sample($0, type: $0) }) }

        XCTAssertEqual(try store.read { try $0.hits.countByType() }, Dictionary(uniqueKeysWithValues: types.map { ($0, 1) }))
    }

    func testUnknownHitTypeIsRejectedByTheCheckConstraintAndNoneOfTheBatchIsStored() throws {
        try store.write { try $0.hits.insert([.sample("stored-before", createdAt: 1)]) }
        let batch: [HitRecord] = [.sample("valid-1", createdAt: 2), .sample("valid-2", createdAt: 3), .sample("bad", type: "CLICK", createdAt: 4)]

        XCTAssertThrowsError(try store.write { try $0.hits.insert(batch, capacity: 1) }) { error in
            let error = sqliteError(error)
            XCTAssertEqual(error?.code, 19) // SQLITE_CONSTRAINT
            XCTAssertEqual(error?.extendedCode, 275) // SQLITE_CONSTRAINT_CHECK
            XCTAssertTrue(error?.sql?.hasPrefix("INSERT INTO main.hits") ?? false)
        }

        // Rolled back: no row of the batch, and no eviction either.
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:stored-before"])
    }

    func testDocumentThatIsNotJSONIsRejectedByTheCheckConstraintAndNoneOfTheBatchIsStored() throws {
        var bad = HitRecord.sample("bad", createdAt: 3)
        bad.document = #"{"version": 1, "data": "#

        XCTAssertThrowsError(try store.write { try $0.hits.insert([.sample("valid", createdAt: 2), bad]) }) { error in
            let error = sqliteError(error)
            XCTAssertEqual(error?.code, 19) // SQLITE_CONSTRAINT
            XCTAssertEqual(error?.extendedCode, 275) // SQLITE_CONSTRAINT_CHECK
        }

        XCTAssertEqual(try store.read { try $0.hits.count() }, 0)
    }
}

final class SplitMix64Tests: XCTestCase {
    func testSplitMix64GivesThePublishedSequence() {
        // The first outputs of Vigna's reference splitmix64.c for seed 1234567.
        var generator = SplitMix64(seed: 1_234_567)

        XCTAssertEqual((0..<5).map { _ in generator.next() }, [
            6_457_827_717_110_365_317, 3_203_168_211_198_807_973, 9_817_491_932_198_370_423,
            4_593_380_528_125_082_431, 16_408_922_859_458_223_821,
        ])
    }
}

/// A seeded generator, so that a shuffled order is the same at every run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
