import Foundation
import XCTest

@testable import Flagship
import FlagshipLocalServer

/// This SDK's bucketing decisions against the official Python SDK's (3.0.1), run offline on the
/// same files (`Tests/Support/python-sdk/decide.py` calls the Python SDK's own decision).
///
/// On rules both evaluate by the server's semantics (BUCKETING.md), they must agree on every
/// visitor: three generated files × four contexts × 300 visitors. Where the Python SDK departs
/// from the server's rules, this SDK follows the server; each such rule is checked here to differ
/// exactly as Compared with the reference says.
final class OfficialPythonSDKBucketingTests: XCTestCase {
    /// A small deterministic generator (SplitMix64): the same files on every run.
    private struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ range: ClosedRange<Int>) -> Int {
            range.lowerBound + Int(next() % UInt64(range.count))
        }
        mutating func pick<T>(_ values: [T]) -> T { values[int(0...(values.count - 1))] }
    }

    private static let plans = ["free", "pro", "team", "enterprise"]
    private static let countries = ["fr", "us", "de", "jp", "br"]

    /// A rule both SDKs evaluate as the server does: kinds that agree, lower-case strings, the
    /// operators each kind takes, lists only with EQUALS, NOT_EQUALS, CONTAINS and NOT_CONTAINS.
    private static func commonRule(_ random: inout Generator) -> [String: Any] {
        switch random.int(0...7) {
        case 0:
            return ["key": "fs_all_users", "operator": "EQUALS", "value": ""]
        case 1:
            return ["key": "plan", "operator": random.pick(["EQUALS", "NOT_EQUALS"]), "value": random.pick(plans)]
        case 2:
            let list = (0..<random.int(1...3)).map { _ in random.pick(plans) }
            return ["key": "plan", "operator": random.pick(["EQUALS", "NOT_EQUALS"]), "value": list]
        case 3:
            return ["key": "age", "operator": random.pick(["EQUALS", "NOT_EQUALS", "GREATER_THAN", "LOWER_THAN",
                                                           "GREATER_THAN_OR_EQUALS", "LOWER_THAN_OR_EQUALS"]),
                    "value": random.int(10...60)]
        case 4:
            return ["key": "isVip", "operator": random.pick(["EQUALS", "NOT_EQUALS"]), "value": random.int(0...1) == 1]
        case 5:
            return ["key": "country", "operator": random.pick(["CONTAINS", "NOT_CONTAINS", "STARTS_WITH", "ENDS_WITH"]),
                    "value": String(random.pick(countries).prefix(random.int(1...2)))]
        case 6:
            let list = (0..<random.int(1...3)).map { _ in random.pick(countries) }
            return ["key": "country", "operator": random.pick(["CONTAINS", "NOT_CONTAINS"]), "value": list]
        default:
            return ["key": "plan", "operator": random.pick(["GREATER_THAN", "LOWER_THAN"]), "value": random.pick(plans)]
        }
    }

    /// A file of `campaigns` campaigns, each of one to three variation groups of one to three
    /// rule groups, with allocations that leave some visitors out.
    private static func generatedFile(seed: UInt64, campaigns: Int) -> [String: Any] {
        var random = Generator(state: seed)
        return ["campaigns": (0..<campaigns).map { campaign -> [String: Any] in
            ["id": "c\(seed)-\(campaign)", "type": "ab",
             "variationGroups": { (groups: Int) in (0..<groups).map { group -> [String: Any] in
                let variations = random.int(1...3)
                // Some visitors unallocated, in the campaign's last group only: the Python SDK
                // tries the next targeted group for them, the server does not (checked below).
                var left = group == groups - 1 ? 100 - random.int(0...20) : 100
                return ["id": "vg\(seed)-\(campaign)-\(group)",
                        "targeting": ["targetingGroups": (0..<random.int(1...3)).map { _ in
                            ["targetings": (0..<random.int(1...2)).map { _ in commonRule(&random) }]
                        }],
                        "variations": (0..<variations).map { variation -> [String: Any] in
                            let allocation = variation == variations - 1 ? left : random.int(0...left)
                            left -= allocation
                            return ["id": "v\(seed)-\(campaign)-\(group)-\(variation)", "allocation": allocation,
                                    "modifications": ["type": "FLAG", "value": ["flag\(campaign)": "v\(variation)"]]]
                        }]
             } }(random.int(1...3))]
        }]
    }

    private static var contexts: [[String: Any]] { [
        ["plan": "pro", "age": 32, "isVip": true, "country": "fr"],
        ["plan": "free", "age": 17, "isVip": false, "country": "us"],
        ["plan": "enterprise", "age": 45.5, "country": "de"],
        ["age": 60],
    ] }

    /// The Python SDK's decisions: per context, per visitor, variation group id → variation id.
    private func pythonDecisions(file: [String: Any], contexts: [[String: Any]], visitors: [String]) throws -> [[[String: String]]] {
        let input = try JSONSerialization.data(withJSONObject: ["file": file, "contexts": contexts, "visitors": visitors])
        let outcome = try OfficialPythonSDK.run(script: "decide.py", [], input: input)
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        let answer = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any], outcome.stderr)
        return try XCTUnwrap(answer["decisions"] as? [[[String: String]]])
    }

    /// This SDK's, the same way.
    private func ourDecisions(file: [String: Any], contexts: [[String: Any]], visitors: [String]) throws -> [[[String: String]]] {
        let bucketing = try BucketingFile(json: try JSONSerialization.data(withJSONObject: file))
        return try contexts.map { context in
            let values = try FSJSONValue(parsing: try JSONSerialization.data(withJSONObject: context)).objectValue ?? [:]
            return visitors.map { visitor in
                Dictionary(uniqueKeysWithValues: bucketing.decide(visitorId: visitor, context: values, history: [:])
                    .campaigns.map { ($0.variationGroupId, $0.variationId) })
            }
        }
    }

    func testOnRulesBothEvaluateAsTheServerDoesEveryDecisionAgrees() throws {
        let visitors = (0..<300).map { "visitor-\($0)" }
        for seed: UInt64 in [7, 1_234, 98_765] {
            let file = Self.generatedFile(seed: seed, campaigns: 12)
            let theirs = try pythonDecisions(file: file, contexts: Self.contexts, visitors: visitors)
            let ours = try ourDecisions(file: file, contexts: Self.contexts, visitors: visitors)
            var assigned = 0
            for (index, context) in Self.contexts.enumerated() {
                let differing = visitors.indices.filter { theirs[index][$0] != ours[index][$0] }
                XCTAssertEqual(differing.count, 0, "file \(seed), context \(context): \(differing.prefix(3).map { (visitors[$0], theirs[index][$0], ours[index][$0]) })")
                assigned += ours[index].reduce(0) { $0 + $1.count }
            }
            XCTAssertGreaterThan(assigned, 1_000, "file \(seed): the files assign, so that agreeing means something")
        }
    }

    /// Where the Python SDK departs from the server's rules (BUCKETING.md), one rule each, on a
    /// file that assigns everyone it targets: whether each SDK targets the visitor. This SDK
    /// follows the server; Compared with the reference lists each with its reason.
    func testWhereThePythonSDKDepartsFromTheServersRulesThisSDKFollowsTheServer() throws {
        let cases: [(name: String, rule: [String: Any], context: [String: Any], python: Bool, ours: Bool)] = [
            ("EXISTS", ["key": "plan", "operator": "EXISTS", "value": true], ["plan": "pro"], false, true),
            ("NOT_EXISTS", ["key": "plan", "operator": "NOT_EXISTS", "value": true], ["age": 1], false, true),
            ("a number against a bool", ["key": "age", "operator": "GREATER_THAN", "value": false], ["age": 18], true, false),
            ("bools ordered", ["key": "isVip", "operator": "GREATER_THAN", "value": false], ["isVip": true], true, false),
            ("NOT_EQUALS across kinds", ["key": "age", "operator": "NOT_EQUALS", "value": "x"], ["age": 5], true, false),
            ("a string value that reads as JSON", ["key": "plan", "operator": "EQUALS", "value": "123"], ["plan": "123"], false, true),
            ("strings by case", ["key": "plan", "operator": "EQUALS", "value": "Pro"], ["plan": "pro"], false, true),
            ("CONTAINS on a number", ["key": "age", "operator": "CONTAINS", "value": 3], ["age": 32], true, false),
            ("fs_all_users with another operator", ["key": "fs_all_users", "operator": "NOT_EQUALS", "value": ""], [:], false, true),
            ("a list with GREATER_THAN", ["key": "age", "operator": "GREATER_THAN", "value": [10, 90]], ["age": 32], true, false),
        ]
        for entry in cases {
            let file: [String: Any] = ["campaigns": [["id": "c", "type": "ab", "variationGroups": [[
                "id": "vg", "targeting": ["targetingGroups": [["targetings": [entry.rule]]]],
                "variations": [["id": "v", "allocation": 100, "modifications": ["type": "FLAG", "value": ["f": 1]]]],
            ]]]]]
            let theirs = try pythonDecisions(file: file, contexts: [entry.context], visitors: ["visitor-1"])[0][0]
            let ours = try ourDecisions(file: file, contexts: [entry.context], visitors: ["visitor-1"])[0][0]
            XCTAssertEqual(!theirs.isEmpty, entry.python, "\(entry.name): the Python SDK")
            XCTAssertEqual(!ours.isEmpty, entry.ours, "\(entry.name): this SDK (the server's rule)")
        }

        // A visitor the first targeted group leaves unallocated: the Python SDK tries the next
        // targeted group; the server, and this SDK, give nothing from that campaign.
        let unallocated = (0..<300).map { "visitor-\($0)" }
        let file: [String: Any] = ["campaigns": [["id": "c", "type": "ab", "variationGroups": [
            ["id": "first", "targeting": ["targetingGroups": [["targetings": [["key": "fs_all_users", "operator": "EQUALS", "value": ""]]]]],
             "variations": [["id": "half", "allocation": 50, "modifications": ["type": "FLAG", "value": ["f": 1]]]]],
            ["id": "second", "targeting": ["targetingGroups": [["targetings": [["key": "fs_all_users", "operator": "EQUALS", "value": ""]]]]],
             "variations": [["id": "all", "allocation": 100, "modifications": ["type": "FLAG", "value": ["f": 2]]]]],
        ]]]]
        let theirs = try pythonDecisions(file: file, contexts: [[:]], visitors: unallocated)[0]
        let ours = try ourDecisions(file: file, contexts: [[:]], visitors: unallocated)[0]
        let outOfTheFirst = unallocated.indices.filter { ours[$0].isEmpty }
        XCTAssertGreaterThan(outOfTheFirst.count, 100, "about half the visitors fall outside the first group's 50 %")
        XCTAssertTrue(outOfTheFirst.allSatisfy { theirs[$0] == ["second": "all"] }, "the Python SDK falls through")
        XCTAssertEqual(unallocated.indices.filter { !ours[$0].isEmpty }.map { ours[$0] },
                       unallocated.indices.filter { !ours[$0].isEmpty }.map { theirs[$0] }, "the allocated agree")
    }
}
