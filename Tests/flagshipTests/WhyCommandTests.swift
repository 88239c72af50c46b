import FlagshipStore
import Foundation
import XCTest

/// `flagship eval --explain` and `flagship why`: decisions explained, and the store's recorded
/// decisions shown and replayed. The store is written by the SDK itself (`fetch`, bucketing mode
/// on a bootstrap file: no server).
final class WhyCommandTests: CommandTestCase {
    private var bootstrap: String {
        outputDirectory.appendingPathComponent("bootstrap.json").path
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try Data(FlagsCommandTests.fixture.utf8).write(to: URL(fileURLWithPath: bootstrap))
    }

    /// `fetch` for each visitor, deciding on the bootstrap file and recording the decisions.
    private func decide(_ visitors: [String], context: String = #"{"isVip": true}"#) throws {
        for visitor in visitors {
            let result = try FlagshipExecutable.run(
                ["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", visitor, "--db", storeFile.path,
                 "--mode", "bucketing", "--bootstrap", bootstrap, "--context", context, "--bucketing-url", Self.nowhere,
                 "--decision-url", Self.nowhere, "--events-url", Self.nowhere],
                outputDirectory: outputDirectory)
            XCTAssertEqual(result.status, 0, result.stderr)
        }
    }

    /// A port nothing listens on: no file is downloaded, the bootstrap decides; hits wait in the store.
    private static let nowhere = "http://127.0.0.1:1"

    private var version: String { Self.sha256(FlagsCommandTests.fixture) }

