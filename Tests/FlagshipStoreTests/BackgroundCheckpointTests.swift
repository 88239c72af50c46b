import CSQLite
import Foundation
import XCTest

import FlagshipStore

/// No commit waits for a WAL checkpoint: past the threshold, a connection of the store's own
/// checkpoints, one checkpoint at a time, off the committing thread, and the WAL stops growing.
final class BackgroundCheckpointTests: StoreTestCase {
    func testCheckpointsRunOffTheCommittingConnectionAndTheWALStopsGrowing() throws {
        let store = try openStore()
        defer { store.close() }
        let walURL = URL(fileURLWithPath: store.database.path + "-wal")
        let blob = String(repeating: "x", count: 100_000)
        // 40 MB committed 500 KB at a time: without a checkpoint, the WAL would hold it all.
        for batch in 0..<80 {
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
        XCTAssertLessThan(walBytes, 20_000_000, "the WAL was reset after checkpoints, not grown to the 40 MB written")
        let rows = try store.read { try $0.scalar("SELECT count(*) FROM sdk_state WHERE key LIKE 'blob-%'")?.int64 }
        XCTAssertEqual(rows, 400)
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
}
