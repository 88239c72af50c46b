import Foundation
import XCTest

final class EvalCommandTests: CommandTestCase {
    /// Two campaigns: an A/B test whose group id makes the hash of `visitor_1` a known vector
    /// (murmur3("123visitor_1") = 3635969351, 51 modulo 100: past the first half), and one
    /// targeting a context value of each kind.
    private static let fixture = #"""
        {"panic": false, "accountSettings": {"enabledXPC": true},
         "campaigns": [
          {"id": "c-ab", "name": "A/B", "type": "ab",
           "variationGroups": [
            {"id": "123", "targeting": {"targetingGroups": [{"targetings": [{"key": "fs_all_users", "operator": "EQUALS", "value": ""}]}]},
             "variations": [
              {"id": "v-a", "reference": true, "allocation": 50, "modifications": {"type": "FLAG", "value": {"color": "a"}}},
              {"id": "v-b", "allocation": 50, "modifications": {"type": "FLAG", "value": {"color": "b"}}}]}]},
          {"id": "c-kinds", "type": "toggle",
           "variationGroups": [
            {"id": "vg-kinds", "targeting": {"targetingGroups": [{"targetings": [
               {"key": "plan", "operator": "EQUALS", "value": "PRO"},
               {"key": "age", "operator": "GREATER_THAN", "value": 30},
               {"key": "ratio", "operator": "GREATER_THAN_OR_EQUALS", "value": 0.5},
               {"key": "isVip", "operator": "EQUALS", "value": true}]}]},
             "variations": [
              {"id": "v-kinds", "allocation": 100,
               "modifications": {"type": "JSON", "value": {"color": "gold", "discount": 10, "extras": {"tags": ["x", null]}}}}]}]}]}
        """#

    private func write(_ text: String, name: String = "bucketing.json") throws -> String {
        let url = outputDirectory.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    func testOneVisitorGetsTheHashedVariationAsOneLineOfSortedJSON() throws {
        let file = try write(Self.fixture)

        let result = try flagship("eval", "--bucketing-file", file, "--visitor-id", "visitor_1")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        XCTAssertEqual(result.stdout, #"""
            {"campaigns":[{"campaignId":"c-ab","variationGroupId":"123","variationId":"v-b"}],"flags":{"color":"b"},"panic":false,"visitorId":"visitor_1"}

            """#)
    }

    func testContextOfEveryKindMatchesAndTheLaterCampaignsFlagsWin() throws {
        let file = try write(Self.fixture)

        let result = try flagship("eval", "--bucketing-file", file, "--visitor-id", "visitor_1",
                                  "--context", #"{"plan": "pro", "age": 31, "ratio": 0.5, "isVip": true}"#)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, """
            {"campaigns":[{"campaignId":"c-ab","variationGroupId":"123","variationId":"v-b"},\
            {"campaignId":"c-kinds","variationGroupId":"vg-kinds","variationId":"v-kinds"}],\
            "flags":{"color":"gold","discount":10,"extras":{"tags":["x",null]}},"panic":false,"visitorId":"visitor_1"}

            """)
    }

    func testOneContextValueOffTargetLeavesTheCampaignOut() throws {
        let file = try write(Self.fixture)

        let result = try flagship("eval", "--bucketing-file", file, "--visitor-id", "visitor_1",
                                  "--context", #"{"plan": "pro", "age": 31, "ratio": 0.5, "isVip": "true"}"#)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertFalse(result.stdout.contains("c-kinds"), "a string never equals a boolean: \(result.stdout)")
    }

    func testHistoryKeepsTheVisitorsEarlierVariation() throws {
        let file = try write(Self.fixture)

        let result = try flagship("eval", "--bucketing-file", file, "--visitor-id", "visitor_1", "--history", #"{"123": "v-a"}"#)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, #"""
            {"campaigns":[{"campaignId":"c-ab","variationGroupId":"123","variationId":"v-a"}],"flags":{"color":"a"},"panic":false,"visitorId":"visitor_1"}

