import FlagshipStore
import Foundation
import XCTest

/// `flagship db prune`: the SDK's retention by hand, and its dry run.
final class DBPruneTests: CommandTestCase {
    /// The fixture's two visitors (written in 2024), one seen now, and a decision of `v1`.
    private func populate(_ store: FlagshipDatabase) throws {
        try StoreFixture.populate(store)
        var recent = StoreFixture.visitors[1]
        recent.visitorId = "recent"
        recent.document = recent.document.replacingOccurrences(of: #""v2""#, with: #""recent""#)
        recent.updatedAt = Date().unixMilliseconds
        try store.write { db in
            try db.visitors.save(recent)
            try db.decisions.insert([DecisionRecord(
                visitorId: "v1", decidedAt: 1_732_170_001_000, campaignId: "c1", variationGroupId: "vg1", variationId: "var1",
                source: .bucketingFile, reason: "SPLIT", fileVersion: nil, context: "{}", flags: "{}")])
        }
    }

    private func storeFiles() throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try storeDirectoryListing() {
            files[name] = try Data(contentsOf: storeDirectory.appendingPathComponent(name))
        }
        return files
    }

    private func visitorIds() throws -> [String] {
        let store = try FlagshipDatabase.openForInspection(at: storeFile)
        defer { store.close() }
        return try store.read { try $0.visitors.visitors() }.map(\.visitorId).sorted()
    }

