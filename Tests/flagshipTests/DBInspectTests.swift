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
        var files = try XCTUnwrap(document["bucketing"] as? [[String: Any]])
        for index in files.indices {
            let fileAge = try XCTUnwrap(files[index].removeValue(forKey: "ageSeconds") as? Int)
            let downloadedAt = try XCTUnwrap(files[index]["downloadedAt"] as? NSNumber).doubleValue / 1000
            XCTAssertEqual(Double(fileAge), before.timeIntervalSince1970 - downloadedAt, accuracy: after.timeIntervalSince(before) + 1)
        }
        document["bucketing"] = files
        var oldest = try XCTUnwrap(document["oldestSeenVisitor"] as? [String: Any])
        let seenAge = try XCTUnwrap(oldest.removeValue(forKey: "lastSeenAgeSeconds") as? Int)
        XCTAssertEqual(Double(seenAge), before.timeIntervalSince1970 - 1_732_170_001, accuracy: after.timeIntervalSince(before) + 1)
        document["oldestSeenVisitor"] = oldest
        let expected = """
            {"path": "\(storeFile.path)", "schemaVersion": \(Migrator().latestVersion), "visitors": 2,
             "oldestSeenVisitor": {"visitorId": "v1", "lastSeenAt": 1732170001000},
             "dueForPruning": {"retentionSeconds": 2592000, "visitors": 2, "moreThan": false},
             "hits": {"total": 4, "byType": {"EVENT": 2, "ACTIVATE": 1, "PAGEVIEW": 1}}, "deadLetters": 0,
             "oldestHitCreatedAt": 1732170000123,
             "decisions": {"assignments": null, "visitors": null, "unreadableRows": null, "fileVersionsKept": 0},
             "full": false,
             "bucketing": [
                {"envId": "env-a", "lastModified": "Thu, 21 Nov 2024 06:00:00 GMT", "downloadedAt": 1732168800000, "bytes": 33,
                 "campaignCount": 0, "panic": false, "unusableReason": null},
                {"envId": "env-b", "lastModified": null, "downloadedAt": 1732168900042, "bytes": 17,
                 "campaignCount": null, "panic": null, "unusableReason": "it has no \\"campaigns\\" and is not in panic"}]}
            """
        XCTAssertEqual(try canonicalJSON(document), try canonicalJSON(try parseJSON(expected)))
    }

    func testInspectJSONOfAnEmptyStoreHasNoOldestHitAge() throws {
        try withStore { _ in }

        let result = try flagship("db", "inspect", "--db", storeFile.path, "--json")

        XCTAssertEqual(result.status, 0, result.stderr)
        let expected = """
            {"path": "\(storeFile.path)", "schemaVersion": \(Migrator().latestVersion), "visitors": 0,
             "oldestSeenVisitor": null, "dueForPruning": {"retentionSeconds": 2592000, "visitors": 0, "moreThan": false},
             "hits": {"total": 0, "byType": {}}, "deadLetters": 0, "oldestHitCreatedAt": null, "oldestHitAgeSeconds": null,
             "decisions": {"assignments": null, "visitors": null, "unreadableRows": null, "fileVersionsKept": 0}, "bucketing": [],
             "full": false}
            """
        XCTAssertEqual(try canonicalJSON(try parseJSON(result.stdout)), try canonicalJSON(try parseJSON(expected)))
    }

    func testInspectFullCountsRowByRowAndChecksEveryPage() throws {
        try withStore(StoreFixture.populate)

        let result = try flagship("db", "inspect", "--db", storeFile.path, "--json", "--full")

        XCTAssertEqual(result.status, 0, result.stderr)
        let document = try XCTUnwrap(try parseJSON(result.stdout) as? [String: Any])
        XCTAssertEqual(document["full"] as? Bool, true)
        XCTAssertEqual(document["visitors"] as? Int, 2)
        XCTAssertEqual(document["decisions"] as? [String: Int], ["assignments": 0, "visitors": 0, "unreadableRows": 0, "fileVersionsKept": 0])
        let text = try flagship("db", "inspect", "--db", storeFile.path, "--full")
        XCTAssertFalse(text.stdout.contains("pages"), "checked: nothing to say unless damaged")
        XCTAssertTrue(text.stdout.contains("decisions       0 assignment(s) of 0 visitor(s)"), text.stdout)
    }

    func testInspectTextIsAnAlignedReport() throws {
        try withStore(StoreFixture.populate)

        let result = try flagship("db", "inspect", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.count, 17, result.stdout)
        XCTAssertEqual(lines[0], "path            \(storeFile.path)")
        XCTAssertEqual(lines[1], "schema version  \(Migrator().latestVersion)")
        XCTAssertEqual(lines[2], "visitors        2")
        XCTAssertTrue(lines[3].hasPrefix("  oldest seen   "), lines[3])
        XCTAssertTrue(lines[3].hasSuffix(" ago (2024-11-21T06:20:01.000Z): v1"), lines[3])
        XCTAssertEqual(Array(lines[4...9]), [
            "  due to prune  2 not seen for 30d00h (`flagship db prune`)",
            "hits            4",
            "  ACTIVATE      1",
            "  EVENT         2",
            "  PAGEVIEW      1",
            "dead letters    0",
        ])
        XCTAssertTrue(lines[10].hasPrefix("oldest hit      "), lines[10])
        XCTAssertTrue(lines[10].hasSuffix(" ago (2024-11-21T06:20:00.123Z)"), lines[10])
        XCTAssertEqual(lines[11], "decisions       not counted (--full reads them)")
        XCTAssertEqual(lines[12], "file versions   0 kept for replaying them")
        XCTAssertEqual(lines[13], "pages           not checked (--full reads every page)")
        let bucketing = Array(lines.suffix(3))
        XCTAssertTrue(bucketing[0].hasPrefix("bucketing       env-a: 0 campaigns, 33 bytes, downloaded "), bucketing[0])
        XCTAssertTrue(bucketing[0].hasSuffix(" ago (2024-11-21T06:00:00.000Z), Last-Modified Thu, 21 Nov 2024 06:00:00 GMT"), bucketing[0])
        XCTAssertTrue(bucketing[1].hasPrefix(#"                env-b: unusable (it has no "campaigns" and is not in panic), 17 bytes, downloaded "#), bucketing[1])
        XCTAssertTrue(bucketing[1].hasSuffix(" ago (2024-11-21T06:01:40.042Z), Last-Modified -"), bucketing[1])
        XCTAssertEqual(bucketing[2], "")
    }

    func testInspectShowsEachBucketingFilesAgeAndCampaignCount() throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let twoCampaigns = #"{"campaigns": [{"id": "c1", "variationGroups": []}, {"id": "c2", "variationGroups": []}]}"#
        try withStore { store in
            try store.write { try $0.bucketing.save(BucketingRecord(envId: "env-fresh", document: twoCampaigns, lastModified: nil, downloadedAt: now - 90 * 60_000)) }
            try store.write { try $0.bucketing.save(BucketingRecord(envId: "env-one", document: #"{"campaigns": [{"id": "c1"}]}"#, lastModified: nil,
                                                     downloadedAt: now - 3 * 86_400_000)) }
            try store.write { try $0.bucketing.save(BucketingRecord(envId: "env-panic", document: #"{"panic": true}"#, lastModified: nil, downloadedAt: now - 5_000)) }
        }

        let text = try flagship("db", "inspect", "--db", storeFile.path)
        let json = try flagship("db", "inspect", "--db", storeFile.path, "--json")

        XCTAssertEqual(text.status, 0, text.stderr)
        let lines = text.stdout.split(separator: "\n").map(String.init).filter { $0.contains(": ") && $0.contains("downloaded") }
        XCTAssertEqual(lines.count, 3, text.stdout)
        XCTAssertTrue(lines[0].hasPrefix("bucketing       env-fresh: 2 campaigns, 89 bytes, downloaded 1h30m ago ("), lines[0])
        XCTAssertTrue(lines[1].hasPrefix("                env-one: 1 campaign, 29 bytes, downloaded 3d00h ago ("), lines[1])
        XCTAssertTrue(lines[2].hasPrefix("                env-panic: panic, 0 campaigns, 15 bytes, downloaded "), lines[2])
        XCTAssertEqual(json.status, 0, json.stderr)
        let files = try XCTUnwrap((try parseJSON(json.stdout) as? [String: Any])?["bucketing"] as? [[String: Any]])
        XCTAssertEqual(files.map { $0["envId"] as? String }, ["env-fresh", "env-one", "env-panic"])
        XCTAssertEqual(files.map { $0["campaignCount"] as? Int }, [2, 1, 0])
        XCTAssertEqual(files.map { $0["panic"] as? Bool }, [false, false, true])
        let ages = files.compactMap { $0["ageSeconds"] as? Int }
        XCTAssertEqual(ages.count, 3)
        XCTAssertTrue((5_400..<5_460).contains(ages[0]), "\(ages)")
        XCTAssertTrue((259_200..<259_260).contains(ages[1]), "\(ages)")
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

    /// Such a store is still readable, and what it holds helps decide what to do with it: it is
    /// shown, with a warning that the SDK will not use it.
    func testInspectShowsAStoreWhoseStepsAreNotThisBuildsAndWarnsThatTheSDKWillNotUseIt() throws {
        try withStore { store in
            try StoreFixture.populate(store)
            _ = try store.database.write {
                try $0.execute("UPDATE schema_migrations SET checksum = 'fnv1a64:0000000000000000' WHERE version = 2")
            }
        }
        let shipped = Migration.embedded[1]

        let result = try flagship("db", "inspect", "--db", storeFile.path, "--json")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "warning: the SDK will not use this store (it runs with an in-memory cache instead): "
            + "\(storeFile.path) records schema step 2 'hit_delivery' with checksum fnv1a64:0000000000000000, but this build's step 2 "
            + "has checksum \(shipped.checksum): its SQL was edited after the file was migrated. Steps are append-only, so the file "
            + "was left untouched (open it with the build that wrote it, or move it away to start afresh)\n")
        let document = try XCTUnwrap(try parseJSON(result.stdout) as? [String: Any])
        XCTAssertEqual(document["visitors"] as? Int, 2)
        XCTAssertEqual((document["hits"] as? [String: Any])?["total"] as? Int, 4)
    }

    func testInspectOfAMissingFileFailsAndCreatesNothing() throws {
        let stderr = try stderrOfFailureLeavingStoreUntouched("db", "inspect", "--db", storeFile.path)

        XCTAssertEqual(stderr, "Error: no store at \(storeFile.path) (`flagship db migrate --db \(storeFile.path)` creates one)\n")
        XCTAssertEqual(try storeDirectoryListing(), [])
    }
}