            """#)
    }

    func testVisitorsFileGivesOneLinePerVisitorInOrderSkippingBlankLines() throws {
        let file = try write(Self.fixture)
        let visitors = try write("visitor_1\n\n   \nalice\r\nbob\n", name: "visitors.txt")

        let result = try flagship("eval", "--bucketing-file", file, "--visitors-file", visitors)

        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, result.stdout)
        let decoded = try lines.map { try XCTUnwrap(try parseJSON($0) as? [String: Any]) }
        XCTAssertEqual(decoded.map { $0["visitorId"] as? String }, ["visitor_1", "alice", "bob"])
        XCTAssertEqual(lines[0], #"{"campaigns":[{"campaignId":"c-ab","variationGroupId":"123","variationId":"v-b"}],"flags":{"color":"b"},"panic":false,"visitorId":"visitor_1"}"#)
        for visitor in decoded {
            let variation = try XCTUnwrap((visitor["campaigns"] as? [[String: String]])?.first?["variationId"])
            XCTAssertEqual(visitor["flags"] as? [String: String], ["color": variation == "v-a" ? "a" : "b"])
        }
    }

    func testAPanicFileGivesNoCampaignAndNoFlag() throws {
        let file = try write(#"{"panic": true}"#)

        let result = try flagship("eval", "--bucketing-file", file, "--visitor-id", "v")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, #"{"campaigns":[],"flags":{},"panic":true,"visitorId":"v"}"# + "\n")
    }

    func testWhatTheEngineSkipsIsReportedOnStderr() throws {
        let file = try write(#"{"campaigns": [{"name": "no id"}]}"#)

        let result = try flagship("eval", "--bucketing-file", file, "--visitor-id", "v")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, #"{"campaigns":[],"flags":{},"panic":false,"visitorId":"v"}"# + "\n")
        XCTAssertTrue(result.stderr.hasPrefix("warning: \(file): campaign #1 has no \"id\""), result.stderr)
    }

    func testAFileThatIsNotABucketingFileFailsSayingWhy() throws {
        let notJSON = try write("<html>", name: "page.html")
        let notBucketing = try write(#"{"campaigns": {"id": "c1"}}"#, name: "object.json")
        let missing = outputDirectory.appendingPathComponent("missing.json").path

        let results = try [notJSON, notBucketing, missing].map { try flagship("eval", "--bucketing-file", $0, "--visitor-id", "v") }

        XCTAssertEqual(results.map(\.status), [1, 1, 1])
        XCTAssertEqual(results.map(\.stdout), ["", "", ""])
        XCTAssertTrue(results[0].stderr.hasPrefix("Error: \(notJSON) is not a usable bucketing file: the document (6 bytes) is not valid JSON"), results[0].stderr)
        XCTAssertEqual(results[1].stderr, "Error: \(notBucketing) is not a usable bucketing file: \"campaigns\" is not a list\n")
        XCTAssertTrue(results[2].stderr.hasPrefix("Error: cannot read the bucketing file \(missing): "), results[2].stderr)
    }

    func testBadContextHistoryOrVisitorOptionsAreRefusedWithTheReason() throws {
        let file = try write(Self.fixture)
        let cases: [([String], String)] = [
            (["--visitor-id", "v", "--context", "[1]"], "--context must be a JSON object"),
            (["--visitor-id", "v", "--context", #"{"tags": ["a"]}"#], #"--context: the value of "tags" must be a string, a number or a boolean"#),
            (["--visitor-id", "v", "--context", #"{"plan": null}"#], #"--context: the value of "plan" must be a string, a number or a boolean"#),
            (["--visitor-id", "v", "--history", #"{"123": 1}"#], #"--history: the variation id of "123" must be a string"#),
            (["--visitor-id", "v", "--history", "v-a"], "--history must be a JSON object"),
            ([], "give one of --visitor-id and --visitors-file"),
            (["--visitor-id", "v", "--visitors-file", file], "give one of --visitor-id and --visitors-file"),
        ]
        for (arguments, message) in cases {
            let result = try FlagshipExecutable.run(["eval", "--bucketing-file", file] + arguments, outputDirectory: outputDirectory)

            XCTAssertNotEqual(result.status, 0, "\(arguments)")
            XCTAssertEqual(result.stdout, "", "\(arguments)")
            XCTAssertTrue(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }
}
