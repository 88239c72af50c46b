import Foundation
import XCTest

/// `flagship flags`: the flag keys of a bucketing file with their value types per variation.
final class FlagsCommandTests: CommandTestCase {
    /// An A/B test giving `btnColor` and `discount` (an integer, then a fraction), and a toggle
    /// giving `discount` as a string: the one key whose types differ.
    static let fixture = #"""
        {"panic": false, "campaigns": [
         {"id": "c_checkout", "type": "ab", "variationGroups": [{"id": "vg_all",
          "targeting": {"targetingGroups": [{"targetings": [{"key": "fs_all_users", "operator": "EQUALS", "value": ""}]}]},
          "variations": [
           {"id": "v_blue", "allocation": 50, "reference": true, "modifications": {"type": "FLAG", "value": {"btnColor": "blue", "discount": 0}}},
           {"id": "v_green", "allocation": 50, "modifications": {"type": "FLAG", "value": {"btnColor": "green", "discount": 0.1, "banner": null}}}]}]},
         {"id": "c_shipping", "type": "toggle", "variationGroups": [{"id": "vg_vip",
          "targeting": {"targetingGroups": [{"targetings": [{"key": "isVip", "operator": "EQUALS", "value": true}]}]},
          "variations": [{"id": "v_on", "allocation": 100, "modifications": {"type": "FLAG", "value": {"freeShipping": true, "discount": "10%"}}}]}]}
        ]}
        """#

    private func write(_ text: String) throws -> String {
        let url = outputDirectory.appendingPathComponent("bucketing.json")
        try Data(text.utf8).write(to: url)
        return url.path
    }

    func testEachKeyWithItsTypesAndTheOneWhoseTypesDifferMarked() throws {
        let result = try flagship("flags", "--bucketing-file", try write(Self.fixture))

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, """
            KEY           TYPES                    VARIATIONS  CAMPAIGNS
            banner        null                     1           c_checkout
            btnColor      string                   2           c_checkout
            discount      string, integer, number  3           c_checkout, c_shipping  types differ
            freeShipping  boolean                  1           c_shipping

            """)
    }

    func testJSONListsEveryVariationsType() throws {
        let result = try flagship("flags", "--bucketing-file", try write(Self.fixture), "--json")

        XCTAssertEqual(result.status, 0, result.stderr)
        let output = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let flags = try XCTUnwrap(output["flags"] as? [[String: Any]])
        XCTAssertEqual(flags.map { $0["key"] as? String }, ["banner", "btnColor", "discount", "freeShipping"])
        let discount = flags[2]
        XCTAssertEqual(discount["typesDiffer"] as? Bool, true)
        XCTAssertEqual(discount["types"] as? [String], ["string", "integer", "number"])
        let variations = try XCTUnwrap(discount["variations"] as? [[String: String]])
        XCTAssertEqual(variations.map { "\($0["variationId"]!)=\($0["type"]!)" }, ["v_blue=integer", "v_green=number", "v_on=string"])
        XCTAssertEqual(flags[1]["typesDiffer"] as? Bool, false)
        XCTAssertEqual(flags[0]["typesDiffer"] as? Bool, false, "null is no type of its own")
    }

    func testAFileThatIsNotABucketingFileIsAClearError() throws {
        let result = try flagship("flags", "--bucketing-file", try write(#"{"campaigns": 3}"#))

        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("is not a usable bucketing file"), result.stderr)
        XCTAssertEqual(result.stdout, "")
    }
}
