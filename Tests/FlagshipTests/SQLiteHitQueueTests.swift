import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship

/// The default hit queue's own bookkeeping (`OwnHitTable`): what it tells the writer and the
/// sender about the table without asking it (the count backpressure reads, the rows evicted
/// outside a save, whether a claim may find anything), and where its hits live.
final class SQLiteHitQueueTests: XCTestCase {
    /// Hits written claimed are not evicted while in flight; once the writer ends their claims
    /// (the sender stopped taking them), they count toward the cap again: eviction takes the
    /// oldest, and the count the writer reads for backpressure is the table's after it.
    func testEndingClaimsEvictsBeyondTheCapAndKeepsTheKnownCountTrue() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try FlagshipDatabase.open(at: directory.file("flagship.sqlite"))
        defer { database.close() }
        let queue = SQLiteHitQueue(store: database, capacity: 3, leaseDuration: 60, logger: Logger(label: "test"))
        let now = Date().unixMilliseconds
        let hits = (0..<5).map { number in
            OutgoingHit.hit(type: "EVENT", fields: ["ea": .string("e\(number)")], identity: .init(visitorId: "v1", anonymousId: nil),
                            envId: "env", createdAt: now + Int64(number))
        }

        let evictedBySave = try await queue.save(hits.map { CachedHit($0, document: $0.cacheDocumentText, claimedUntil: now + 60_000) })

        XCTAssertEqual(evictedBySave, 0, "rows in flight are never evicted")
        XCTAssertEqual(queue.ownTable?.lastKnownCount, 5)

        try await queue.releaseClaims(hits.prefix(2).map(\.id))

        let count = try await queue.count()
        XCTAssertEqual(count, 3)
        XCTAssertEqual(queue.ownTable?.lastKnownCount, 3, "the count after the eviction, not the one before")
        XCTAssertEqual(queue.ownTable?.takeEvicted(), 2)
        XCTAssertEqual(queue.ownTable?.takeEvicted(), 0, "told once")
        let left = try await database.read { try $0.hits.page(after: nil, limit: 10) }.map(\.id)
        XCTAssertEqual(left, hits.suffix(3).map(\.id), "the two oldest, whose claims ended, were evicted")
    }

    /// A claim that found fewer rows than it asked for tells the sender to skip the next one for
    /// that endpoint, until a row is written unclaimed, a claim ends unsent, or claims may have
    /// lapsed; a hit written already claimed (handed to the sender in memory) leaves it skipped.
    func testAShortClaimSkipsTheNextUntilSomethingClaimableMayBeThere() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try FlagshipDatabase.open(at: directory.file("flagship.sqlite"))
        defer { database.close() }
        let queue = SQLiteHitQueue(store: database, capacity: 100, leaseDuration: 60, logger: Logger(label: "test"))
        let table = try XCTUnwrap(queue.ownTable, "a file this instance writes")
        var now = Date().unixMilliseconds
        func event(_ number: Int) -> OutgoingHit {
            now += 1
            return OutgoingHit.hit(type: "EVENT", fields: ["ea": .string("e\(number)")], identity: .init(visitorId: "v1", anonymousId: nil),
                                   envId: "env", createdAt: now)
        }
        XCTAssertTrue(table.mayHaveClaimable(.events), "nothing is known before the first claim")

        let none = try await queue.claim(.events, limit: 10, now: now)
        XCTAssertEqual(none.count, 0)
        XCTAssertFalse(table.mayHaveClaimable(.events))
        XCTAssertTrue(table.mayHaveClaimable(.activate), "an endpoint's own claims only")

        _ = try await queue.save([CachedHit(event(1), document: event(1).cacheDocumentText, claimedUntil: now + 60_000)])
        XCTAssertFalse(table.mayHaveClaimable(.events), "a hit saved claimed is the sender's already")

        let unclaimed = event(2)
        _ = try await queue.save([CachedHit(unclaimed)])
        XCTAssertTrue(table.mayHaveClaimable(.events), "a row nobody holds was written")
        let claimed = try await queue.claim(.events, limit: 10, now: now)
        XCTAssertEqual(claimed.map(\.id), [unclaimed.id], "the row saved claimed is not claimed again")
        XCTAssertFalse(table.mayHaveClaimable(.events))

        try await queue.settle(HitSettlement(failed: [unclaimed.id], nextAttemptAt: now))
        XCTAssertTrue(table.mayHaveClaimable(.events), "a failed send ends its claim: the row may be claimed again")
        _ = try await queue.claim(.events, limit: 10, now: now)
        XCTAssertFalse(table.mayHaveClaimable(.events))

        table.claimsMayHaveLapsed()
        XCTAssertTrue(table.mayHaveClaimable(.events))
        XCTAssertEqual(table.lastKnownCount, 2, "the last settlement's count")
    }

    /// Where hits live, for what a restart finds: a file is durable; memory is not, and neither
    /// are the hits waiting in it.
    func testAStoreInMemorySaysItsHitsDoNotSurvive() throws {
        let file = try TemporaryDirectory()
        defer { file.remove() }
        let onDisk = try FlagshipDatabase.open(at: file.file("flagship.sqlite"))
        defer { onDisk.close() }
        let durable = SQLiteHitQueue(store: onDisk, capacity: 10, leaseDuration: 60, logger: Logger(label: "test")).durability
        XCTAssertNil(durable.notDurable)
        XCTAssertTrue(durable.waitingHitsSurvive)

        let memory = try FlagshipDatabase.inMemory()
        defer { memory.close() }
        let inMemory = SQLiteHitQueue(store: memory, capacity: 10, leaseDuration: 60, logger: Logger(label: "test")).durability
        XCTAssertEqual(inMemory.notDurable?.code, .inMemory)
        XCTAssertFalse(inMemory.waitingHitsSurvive)
    }
}
