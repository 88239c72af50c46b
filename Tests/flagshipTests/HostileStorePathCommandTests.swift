import Foundation
import XCTest

/// `db inspect` on a FIFO used to hang (SQLite waits for a writer that never comes).
final class HostileStorePathCommandTests: CommandTestCase {
    func testInspectOnAFIFOExitsAtOnceNamingIt() throws {
        XCTAssertEqual(mkfifo(storeFile.path, 0o600), 0)

        let result = try FlagshipExecutable.run(["db", "inspect", "--db", storeFile.path], outputDirectory: outputDirectory, timeout: 15)

        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertEqual(result.stdout, "")
        XCTAssertTrue(result.stderr.contains("it is a FIFO (named pipe), not a store file"), result.stderr)
        XCTAssertEqual(try storeDirectoryListing(), ["flagship-env.sqlite"])
    }
}

/// Point 14: a store other users can read is reported, without changing it.
final class HostileStorePermissionsCommandTests: CommandTestCase {
    func testInspectReportsAStoreOtherUsersCanReadAndLeavesItsMode() throws {
        try withStore { _ in }
        XCTAssertEqual(chmod(storeFile.path, 0o644), 0)

        let result = try flagship("db", "inspect", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("other users can read or change \(storeFile.path) (mode 644), which holds visitor data: chmod 600 it"), result.stderr)
        let mode = (try FileManager.default.attributesOfItem(atPath: storeFile.path)[.posixPermissions] as? NSNumber)?.intValue
        XCTAssertEqual(mode, 0o644, "inspect changes nothing")
    }

    func testInspectSaysNothingOfAStoreOnlyItsOwnerCanRead() throws {
        try withStore { _ in }

        let result = try flagship("db", "inspect", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertFalse(result.stderr.contains("other users"), result.stderr)
    }
}
