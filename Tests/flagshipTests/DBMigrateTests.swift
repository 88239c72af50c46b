import FlagshipStore
import Foundation
import XCTest

final class DBMigrateTests: CommandTestCase {
    private let latest = Migrator().latestVersion

    func testMigrateCreatesTheStoreAndPrintsTheSchemaVersion() throws {
        let file = storeDirectory.appendingPathComponent("nested/flagship-env.sqlite")

        let result = try flagship("db", "migrate", "--db", file.path)

        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.stdout, "schema version \(latest) (migrated from 0)\n")
        XCTAssertEqual(result.stderr, "")
        let store = try FlagshipDatabase.openForInspection(at: file)
        defer { store.close() }
        XCTAssertEqual(store.schemaVersion, latest)
    }

    func testMigratingTwiceChangesNothingTheSecondTime() throws {
        XCTAssertEqual(try flagship("db", "migrate", "--db", storeFile.path).status, 0)
        try withStore { store in try store.write { try $0.visitors.save(StoreFixture.visitors[0]) } }

        let result = try flagship("db", "migrate", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.stdout, "already at schema version \(latest)\n")
        XCTAssertEqual(result.stderr, "")
        let store = try FlagshipDatabase.openForInspection(at: storeFile)
        defer { store.close() }
        XCTAssertEqual(try store.read { try $0.visitors.visitors() }, [StoreFixture.visitors[0]])
    }

    func testMigrateMovesAGarbageFileAsideSaysWhereAndCreatesAFreshStore() throws {
        let garbage = try writeGarbage(at: storeFile)

        let result = try flagship("db", "migrate", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.stdout, "schema version \(latest) (migrated from 0)\n")
        let movedNames = try storeDirectoryListing().filter { $0.hasPrefix("flagship-env.sqlite.corrupt-") }
        XCTAssertEqual(movedNames.count, 1)
        let moved = storeDirectory.appendingPathComponent(try XCTUnwrap(movedNames.first))
        XCTAssertEqual(
            result.stderr,
            "warning: \(storeFile.path) was damaged (file is not a database): moved it aside to \(moved.path) and created a new store\n"
                + "warning: nothing could be copied from the damaged file: SQLite error 26 (file is not a database): file is not a database [statement: SELECT count(*) FROM sqlite_master]\n"
        )
        XCTAssertEqual(try Data(contentsOf: moved), garbage)
        let store = try FlagshipDatabase.openForInspection(at: storeFile)
        defer { store.close() }
        XCTAssertEqual(store.schemaVersion, latest)
    }

    func testMigrateRefusesANewerSchemaNamingBothVersionsAndLeavesTheFile() throws {
        let future = Migration(version: latest + 1, name: "future", sql: "CREATE TABLE future_things (id INTEGER PRIMARY KEY);")
        try FlagshipDatabase.open(at: storeFile, migrator: Migrator(migrations: Migration.embedded + [future])).close()

        let stderr = try stderrOfFailureLeavingStoreUntouched("db", "migrate", "--db", storeFile.path)

        XCTAssertTrue(stderr.contains("has schema version \(latest + 1), newer than version \(latest)"), stderr)
    }

    func testMigrateRefusesAStoreWhoseStepsAreNotThisBuildsAndLeavesItUntouched() throws {
        try withStore { store in
            _ = try store.database.write { try $0.execute("UPDATE schema_migrations SET name = 'initial' WHERE version = 1") }
        }

        let stderr = try stderrOfFailureLeavingStoreUntouched("db", "migrate", "--db", storeFile.path)

        XCTAssertEqual(stderr, "Error: \(storeFile.path) records schema step 1 as 'initial', but this build's step 1 is 'initial_schema': "
            + "a migration was renamed or replaced after the file was migrated. Steps are append-only, so the file was left untouched "
            + "(open it with the build that wrote it, or move it away to start afresh)\n")
    }

    func testMigrateRefusesAnotherApplicationsDatabaseAndLeavesItUntouched() throws {
        let other = try Database(path: storeFile.path)
        try other.write { connection in
            try connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
            try connection.execute("INSERT INTO notes (body) VALUES (?)", ["someone else's data"])
        }
        other.close()

        let stderr = try stderrOfFailureLeavingStoreUntouched("db", "migrate", "--db", storeFile.path)

        XCTAssertEqual(stderr, "Error: \(storeFile.path) is not a Flagship database: it holds other tables (notes) and no schema_migrations table\n")
    }
}