    private static func sha256(_ text: String) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try? process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        return String(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).prefix(64))
    }

    func testEvalExplainShowsEachConditionTheBucketAndWhatDecided() throws {
        let result = try flagship("eval", "--bucketing-file", bootstrap, "--visitor-id", "alice", "--context", #"{"isVip": false}"#, "--explain")

        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "visitor alice, bucketing file \(version.prefix(12))")
        XCTAssertTrue(lines.contains { $0.hasPrefix("  campaign c_checkout (ab): allocation -> vg_all / v_") }, result.stdout)
        XCTAssertTrue(lines.contains { $0.contains("bucket: murmur3 ") && $0.contains("% 100 = ") && $0.contains("'s range") }, result.stdout)
        XCTAssertTrue(lines.contains("      ranges: v_blue [0, 50), v_green [50, 100)"), result.stdout)
        XCTAssertTrue(lines.contains("  campaign c_shipping (toggle): targeting miss"), result.stdout)
        XCTAssertTrue(lines.contains("        [ ] isVip EQUALS true  (context: false)"), result.stdout)
    }

    func testEvalExplainJSONAddsTheExplanationToEachLine() throws {
        let result = try flagship("eval", "--bucketing-file", bootstrap, "--visitor-id", "alice", "--context", #"{"isVip": true}"#,
                                  "--explain", "--json")

        XCTAssertEqual(result.status, 0, result.stderr)
        let line = try XCTUnwrap(try parseJSON(result.stdout) as? [String: Any])
        let explanation = try XCTUnwrap(line["explanation"] as? [String: Any])
        XCTAssertEqual(explanation["fileVersion"] as? String, version)
        let campaigns = try XCTUnwrap(explanation["campaigns"] as? [[String: Any]])
        XCTAssertEqual(campaigns.map { $0["decidedBy"] as? String }, ["allocation", "allocation"])
        let condition = (((campaigns[1]["variationGroups"] as? [[String: Any]])?.first?["targetingGroups"] as? [[String: Any]])?
            .first?["conditions"] as? [[String: Any]])?.first
        XCTAssertEqual(condition?["key"] as? String, "isVip")
        XCTAssertEqual(condition?["contextValue"] as? Bool, true)
        XCTAssertEqual(condition?["matched"] as? Bool, true)

        let refused = try flagship("eval", "--bucketing-file", bootstrap, "--visitor-id", "alice", "--json")
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("--json goes with --explain"), refused.stderr)
    }

    func testWhyListsTheVisitorsDecisionsPerFlagAndReplaysThem() throws {
        try decide(["alice", "bob"])

        let result = try flagship("why", "--db", storeFile.path, "--visitor-id", "alice", "--replay")

        XCTAssertEqual(result.status, 0, result.stderr)
        let rows = result.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        XCTAssertEqual(rows.first, ["DECIDED", "(UTC)", "FLAG", "CAMPAIGN", "VARIATION", "REASON", "SOURCE", "FILE", "VERSION", "REPLAY"])
        XCTAssertEqual(rows.dropFirst().map { $0[1] }, ["banner", "btnColor", "discount", "discount", "freeShipping"].filter { key in
            rows.dropFirst().contains { $0[1] == key }
        }, "one line per flag")
        XCTAssertTrue(rows.dropFirst().allSatisfy { $0.contains(String(version.prefix(12))) && $0.last == "agrees" }, result.stdout)
        XCTAssertTrue(rows.dropFirst().allSatisfy { $0[5] == "bootstrap" }, result.stdout)
        XCTAssertTrue(rows.contains { $0.contains("freeShipping") && $0.contains("TARGETING_MATCH") == false && $0.contains("STATIC") },
                      "decided on the bootstrap: STATIC\n\(result.stdout)")

        let onlyShipping = try flagship("why", "--db", storeFile.path, "--visitor-id", "alice", "--flag", "freeShipping")
        XCTAssertEqual(onlyShipping.stdout.split(separator: "\n").count, 2, onlyShipping.stdout)
        XCTAssertTrue(onlyShipping.stdout.contains("c_shipping"), onlyShipping.stdout)
    }

    func testWhyJSONAndExplainCarryTheRecordedContextAndTheSteps() throws {
        try decide(["carol"], context: #"{"isVip": true, "plan": "pro"}"#)

        let result = try flagship("why", "--db", storeFile.path, "--visitor-id", "carol", "--json", "--replay", "--explain")

        XCTAssertEqual(result.status, 0, result.stderr)
        let rows = try XCTUnwrap(try parseJSON(result.stdout) as? [[String: Any]])
        XCTAssertEqual(rows.map { $0["campaignId"] as? String }, ["c_checkout", "c_shipping"])
        XCTAssertEqual(rows.map { ($0["replay"] as? [String: Any])?["outcome"] as? String }, ["agrees", "agrees"])
        XCTAssertEqual((rows[0]["context"] as? [String: Any])?["plan"] as? String, "pro")
        XCTAssertEqual(rows[0]["fileVersion"] as? String, version)
        let explained = try XCTUnwrap((rows[1]["explanation"] as? [String: Any])?["campaigns"] as? [[String: Any]])
        XCTAssertEqual(explained.map { $0["campaignId"] as? String }, ["c_shipping"], "the decision's campaign only")

        let text = try flagship("why", "--db", storeFile.path, "--visitor-id", "carol", "--explain")
        XCTAssertTrue(text.stdout.contains("[x] isVip EQUALS true  (context: true)"), text.stdout)
    }

    func testReplayingTheWholeStoreCountsAgreementsAndATamperedDecisionFailsTheCommand() throws {
        try decide((0..<30).map { "visitor-\($0)" })

        let clean = try flagship("why", "--db", storeFile.path, "--replay")
        XCTAssertEqual(clean.status, 0, clean.stderr)
        XCTAssertTrue(clean.stdout.hasPrefix("60 decision(s) replayed in "), clean.stdout)
        XCTAssertTrue(clean.stdout.contains(": 60 agree, 0 disagree (agreement 100.00 %)"), clean.stdout)

        // One recorded variation changed by hand, one version dropped: the replay says so. A
        // decision of a file is a compact row: its assignment refers to a shared variation, so
        // the hand edit points it at the other variation of the group.
        try withStore { store in
            try store.write { db in
                let flipped = """
                    json_set(s.entry, '$.variationId', CASE json_extract(s.entry, '$.variationId') WHEN 'v_blue' THEN 'v_green' ELSE 'v_blue' END)
                    """
                _ = try db.execute("""
                    INSERT OR IGNORE INTO shared_variations (entry)
                    SELECT \(flipped) FROM decisions AS d, json_each(d.assignments) AS a
                    JOIN shared_variations AS s ON s.id = json_extract(a.value, '$[0]')
                    WHERE d.visitor_id = 'visitor-7' AND json_extract(s.entry, '$.variationGroupId') = 'vg_all'
                    """)
                XCTAssertEqual(try db.execute("""
                    UPDATE decisions SET assignments = (
                        SELECT json_group_array(CASE WHEN json_extract(s.entry, '$.variationGroupId') = 'vg_all'
                            THEN json_array((SELECT t.id FROM shared_variations AS t WHERE t.entry = \(flipped)), json_extract(a.value, '$[1]'))
                            ELSE json(a.value) END)
                        FROM json_each(decisions.assignments) AS a JOIN shared_variations AS s ON s.id = json_extract(a.value, '$[0]'))
                    WHERE visitor_id = 'visitor-7'
                    """), 1)
                _ = try db.execute("UPDATE decisions SET file_version = '\(String(repeating: "0", count: 64))' WHERE visitor_id = 'visitor-8'")
            }
        }
        let tampered = try flagship("why", "--db", storeFile.path, "--replay", "--json")
        XCTAssertEqual(tampered.status, 1, tampered.stderr)
        let summary = try XCTUnwrap(try parseJSON(tampered.stdout) as? [String: Any])
        XCTAssertEqual(summary["replayed"] as? Int, 58)
        XCTAssertEqual(summary["disagree"] as? Int, 1)
        XCTAssertEqual(summary["notReplayable"] as? [String: Int], ["file version no longer kept": 2])
        let disagreement = try XCTUnwrap((summary["disagreements"] as? [[String: Any]])?.first)
        XCTAssertEqual(disagreement["visitorId"] as? String, "visitor-7")
    }

    /// The evidence is checked before it is used: a kept file edited after the fact no longer
    /// hashes to its version, and nothing is replayed on it (exit 2, distinct from a disagreement);
    /// a version must match whole, so a prefix or an empty version finds no file.
    func testAKeptFileEditedAfterTheFactIsTamperedAndAPartialVersionFindsNoFile() throws {
        try decide(["visitor-1", "visitor-2", "visitor-3"])
        try withStore { store in
            try store.write { db in
                _ = try db.execute("UPDATE decisions SET file_version = substr(file_version, 1, 12) WHERE visitor_id = 'visitor-2'")
                _ = try db.execute("UPDATE decisions SET file_version = '' WHERE visitor_id = 'visitor-3'")
            }
        }
        let partial = try flagship("why", "--db", storeFile.path, "--replay", "--json")
        XCTAssertEqual(partial.status, 0, partial.stderr)
        let before = try XCTUnwrap(try parseJSON(partial.stdout) as? [String: Any])
        XCTAssertEqual(before["agree"] as? Int, 2, "visitor-1's two decisions")
        XCTAssertEqual(before["notReplayable"] as? [String: Int],
                       ["file version no longer kept": 2, "file version not recorded": 2])

        // The kept file edited: still JSON, still a bucketing file, no longer the bytes that decided.
        try withStore { store in
            try store.write { db in
                XCTAssertEqual(try db.execute("UPDATE bucketing_files SET document = document || ' '"), 1)
            }
        }
        let tampered = try flagship("why", "--db", storeFile.path, "--replay", "--json")
        XCTAssertEqual(tampered.status, 2, tampered.stderr)
        XCTAssertTrue(tampered.stderr.contains("no longer hash to its version"), tampered.stderr)
        let after = try XCTUnwrap(try parseJSON(tampered.stdout) as? [String: Any])
        XCTAssertEqual(after["replayed"] as? Int, 0)
        XCTAssertEqual((after["notReplayable"] as? [String: Int])?["file version tampered with (its kept bytes do not hash to it)"], 2)

        let oneVisitor = try flagship("why", "--db", storeFile.path, "--visitor-id", "visitor-1", "--replay")
        XCTAssertEqual(oneVisitor.status, 2, oneVisitor.stderr)
        XCTAssertTrue(oneVisitor.stdout.contains("not replayable (file version tampered with"), oneVisitor.stdout)
    }

    func testInspectCountsTheRecordedDecisionsAndKeptVersions() throws {
        try decide(["dan", "eve"])

        let result = try flagship("db", "inspect", "--db", storeFile.path, "--json", "--full")

        XCTAssertEqual(result.status, 0, result.stderr)
        let decisions = (try parseJSON(result.stdout) as? [String: Any])?["decisions"] as? [String: Int]
        XCTAssertEqual(decisions, ["assignments": 4, "visitors": 2, "unreadableRows": 0, "fileVersionsKept": 1])
    }

    /// One `decisions` row cut short (its JSON ends mid-way: a hand edit past the schema's checks,
    /// a damaged page) used to fail the whole replay and `db inspect`. It is named and skipped.
    func testARowThatCannotBeReadIsNamedAndSkippedByWhyReplayAndInspect() throws {
        try decide(["visitor-1", "visitor-2", "visitor-3"])
        try withStore { store in
            try store.database.withConnection { connection in
                try connection.query("PRAGMA ignore_check_constraints = ON")
                XCTAssertEqual(try connection.execute(
                    "UPDATE decisions SET assignments = substr(assignments, 1, length(assignments) - 3) WHERE visitor_id = 'visitor-2'"), 1)
                try connection.query("PRAGMA ignore_check_constraints = OFF")
            }
        }

        let replay = try flagship("why", "--db", storeFile.path, "--replay", "--json")
        XCTAssertEqual(replay.status, 0, replay.stderr)
        let summary = try XCTUnwrap(try parseJSON(replay.stdout) as? [String: Any])
        XCTAssertEqual(summary["replayed"] as? Int, 4, "the other two visitors' decisions")
        XCTAssertEqual(summary["agree"] as? Int, 4)
        let skipped = try XCTUnwrap(summary["unreadableRows"] as? [[String: Any]])
        XCTAssertEqual(skipped.count, 1)
        XCTAssertEqual(skipped.first?["rowId"] as? Int, 2)
        XCTAssertTrue(replay.stderr.contains("warning: 1 decision row(s) could not be read and were skipped: row 2 ("), replay.stderr)

        let visitor = try flagship("why", "--db", storeFile.path, "--visitor-id", "visitor-2")
        XCTAssertEqual(visitor.status, 0, visitor.stderr)
        XCTAssertEqual(visitor.stdout, "no decision recorded for visitor visitor-2\n")
        XCTAssertTrue(visitor.stderr.contains("1 decision row(s) could not be read and were skipped: row 2 ("), visitor.stderr)
        let other = try flagship("why", "--db", storeFile.path, "--visitor-id", "visitor-3", "--replay")
        XCTAssertEqual(other.status, 0, other.stderr)
        XCTAssertEqual(other.stderr, "")

        let inspect = try flagship("db", "inspect", "--db", storeFile.path, "--json", "--full")
        XCTAssertEqual(inspect.status, 0, inspect.stderr)
        let decisions = (try parseJSON(inspect.stdout) as? [String: Any])?["decisions"] as? [String: Int]
        XCTAssertEqual(decisions, ["assignments": 4, "visitors": 3, "unreadableRows": 1, "fileVersionsKept": 1])
        let text = try flagship("db", "inspect", "--db", storeFile.path, "--full")
        XCTAssertTrue(text.stdout.contains("  unreadable") && text.stdout.contains("1 row(s) (`flagship why` skips them, naming them)"),
                      text.stdout)
    }

    func testAStoreWithoutDecisionsAndAMissingVisitorAreSaidPlainly() throws {
        try withStore { _ in }

        let none = try flagship("why", "--db", storeFile.path, "--visitor-id", "nobody")
        XCTAssertEqual(none.status, 0, none.stderr)
        XCTAssertEqual(none.stdout, "no decision recorded for visitor nobody\n")

        let refused = try flagship("why", "--db", storeFile.path)
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("give --visitor-id, or --replay"), refused.stderr)
    }
}