    func testDryRunCountsWhatWouldBeDeletedAndChangesNothing() throws {
        try withStore(populate)
        let before = try storeFiles()

        let result = try flagship("db", "prune", "--db", storeFile.path, "--dry-run", "--max-visitors", "0")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout,
                       "would delete 2 visitor(s) not seen for 30d00h and 1 visitor(s) beyond --max-visitors 0 of 3; nothing was changed (--dry-run)\n")
        XCTAssertEqual(try storeFiles(), before, "not a byte changed, nothing created beside the file")
    }

    func testPruneDeletesTheVisitorsNotSeenWithTheirDecisionsAndSaysWhatItDid() throws {
        try withStore(populate)

        let result = try flagship("db", "prune", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, result.stdout)
        XCTAssertTrue(lines[0].hasPrefix("deleted 2 visitor(s) not seen for 30d00h, with 1 decision row(s), in 1 transaction(s), "), lines[0])
        XCTAssertNotNil(lines[0].range(of: #"; the longest held the write lock \d+\.\d ms$"#, options: .regularExpression), lines[0])
        XCTAssertTrue(lines[1].hasPrefix("gave back "), lines[1])
        XCTAssertEqual(try visitorIds(), ["recent"])
        let store = try FlagshipDatabase.openForInspection(at: storeFile)
        defer { store.close() }
        XCTAssertEqual(try store.read { try $0.decisions.visitorCount() }, 0)
    }

    /// Another process reads the file while it is pruned: the last checkpoint cannot finish, the
    /// file keeps its size, and the prune says so rather than that it gave the pages back.
    func testPagesFreedWhileAnotherProcessReadsAreNotSaidToBeGivenBack() throws {
        try withStore { store in
            try populate(store)
            let padding = String(repeating: "x", count: 2_000)
            try store.write { db in
                try db.visitors.save((0..<500).map { number in
                    var old = StoreFixture.visitors[0]
                    old.visitorId = "old-\(number)"
                    old.document = old.document.replacingOccurrences(of: #""age": 32"#, with: #""age": 32, "note": "\#(padding)""#)
                    return old
                })
            }
        }
        let reader = try Database(path: storeFile.path, options: DatabaseOptions(readOnly: true))
        defer { reader.close() }
        try reader.withConnection { connection in
            try connection.execute("BEGIN")
            _ = try connection.scalar("SELECT count(*) FROM visitors")
        }
        let sizeBefore = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: storeFile.path)[.size] as? NSNumber).int64Value

        let result = try flagship("db", "prune", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines[0].hasPrefix("deleted 502 visitor(s) not seen for 30d00h"), lines[0])
        XCTAssertTrue(lines[1].hasPrefix("freed ") && lines[1].contains("inside the file, which keeps its size for now"), lines[1])
        let sizeAfter = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: storeFile.path)[.size] as? NSNumber).int64Value
        XCTAssertGreaterThanOrEqual(sizeAfter, sizeBefore, "the file did not shrink: the line says so")
        try reader.withConnection { try $0.execute("COMMIT") }
    }

    func testARetentionGivenInSecondsAndABudgetDeleteTheLeastRecentlySeenFirst() throws {
        try withStore(populate)

        let result = try flagship("db", "prune", "--db", storeFile.path, "--retention", "0", "--max-visitors", "2")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("deleted 1 visitor(s) beyond --max-visitors 2, with 1 decision row(s), in 1 transaction(s), "),
                      result.stdout)
        XCTAssertEqual(try visitorIds(), ["recent", "v2"])
    }

    /// Every visitor of a store whose indexes keyed by visitor id have hundreds of leaves is due:
    /// the prune reads those leaves beside its batches, and says how many.
    func testAPruneOfAsManyVisitorsAsTheIndexesHaveLeavesSaysWhatItReadAhead() throws {
        try withStore { store in
            try store.write { db in
                try db.execute(
                    """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
                    INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at)
                    SELECT 'visitor-' || lower(hex(randomblob(8))), NULL, 1, '{"version":1,"data":{}}', 1732170000000 + i, NULL FROM n
                    """
                )
                try db.execute("INSERT INTO decisions (visitor_id, decided_at, source, assignments) SELECT visitor_id, updated_at, 'unknown', '[]' FROM visitors")
            }
        }
        let inspected = try FlagshipDatabase.openForInspection(at: storeFile)
        let leaves = try inspected.database.withConnection { db in
            try db.scalar("SELECT count(*) FROM dbstat WHERE name IN ('sqlite_autoindex_visitors_1', 'decisions_by_visitor') AND pagetype = 'leaf'")
        }?.int64
        inspected.close()
        XCTAssertGreaterThan(try XCTUnwrap(leaves), 2 * Int64(FlagshipDatabase.pruneReadAheadMinimumLeaves))

        let result = try flagship("db", "prune", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines[0].hasPrefix("deleted 40000 visitor(s) not seen for 30d00h, with 40000 decision row(s), in 81 transaction(s), "), lines[0])
        let readAhead = try XCTUnwrap(lines.first { $0.hasPrefix("read ahead ") }, result.stdout)
        XCTAssertNotNil(readAhead.range(of: #"^read ahead \d+ of the \#(leaves!) leaf page\(s\) of the indexes keyed by visitor id, "#,
                                         options: .regularExpression), readAhead)
        XCTAssertEqual(try visitorIds(), [])
    }

    func testANegativeRetentionIsRefusedLeavingTheStoreUntouched() throws {
        try withStore(populate)

        let stderr = try stderrOfFailureLeavingStoreUntouched("db", "prune", "--db", storeFile.path, "--retention=-5")

        XCTAssertTrue(stderr.contains("--retention must be a number of seconds, 0 or more"), stderr)
    }

    func testMigratingAVersionThreeFileSwitchesItToIncrementalAutoVacuumAndSaysSo() throws {
        let database = try Database(path: storeFile.path)
        _ = try Migrator().migrate(database, upTo: 3)
        XCTAssertEqual(try database.withConnection { try $0.scalar("PRAGMA auto_vacuum")?.int64 }, 0)
        database.close()

        let result = try flagship("db", "migrate", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, """
            schema version \(Migrator().latestVersion) (migrated from 3)
            switched to incremental auto-vacuum: the file was rewritten once, so that space pruned visitors free is given back

            """)
        let store = try FlagshipDatabase.openForInspection(at: storeFile)
        defer { store.close() }
        XCTAssertEqual(try store.autoVacuumMode(), .incremental)
    }

    func testInspectCountsTheVisitorsDueUnderTheRetentionGiven() throws {
        try withStore(populate)

        let result = try flagship("db", "inspect", "--db", storeFile.path, "--retention", "0", "--json")

        XCTAssertEqual(result.status, 0, result.stderr)
        let document = try XCTUnwrap(try parseJSON(result.stdout) as? [String: Any])
        XCTAssertEqual(try canonicalJSON(try XCTUnwrap(document["dueForPruning"])),
                       try canonicalJSON(["retentionSeconds": NSNull(), "visitors": 0, "moreThan": false]))
    }
}
