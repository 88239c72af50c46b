import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship

/// The default hit queue's own bookkeeping: what it tells the writer about the table without
/// asking it (the count backpressure reads, the rows evicted outside a save).
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
        XCTAssertEqual(queue.lastKnownCount, 5)

        try await queue.releaseClaims(hits.prefix(2).map(\.id))

        let count = try await queue.count()
        XCTAssertEqual(count, 3)
        XCTAssertEqual(queue.lastKnownCount, 3, "the count after the eviction, not the one before")
        XCTAssertEqual(queue.takeEvicted(), 2)
        XCTAssertEqual(queue.takeEvicted(), 0, "told once")
        let left = try await database.read { try $0.hits.page(after: nil, limit: 10) }.map(\.id)
        XCTAssertEqual(left, hits.suffix(3).map(\.id), "the two oldest, whose claims ended, were evicted")
    }
}
