import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship

/// A group commit set going by accepted hits writes one transaction, then queues the rest behind
/// what waits on the store queue (the sender's claims and settlements): a flow of hits that never
/// stops does not keep the sender from the store. Before, the writer looped until the ingress was
/// empty, and under sustained load the sender fell so far behind that the cache cap evicted hits.
final class GroupCommitFairnessTests: XCTestCase {
    func testWorkQueuedDuringAGroupCommitRunsBetweenItsTransactions() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fairness-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try FlagshipDatabase.open(at: directory.appendingPathComponent("flagship.sqlite"))
        defer { database.close() }
        let logger = Logger(label: "test")
        let store = TrackingStore(hits: SQLiteHitQueue(store: database, capacity: 100_000, leaseDuration: 60, logger: logger),
                                  executor: database.executor)
        var settings = TrackingManager.Settings()
        settings.ingressLimit = 10
        let writer = HitWriter(settings: settings, store: store, clock: SystemClock(), logger: logger,
                               callbacks: DeliveryCallbacks(limit: 10), visitorDocuments: nil) { _, _ in }

        // The store queue is held while 100 hits are accepted: the group commit they set going
        // waits behind it, and the work below (standing for a claim) is queued after that.
        let release = DispatchSemaphore(value: 0)
        store.async { release.wait() }
        for number in 0..<100 {
            let hit = OutgoingHit(id: "v:\(number)", type: "EVENT", createdAt: 1_000 + Int64(number), fields: [
                "t": .string("EVENT"), "ea": .string("click"), "ec": .string("Action Tracking"), "vid": .string("v"),
            ])
            XCTAssertTrue(writer.accept(hit, durable: nil, committed: false))
        }
        let uncommittedWhenTheClaimRan = Locked<Int?>(nil)
        store.async { uncommittedWhenTheClaimRan.withLock { $0 = writer.unwritten().uncommitted } }
        release.signal()
        await store.run { await writer.drainAll() }

        XCTAssertEqual(uncommittedWhenTheClaimRan.withLock { $0 }, 90, "one transaction of 10 hits, then the queued work")
        let stored = try await database.read { try $0.hits.count() }
        XCTAssertEqual(stored, 100)
    }
}
