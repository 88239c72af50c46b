import CSQLite
import Foundation
import XCTest

@testable import FlagshipStore

/// No commit waits for a WAL checkpoint: past the threshold, a connection of the store's own
/// checkpoints, one checkpoint at a time, off the committing thread, and the WAL stops growing.
final class BackgroundCheckpointTests: StoreTestCase {
    func testCheckpointsRunOffTheCommittingConnectionAndTheWALStopsGrowing() throws {
        let store = try openStore()
        defer { store.close() }
        let walURL = URL(fileURLWithPath: store.database.path + "-wal")
        let blob = String(repeating: "x", count: 100_000)
        // 80 MB committed 500 KB at a time: without a checkpoint, the WAL would hold it all.
        for batch in 0..<160 {
            try store.write { connection in
                for row in 0..<5 {
                    try connection.state.setValue(blob, forKey: "blob-\(batch)-\(row)", now: Int64(batch))
                }
            }
        }
        let deadline = Date().addingTimeInterval(5)
        while store.database.backgroundCheckpoints == 0, Date() < deadline { usleep(1_000) }
        XCTAssertGreaterThan(store.database.backgroundCheckpoints, 0, "a checkpoint ran off the committing connection")
        let walBytes = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: walURL.path)[.size] as? Int)
        // At most eight thresholds of 1,000 pages (and the commit that passed them) before a commit
        // checkpoints itself.
        XCTAssertLessThan(walBytes, 40_000_000, "the WAL was reset after checkpoints, not grown to the 80 MB written")
        let rows = try store.read { try $0.scalar("SELECT count(*) FROM sdk_state WHERE key LIKE 'blob-%'")?.int64 }
        XCTAssertEqual(rows, 800)
    }

    func testEverythingCommittedIsInTheFileAfterClose() throws {
        let file = url()
        do {
            let store = try openStore(at: file)
            for batch in 0..<30 {
                try store.write { try $0.state.setValue(String(repeating: "y", count: 200_000), forKey: "k\(batch)", now: 1) }
            }
            store.close()
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: file.path + "-wal"), "the last connection's close checkpointed and removed the WAL")
        let reopened = try openStore(at: file)
        defer { reopened.close() }
        let rows = try reopened.read { try $0.scalar("SELECT count(*) FROM sdk_state WHERE key LIKE 'k%'")?.int64 }
        XCTAssertEqual(rows, 30)
    }

    /// Background work in batches (a prune) waits for the checkpoint under way only when its next
    /// batch could take the WAL to eight thresholds, where that commit would checkpoint the whole
    /// WAL itself; below, it goes on while the checkpoint copies.
    func testBatchWorkWaitsForTheCheckpointOnlyWhenItsNextBatchCouldMakeItsCommitCheckpoint() {
        let behind = { (wal: Int32, next: Int32, checkpointing: Bool) in
            BackgroundCheckpointer.fallsBehind(walPages: wal, writing: next, checkpointing: checkpointing, threshold: 1_000)
        }
        XCTAssertEqual(BackgroundCheckpointer.writerCheckpointThresholds, 8)
        XCTAssertFalse(behind(2_200, 1_100, true), "two batches' worth and a checkpoint under way: the next batch goes on")
        XCTAssertFalse(behind(6_899, 1_100, true), "the next batch ends a page below the writer's own checkpoint")
        XCTAssertTrue(behind(6_900, 1_100, true), "the next batch would make its commit copy the whole WAL")
        XCTAssertTrue(behind(8_500, 0, true))
        XCTAssertFalse(behind(9_000, 1_100, false), "no checkpoint queued or under way: nothing to wait for")
        XCTAssertFalse(behind(0, -5, true))
        XCTAssertTrue(BackgroundCheckpointer.fallsBehind(walPages: .max, writing: .max, checkpointing: true, threshold: 1),
                      "no overflow at the extremes")
    }

    /// What a batch's commit wrote to the WAL is read from the store (`walProgress`), for the rule
    /// above; a store with no background checkpointer (in memory) has none.
    func testTheWALsProgressFollowsTheCommitsAndIsAbsentWithoutABackgroundCheckpointer() throws {
        let store = try openStore()
        defer { store.close() }
        let before = try XCTUnwrap(store.database.walProgress)
        XCTAssertEqual(before.pagesPerCheckpoint, 1_000)
        try store.write { try $0.state.setValue(String(repeating: "z", count: 200_000), forKey: "big", now: 1) }
        let after = try XCTUnwrap(store.database.walProgress)
        XCTAssertGreaterThanOrEqual(after.pages - before.pages, 200_000 / 4_096, "the commit's frames, its 200 KB value at least")
        XCTAssertFalse(store.database.checkpointWouldFallBehind(writing: 1_000), "a WAL of a few pages, nothing queued")

        let memory = try FlagshipDatabase.inMemory(now: { fixedNow })
        defer { memory.close() }
        XCTAssertNil(memory.database.walProgress)
        XCTAssertFalse(memory.database.checkpointWouldFallBehind(writing: .max))
    }
}
