import FlagshipStore
import Foundation
import XCTest

final class DBInspectTests: CommandTestCase {
    func testInspectJSONIsOneDocumentDescribingTheStore() throws {
        try withStore(StoreFixture.populate)
        let before = Date()

        let result = try flagship("db", "inspect", "--db", storeFile.path, "--json")

        let after = Date()
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        var document = try XCTUnwrap(try parseJSON(result.stdout) as? [String: Any])
        let age = try XCTUnwrap(document.removeValue(forKey: "oldestHitAgeSeconds") as? Int)
        XCTAssertEqual(Double(age), before.timeIntervalSince1970 - 1_732_170_000.123, accuracy: after.timeIntervalSince(before) + 1)
        let expected = """
            {"path": "\(storeFile.path)", "schemaVersion": \(Migrator().latestVersion), "visitors": 2,
             "hits": {"total": 4, "byType": {"EVENT": 2, "ACTIVATE": 1, "PAGEVIEW": 1}},
             "oldestHitCreatedAt": 1732170000123,
             "bucketing": [
                {"envId": "env-a", "lastModified": "Thu, 21 Nov 2024 06:00:00 GMT", "downloadedAt": 1732168800000, "bytes": 33},
                {"envId": "env-b", "lastModified": null, "downloadedAt": 1732168900042, "bytes": 17}]}
            """
        XCTAssertEqual(try canonicalJSON(document), try canonicalJSON(try parseJSON(expected)))
    }

    func testInspectJSONOfAnEmptyStoreHasNoOldestHitAge() throws {
        try withStore { _ in }

        let result = try flagship("db", "inspect", "--db", storeFile.path, "--json")

        XCTAssertEqual(result.status, 0, result.stderr)
        let expected = """
            {"path": "\(storeFile.path)", "schemaVersion": \(Migrator().latestVersion), "visitors": 0,
             "hits": {"total": 0, "byType": {}}, "oldestHitCreatedAt": null, "oldestHitAgeSeconds": null, "bucketing": []}
            """
        XCTAssertEqual(try canonicalJSON(try parseJSON(result.stdout)), try canonicalJSON(try parseJSON(expected)))
    }

    func testInspectTextIsAnAlignedReport() throws {
        try withStore(StoreFixture.populate)

        let result = try flagship("db", "inspect", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.count, 11, result.stdout)
        XCTAssertEqual(Array(lines.prefix(7)), [
            "path            \(storeFile.path)",
            "schema version  \(Migrator().latestVersion)",
            "visitors        2",
            "hits            4",
            "  ACTIVATE      1",
            "  EVENT         2",
            "  PAGEVIEW      1",
        ])
        XCTAssertTrue(lines[7].hasPrefix("oldest hit      "), lines[7])
        XCTAssertTrue(lines[7].hasSuffix(" ago (2024-11-21T06:20:00.123Z)"), lines[7])
        XCTAssertEqual(Array(lines.suffix(3)), [
            "bucketing       env-a: 33 bytes, downloaded 2024-11-21T06:00:00.000Z, Last-Modified Thu, 21 Nov 2024 06:00:00 GMT",
            "                env-b: 17 bytes, downloaded 2024-11-21T06:01:40.042Z, Last-Modified -",
            "",
        ])
    }

    func testInspectRefusesAGarbageFileAndLeavesItUnchanged() throws {
        try writeGarbage(at: storeFile)

        let stderr = try stderrOfFailureLeavingStoreUntouched("db", "inspect", "--db", storeFile.path)

        XCTAssertEqual(stderr, "Error: \(storeFile.path) is not a Flagship database: file is not a database\n")
    }

    func testInspectRefusesAnotherApplicationsSQLiteDatabaseAndLeavesItUnchanged() throws {
        let database = try Database(path: storeFile.path)
        try database.withConnection { connection in
            // The default journal of a database another program made: no -wal file beside it.
            try connection.query("PRAGMA journal_mode = DELETE")
            try connection.execute("CREATE TABLE notes (body TEXT NOT NULL)")
            try connection.execute("INSERT INTO notes (body) VALUES (?)", ["not ours"])
        }
        database.close()

        let stderr = try stderrOfFailureLeavingStoreUntouched("db", "inspect", "--db", storeFile.path, "--json")

        XCTAssertEqual(stderr, "Error: \(storeFile.path) is not a Flagship database: it has no schema_migrations table\n")
    }

    func testInspectOfAMissingFileFailsAndCreatesNothing() throws {
        let stderr = try stderrOfFailureLeavingStoreUntouched("db", "inspect", "--db", storeFile.path)

        XCTAssertEqual(stderr, "Error: no store at \(storeFile.path) (`flagship db migrate --db \(storeFile.path)` creates one)\n")
        XCTAssertEqual(try storeDirectoryListing(), [])
    }
}
