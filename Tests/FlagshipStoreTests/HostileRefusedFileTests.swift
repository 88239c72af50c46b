import CSQLite
import Foundation
import XCTest

@testable import FlagshipStore

/// A file the SDK refuses is left byte for byte, with its `-wal` and `-shm` (issue 18, point 2):
/// ownership is decided without writing, so another application's last transactions, still in
/// its `-wal`, are not checkpointed into its file by us, and no `-shm` appears beside it.
final class HostileRefusedFileTests: StoreTestCase {
    /// Another application's WAL database as its process left it when killed: transactions in
    /// the `-wal`, no `-shm`.
    private func foreignDatabaseWithHotWAL(applicationID: Int32?) throws -> [String: Data] {
        let source = url("source.sqlite")
        let database = try Database(path: source.path)
        try database.withConnection { connection in
            try connection.query("PRAGMA journal_mode = WAL")
            if let applicationID { try connection.query("PRAGMA application_id = \(applicationID)") }
            _ = try connection.execute("CREATE TABLE notes (body TEXT NOT NULL)")
            try connection.query("PRAGMA wal_checkpoint(TRUNCATE)")
            // No checkpoint from here on: these rows stay in the -wal.
            csqlite_disable_checkpoint_on_close(connection.handle)
            for index in 0..<50 { _ = try connection.execute("INSERT INTO notes (body) VALUES (?)", [.text("note \(index)")]) }
        }
        try FileManager.default.copyItem(at: source, to: url())
        try FileManager.default.copyItem(atPath: source.path + "-wal", toPath: url().path + "-wal")
        database.close(checkpoint: false)
        for name in ["source.sqlite", "source.sqlite-wal", "source.sqlite-shm"] { try? FileManager.default.removeItem(at: url(name)) }
        return try contents()
    }

    private func contents() throws -> [String: Data] {
        var contents: [String: Data] = [:]
        for name in try directoryListing() { contents[name] = try fileBytes(url(name)) }
        return contents
    }

    func testAnotherApplicationsDatabaseWithAHotWALIsLeftByteForByte() throws {
        let before = try foreignDatabaseWithHotWAL(applicationID: 0x4242)
        XCTAssertEqual(before.keys.sorted(), ["flagship-test.sqlite", "flagship-test.sqlite-wal"])
        XCTAssertGreaterThan(before["flagship-test.sqlite-wal"]?.count ?? 0, 0)

        XCTAssertThrowsError(try openStore()) { error in
            guard case .notAFlagshipDatabase? = error as? StoreError else { return XCTFail("\(error)") }
        }

        XCTAssertEqual(try contents(), before, "the file, its -wal, and no -shm")
    }

    func testADatabaseWithOtherTablesAndNoApplicationIDIsLeftByteForByte() throws {
        let before = try foreignDatabaseWithHotWAL(applicationID: nil)

        XCTAssertThrowsError(try openStore()) { error in
            guard case .notAFlagshipDatabase? = error as? StoreError else { return XCTFail("\(error)") }
        }

        XCTAssertEqual(try contents(), before)
    }

    func testANewerStoreIsLeftByteForByte() throws {
        try writeNewerSchemaDatabase(at: url(), version: 99)
        let before = try contents()

        XCTAssertThrowsError(try openStore()) { error in
            guard case .schemaTooNew? = error as? StoreError else { return XCTFail("\(error)") }
        }

        XCTAssertEqual(try contents(), before)
    }

    /// Garbage where the store's `-wal` should be: SQLite would take it for an empty WAL and
    /// overwrite it. It is moved aside byte for byte, reported, and the store opens.
    func testAGarbageWALBesideTheStoreIsKeptAndReported() throws {
        let store = try openStore()
        try store.write { try $0.hits.insert([.sample("kept")]) }
        store.close()
        let garbage = Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: url("flagship-test.sqlite-wal"))

        let reopened = try openStore()

        let setAside = try XCTUnwrap(reopened.opening.walSetAside, "reported")
        XCTAssertEqual(setAside.reason, "it does not start like a SQLite WAL")
        XCTAssertTrue(setAside.url.lastPathComponent.hasPrefix("flagship-test.sqlite-wal.unreadable-"), setAside.url.path)
        XCTAssertEqual(try fileBytes(setAside.url), garbage, "kept byte for byte")
        XCTAssertEqual(try reopened.read { try $0.hits.all() }.map(\.id), [HitRecord.sample("kept").id])
    }

    /// The `-wal` of another database (pages of another size): kept aside, never replayed into the store.
    func testAnotherDatabasesWALBesideTheStoreIsKeptAndNeverReplayed() throws {
        let store = try openStore()
        try store.write { try $0.hits.insert([.sample("kept")]) }
        store.close()
        let other = try Database(path: url("other.sqlite").path)
        try other.withConnection { connection in
            try connection.query("PRAGMA page_size = 1024")
            try connection.query("PRAGMA journal_mode = WAL")
            csqlite_disable_checkpoint_on_close(connection.handle)
            _ = try connection.execute("CREATE TABLE other (x)")
        }
        let otherWAL = try fileBytes(url("other.sqlite-wal"))
        other.close(checkpoint: false)
        try otherWAL.write(to: url("flagship-test.sqlite-wal"))

        let reopened = try openStore()

        let setAside = try XCTUnwrap(reopened.opening.walSetAside)
        XCTAssertTrue(setAside.reason.contains("its pages are 1024 bytes"), setAside.reason)
        XCTAssertEqual(try fileBytes(setAside.url), otherWAL)
        XCTAssertEqual(try reopened.read { try $0.hits.all() }.map(\.id), [HitRecord.sample("kept").id])
    }

    /// A real WAL of the store (a killed process's) is this store's: replayed, not set aside.
    func testTheStoresOwnHotWALIsReplayed() throws {
        let store = try openStore()
        try store.write { try $0.hits.insert([.sample("in-wal")]) }
        try FileManager.default.copyItem(at: url(), to: url("crashed.sqlite"))
        try FileManager.default.copyItem(at: url("flagship-test.sqlite-wal"), to: url("crashed.sqlite-wal"))
        store.close()

        let crashed = try openStore(at: url("crashed.sqlite"))

        XCTAssertNil(crashed.opening.walSetAside)
        XCTAssertEqual(try crashed.read { try $0.hits.all() }.map(\.id), [HitRecord.sample("in-wal").id])
    }
}
