import FlagshipStore
import Foundation
import XCTest

/// Processes that find one damaged store at once move it aside once (issue 18, point 4): the
/// others wait, then use the fresh store. Before, one of them often failed with "disk I/O
/// error", or moved aside the fresh store another had just made.
final class HostileDamagedStoreRaceTests: CommandTestCase {
    func testProcessesFindingOneDamagedStoreMoveItAsideOnce() throws {
        for round in 1...4 {
            let store = storeDirectory.appendingPathComponent("round-\(round).sqlite")
            let database = try FlagshipDatabase.open(at: store)
            try database.write { try $0.hits.insert((0..<300).map { index in
                HitRecord(id: "v:\(index)", visitorId: "v", type: "EVENT",
                          document: #"{"version": 1, "data": {"type": "EVENT", "content": {"t": "EVENT", "ea": "x"}}}"#,
                          createdAt: 1_732_170_000_000 + Int64(index))
            }) }
            database.close()
            // Cut short by half a page: damaged, whatever the session says.
            let bytes = try Data(contentsOf: store)
            try bytes.prefix(bytes.count - 2_048).write(to: store)

            let running = try (0..<4).map { _ in
                try FlagshipExecutable.start(["db", "migrate", "--db", store.path], outputDirectory: outputDirectory)
            }
            let results = try running.map { try $0.waitForExit(timeout: 60) }

            for result in results {
                XCTAssertEqual(result.status, 0, "round \(round): \(result.stderr)")
            }
            let movedAside = try storeDirectoryListing().filter { $0.hasPrefix("round-\(round).sqlite.corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
            let listing = try storeDirectoryListing()
            XCTAssertEqual(movedAside.count, 1, "round \(round): \(listing)")
            XCTAssertEqual(results.filter { $0.stderr.contains("was damaged") }.count, 1, "round \(round): one of them moved it")
            XCTAssertEqual(try Data(contentsOf: storeDirectory.appendingPathComponent(movedAside.first ?? "")), bytes.prefix(bytes.count - 2_048),
                           "the damaged file kept as found")
            let fresh = try FlagshipDatabase.openForInspection(at: store)
            XCTAssertEqual(fresh.schemaVersion, Migrator().latestVersion)
            fresh.close()
        }
    }
}

/// A live store's `-wal` is never taken for a stranger's: a process that opens the store while
/// another is creating or using it (its `-wal` there, its `-shm` not yet) must not set that `-wal`
/// aside, which would split the store in two views and send every hit twice.
final class HostileLiveWALTests: HitCommandTestCase {
    func testProcessesOpeningOneStoreTogetherNeverSetItsWALAside() throws {
        for round in 1...6 {
            let store = storeDirectory.appendingPathComponent("live-\(round).sqlite")
            let running = try (0..<4).map { index in
                try FlagshipExecutable.start(
                    ["send-hit", "--visitor-id", "v\(index)", "--event", "live", "--count", "200"] + sdkOptions(db: store),
                    outputDirectory: outputDirectory)
            }
            let results = try running.map { try $0.waitForExit(timeout: 60) }

            for result in results { XCTAssertEqual(result.status, 0, "round \(round): \(result.stderr)") }
            let listing = try storeDirectoryListing()
            XCTAssertEqual(listing.filter { $0.contains(".unreadable-") }, [], "round \(round)")
        }
        XCTAssertEqual(server.hits.filter { $0["ea"] == "live" }.count, 6 * 4 * 200, "each hit once")
    }
}
