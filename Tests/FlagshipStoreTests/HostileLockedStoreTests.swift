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

    /// A current store whose write lock another process holds opens for reading within the
    /// opening wait (1 s), and serves what it holds (issue 18, point 10).
    func testACurrentStoreLockedByAnotherProcessOpensForReading() throws {
        let first = try openStore()
        try first.write { try $0.visitors.save(.sample("alice")) }
        first.close()
        let holder = try rawDatabase()
        defer { holder.close() }

        let store = try holder.withConnection { connection -> FlagshipDatabase in
            _ = try connection.execute("BEGIN IMMEDIATE")
            defer { _ = try? connection.execute("ROLLBACK") }
            return try openStore()
        }

        XCTAssertEqual(store.opening.readOnly, "another process holds its write lock")
        XCTAssertNotNil(try store.read { try $0.visitors.visitor(id: "alice") })
        XCTAssertThrowsError(try store.write { try $0.visitors.save(.sample("bob")) }, "nothing written through it")
    }

    /// A store written by a newer SDK is refused as before, locked or not: reading it
    /// read-only is no way around the schema check.
    func testANewerStoreLockedByAnotherProcessIsStillRefused() throws {
        try writeNewerSchemaDatabase(at: url(), version: 99)
        let holder = try rawDatabase()
        defer { holder.close() }

        try holder.withConnection { connection in
            _ = try connection.execute("BEGIN IMMEDIATE")
            defer { _ = try? connection.execute("ROLLBACK") }
            XCTAssertThrowsError(try FlagshipDatabase.open(at: url())) { error in
                guard case .schemaTooNew? = error as? StoreError else { return XCTFail("\(error)") }
            }
        }
    }
}
