import FlagshipStore
import Foundation
import XCTest

/// The read-only commands write nothing (issue 18, point 3): no `-wal`, no `-shm`, no marker
/// beside the store, the store's bytes unchanged; and they work in a read-only directory.
final class HostileReadOnlyCommandTests: CommandTestCase {
    private static let readCommands: [[String]] = [["db", "inspect"], ["db", "inspect", "--json"], ["visitors"], ["hits"]]

    func testReadCommandsOnAClosedStoreCreateAndChangeNothing() throws {
        try withStore { try StoreFixture.populate($0) }
        XCTAssertEqual(try storeDirectoryListing(), ["flagship-env.sqlite"])
        let before = try Data(contentsOf: storeFile)

        for command in Self.readCommands {
            let result = try FlagshipExecutable.run(command + ["--db", storeFile.path], outputDirectory: outputDirectory)

            XCTAssertEqual(result.status, 0, "\(command): \(result.stderr)")
            XCTAssertEqual(try storeDirectoryListing(), ["flagship-env.sqlite"], "\(command) created files beside the store")
            XCTAssertEqual(try Data(contentsOf: storeFile), before, "\(command) changed the store")
        }
    }

    /// A process died with transactions in the `-wal` and its `-shm` gone: they are read (the
    /// hits they hold are counted) from a private copy; the three files are left as they were.
    func testReadCommandsSeeAHotWALWithoutWritingBesideIt() throws {
        try withStore { try StoreFixture.populate($0) }
        let writer = try FlagshipDatabase.open(at: storeFile)
        try writer.write { try $0.hits.insert((0..<7).map { index in
            HitRecord(id: "wal-\(index)", visitorId: "v-wal", type: "EVENT", isConsent: false,
                      document: #"{"version":1,"data":{"type":"EVENT","content":{"t":"EVENT","ea":"wal"}}}"#, createdAt: 1_732_170_000_000)
        }) }
        // The files as a killed process leaves them, without the -shm.
        let crashed = storeDirectory.appendingPathComponent("crashed.sqlite")
        try FileManager.default.copyItem(at: storeFile, to: crashed)
        try FileManager.default.copyItem(atPath: storeFile.path + "-wal", toPath: crashed.path + "-wal")
        writer.close()
        try FileManager.default.removeItem(at: storeFile)
        let listing = try storeDirectoryListing()
        XCTAssertEqual(listing, ["crashed.sqlite", "crashed.sqlite-wal"])
        let bytes = try listing.map { try Data(contentsOf: storeDirectory.appendingPathComponent($0)) }
        XCTAssertGreaterThan(bytes[1].count, 0)

        let inspect = try FlagshipExecutable.run(["db", "inspect", "--json", "--db", crashed.path], outputDirectory: outputDirectory)
        let hits = try FlagshipExecutable.run(["hits", "--json", "--db", crashed.path], outputDirectory: outputDirectory)

        XCTAssertEqual(inspect.status, 0, inspect.stderr)
        let document = try XCTUnwrap(try parseJSON(inspect.stdout) as? [String: Any])
        XCTAssertEqual((document["hits"] as? [String: Any])?["total"] as? Int, StoreFixture.hits.count + 7, "the -wal's hits are seen")
        XCTAssertEqual(hits.status, 0, hits.stderr)
        XCTAssertEqual(hits.stdout.components(separatedBy: "wal-").count - 1, 7, hits.stdout)
        XCTAssertEqual(try storeDirectoryListing(), listing)
        XCTAssertEqual(try listing.map { try Data(contentsOf: storeDirectory.appendingPathComponent($0)) }, bytes)
    }

    /// A store in a directory mounted read-only (a container image, say): read as it is. Before,
    /// they failed with "attempt to write a readonly database" or could not open it.
    func testReadCommandsWorkInAReadOnlyDirectory() throws {
        try XCTSkipUnless(getuid() == 0, "mounting a directory read-only needs root (CI runs as root)")
        try withStore { try StoreFixture.populate($0) }
        let before = try Data(contentsOf: storeFile)

        for command in Self.readCommands {
            let result = try FlagshipExecutable.run(command + ["--db", storeFile.path], outputDirectory: outputDirectory,
                                                    readOnlyDirectory: storeDirectory)

            XCTAssertEqual(result.status, 0, "\(command): \(result.stderr)")
            XCTAssertFalse(result.stdout.isEmpty, "\(command)")
        }
        XCTAssertEqual(try storeDirectoryListing(), ["flagship-env.sqlite"])
        XCTAssertEqual(try Data(contentsOf: storeFile), before)
    }

    /// A damaged store read by `db inspect` and `hits`: reported, but no `-damaged` marker is
    /// written beside it (the marker made the next SDK start move the whole store aside).
    func testReadCommandsLeaveNoDamageMarker() throws {
        try withStore { try StoreFixture.populate($0) }
        let database = try Database(path: storeFile.path, options: DatabaseOptions(immutable: true))
        let rootPage = try XCTUnwrap(try database.read { try $0.scalar("SELECT rootpage FROM sqlite_master WHERE name = 'hits_by_visitor'")?.int64 })
        let pageSize = try XCTUnwrap(try database.read { try $0.scalar("PRAGMA page_size")?.int64 })
        database.close()
        var bytes = try Data(contentsOf: storeFile)
        let start = Int((rootPage - 1) * pageSize)
        bytes.replaceSubrange(start..<(start + Int(pageSize)), with: Data(count: Int(pageSize)))
        try bytes.write(to: storeFile)

        var results: [FlagshipExecutable.Result] = []
        for command in [["db", "inspect", "--full"], ["db", "inspect", "--json", "--full"], ["visitors"], ["hits"]] {
            results.append(try FlagshipExecutable.run(command + ["--db", storeFile.path], outputDirectory: outputDirectory))

            XCTAssertEqual(try storeDirectoryListing(), ["flagship-env.sqlite"], "\(command)")
        }
        XCTAssertEqual(try Data(contentsOf: storeFile), bytes)
        for inspect in results.prefix(2) {
            XCTAssertEqual(inspect.status, 1, "db inspect on a damaged store: \(inspect.stdout)")
            XCTAssertTrue(inspect.stderr.contains("quick_check says:"), inspect.stderr)
        }
    }
}
