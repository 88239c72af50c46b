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
