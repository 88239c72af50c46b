import Foundation
import XCTest

import FlagshipStore

/// `openForInspection` reads a file and never changes it, whatever the file is.
final class InspectionTests: StoreTestCase {
    func testInspectionReadsAFlagshipDatabaseWithoutChangingIt() throws {
        let store = try openStore()
        try store.write { try $0.hits.insert([.sample("a"), .sample("b", type: "ACTIVATE")]) }
        try store.write { try $0.visitors.save(.sample("visitor-1")) }
        store.close()
        let before = try fileBytes(url())

        let inspected = try FlagshipDatabase.openForInspection(at: url())
        defer { inspected.close() }

        XCTAssertEqual(inspected.schemaVersion, Migrator().latestVersion)
        XCTAssertEqual(inspected.opening.fromVersion, Migrator().latestVersion)
        XCTAssertNil(inspected.opening.movedAside)
        XCTAssertEqual(try inspected.read { try $0.hits.countByType() }, ["EVENT": 1, "ACTIVATE": 1])
        XCTAssertEqual(try inspected.read { try $0.visitors.visitor(id: "visitor-1") }, .sample("visitor-1"))
        inspected.close()
        XCTAssertEqual(try fileBytes(url()), before)
    }

    func testInspectionRefusesToWrite() throws {
        try openStore().close()
        let before = try fileBytes(url())
        let inspected = try FlagshipDatabase.openForInspection(at: url())
        defer { inspected.close() }

        XCTAssertThrowsError(try inspected.write { try $0.hits.insert([.sample("a")]) }) { error in
            XCTAssertEqual(sqliteError(error)?.code, 8) // SQLITE_READONLY
        }
        XCTAssertThrowsError(try inspected.write { try $0.state.setValue("1", forKey: "first_init", now: fixedNowMilliseconds) })

        inspected.close()
        XCTAssertEqual(try fileBytes(url()), before)
    }

    func testInspectionRefusesGarbageBytesAndLeavesThemUnchanged() throws {
        let garbage = Data((0..<4_096).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) })
        try garbage.write(to: url())

        XCTAssertThrowsError(try FlagshipDatabase.openForInspection(at: url())) { error in
            XCTAssertEqual(error as? StoreError, .notAFlagshipDatabase(path: self.url().path, reason: "file is not a database"))
        }

        XCTAssertEqual(try fileBytes(url()), garbage)
        XCTAssertFalse(try directoryListing().contains { $0.contains(".corrupt-") }, "inspection never moves a file")
    }

    func testInspectionRefusesASQLiteDatabaseThatIsNotAFlagshipStoreAndLeavesItUnchanged() throws {
        let other = try rawDatabase()
        try other.write { connection in
            try connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
            try connection.execute("INSERT INTO notes (body) VALUES (?)", ["someone else's data"])
        }
        other.close()
        let before = try fileBytes(url())

        XCTAssertThrowsError(try FlagshipDatabase.openForInspection(at: url())) { error in
            XCTAssertEqual(error as? StoreError, .notAFlagshipDatabase(path: self.url().path, reason: "it has no schema_migrations table"))
        }

        XCTAssertEqual(try fileBytes(url()), before)
    }

    func testInspectionRefusesATruncatedDatabaseWithoutMovingIt() throws {
        let store = try openStore()
        try store.write { db in try db.hits.insert((0..<500).map { .sample("hit-\($0)") }) }
        store.close()
        try truncateFile(url(), to: try fileBytes(url()).count / 2)
        let before = try fileBytes(url())

        XCTAssertThrowsError(try FlagshipDatabase.openForInspection(at: url())) { error in
            XCTAssertEqual(error as? StoreError, .notAFlagshipDatabase(path: self.url().path, reason: "database disk image is malformed"))
        }

        XCTAssertEqual(try fileBytes(url()), before)
        XCTAssertFalse(try directoryListing().contains { $0.contains(".corrupt-") })
    }

    func testInspectionRefusesANewerSchemaNamingBothVersions() throws {
        let latest = Migrator().latestVersion
        try writeNewerSchemaDatabase(at: url(), version: latest + 1)
        let before = try fileBytes(url())

        XCTAssertThrowsError(try FlagshipDatabase.openForInspection(at: url())) { error in
            XCTAssertEqual(error as? StoreError, .schemaTooNew(path: self.url().path, databaseVersion: latest + 1, latestKnownVersion: latest))
        }

        XCTAssertEqual(try fileBytes(url()), before)
    }

    func testInspectingAMissingFileIsAClearErrorAndCreatesNothing() throws {
        let missing = directory.appendingPathComponent("absent/flagship-env.sqlite")

        XCTAssertThrowsError(try FlagshipDatabase.openForInspection(at: missing)) { error in
            XCTAssertEqual(error as? StoreError, .fileSystem(path: missing.path, reason: "no such file"))
            XCTAssertEqual("\(error)", "\(missing.path): no such file")
        }

        XCTAssertEqual(try directoryListing(), [])
    }
}
