import Foundation
import XCTest

@testable import FlagshipStore

/// A long read on another connection keeps every checkpoint from copying the WAL's frames it
/// may still need. A prune then waits for that read between its batches instead of adding to a
/// WAL already past the point where commits checkpoint it themselves; once the read ends, a
/// checkpoint off the write lock copies the WAL and the prune goes on.
final class PruneBehindAReaderTests: StoreTestCase {
    private static let day: Int64 = 86_400_000

    func testAPruneWaitsBetweenBatchesForAReadThatHoldsBackTheCheckpointsThenFinishes() async throws {
        let store = try openStore()
        let due = 600
        try await store.write { db in
            try db.visitors.save((0..<due).map { VisitorRecord.sample("old-\($0)", updatedAt: fixedNowMilliseconds - 40 * Self.day) })
        }
        let reader = try FlagshipDatabase.openForInspection(at: url())
        defer { reader.close() }
        try reader.database.withConnection { connection in
            try connection.execute("BEGIN")
            _ = try connection.scalar("SELECT count(*) FROM visitors")
        }
        // The app's writes meanwhile take the WAL past eight thresholds of 1,000 pages (36 MB):
        // no checkpoint can copy what was written after the read began.
        let value = String(repeating: "w", count: 4_000_000)
        for index in 0..<9 {
            try await store.write { try $0.state.setValue(value, forKey: "big-\(index)", now: 1) }
        }
        XCTAssertTrue(store.database.checkpointsHeldBackByAReader, "the WAL is past 8,000 pages and the read holds its frames")

        let boundary = fixedNowMilliseconds - 30 * Self.day
        let prune = Task { try await store.pruneVisitors(notSeenSince: boundary, keepingAtMost: nil, batchSize: 100) }
        let afterOneBatch = try await waitForVisitors(due - 100, in: store)
        XCTAssertTrue(afterOneBatch, "the first batch ran")
        let walAfterOneBatch = try XCTUnwrap(store.database.walProgress?.pages)
        // Three of its rests of 200 ms: without them the other five batches take a few ms.
        try await Task.sleep(for: .milliseconds(600))
        XCTAssertEqual(try visitorCount(store), due - 100, "no batch while the read holds the checkpoints back")
        XCTAssertEqual(store.database.walProgress?.pages, walAfterOneBatch, "the WAL did not grow")

        try reader.database.withConnection { try $0.execute("COMMIT") }
        let result = try await prune.value

        XCTAssertEqual(result.expired, due)
        XCTAssertGreaterThanOrEqual(result.restsForAReader, 3)
        XCTAssertTrue(result.restsForAReaderText.contains("for a read on another connection"))
        XCTAssertEqual(try visitorCount(store), 0)
        XCTAssertFalse(store.database.checkpointsHeldBackByAReader)
        XCTAssertLessThan(try XCTUnwrap(store.database.walProgress?.pages), walAfterOneBatch,
                          "the WAL was checkpointed once the read ended, and started over")
    }

    func testAPruneWithNoReaderNeverWaitsForOne() async throws {
        let store = try openStore()
        try await store.write { db in
            try db.visitors.save((0..<300).map { VisitorRecord.sample("old-\($0)", updatedAt: fixedNowMilliseconds - 40 * Self.day) })
        }
        let value = String(repeating: "w", count: 4_000_000)
        for index in 0..<9 {
            try await store.write { try $0.state.setValue(value, forKey: "big-\(index)", now: 1) }
        }
        XCTAssertFalse(store.database.checkpointsHeldBackByAReader, "every checkpoint could copy the whole WAL")

        let result = try await store.pruneVisitors(notSeenSince: fixedNowMilliseconds - 30 * Self.day, keepingAtMost: nil, batchSize: 100)

        XCTAssertEqual(result.expired, 300)
        XCTAssertEqual(result.restsForAReader, 0)
        XCTAssertEqual(result.restsForAReaderText, "")
    }

    private func visitorCount(_ store: FlagshipDatabase) throws -> Int {
        Int(try store.database.integer("SELECT count(*) FROM visitors") ?? -1)
    }

    /// Waits (5 s at most) until the store holds `count` visitors; whether it did.
    private func waitForVisitors(_ count: Int, in store: FlagshipDatabase) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while try visitorCount(store) != count {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(2))
        }
        return true
    }
}
