import CSQLite
import Foundation
import XCTest

@testable import FlagshipStore

/// A store another process keeps locked (issue 18, point 8): one write waits the whole busy
/// timeout, the writes after it only `contendedBusyTimeout`, and the first write that commits
/// gives back the full wait.
final class HostileLockedStoreTests: StoreTestCase {
    func testAWriteThatFoundTheFileLockedShortensTheWaitOfTheNextUntilOneCommits() throws {
        try openStore().close()
        let writer = try Database(path: url().path, options: DatabaseOptions(busyTimeoutMilliseconds: 300))
        defer { writer.close() }
        let holder = try rawDatabase()
        defer { holder.close() }
        let write = { try writer.write { _ = try $0.execute("INSERT INTO sdk_state (key, value, updated_at) VALUES (?, 'v', 0)", [.text(UUID().uuidString)]) } }

        try holder.withConnection { connection in
            _ = try connection.execute("BEGIN IMMEDIATE")
            defer { _ = try? connection.execute("ROLLBACK") }
            XCTAssertFalse(writer.isContended)
            XCTAssertThrowsError(try write()) { error in
                guard case .sqlite(let sqliteError)? = error as? StoreError else { return XCTFail("\(error)") }
                XCTAssertEqual(sqliteError.code, SQLITE_BUSY)
            }
            XCTAssertTrue(writer.isContended, "the next writes wait less")
            XCTAssertThrowsError(try write())
            XCTAssertTrue(writer.isContended)
        }

        try write()
        XCTAssertFalse(writer.isContended, "a commit gives back the full wait")
    }
}
