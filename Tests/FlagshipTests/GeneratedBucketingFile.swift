import Foundation
import FlagshipLocalServer

@testable import Flagship

/// Random bucketing files with every kind of rule and fault: rules without a key or an operator,
/// unknown operators, values of every type for every operator, groups without targeting,
/// variations without an id or repeating one, flags that are not an object.
enum GeneratedBucketingFile {
    static let keys = ["plan", "age", "version", "vip", "fs_users", "fs_all_users", "Plan", "missing"]
    static let operators = TargetingOperator.allCases.map(\.rawValue) + ["NO_SUCH_OPERATOR"]
    static let values = [
        #""gold""#, #""GOLD""#, #""gol""#, #""old""#, #""visitor-3""#, "30", "30.5", "-1", "true", "false", "null",
        #""1.2.3""#, #""v2.0.0-beta.1""#, #""1.2.3.4""#, #"["gold", "silver"]"#, #"[30, "30"]"#, #"[["gold"]]"#,
        #"{"a": 1}"#, "[]", #""""#,
    ]

    private static func rule(_ random: inout SplitMix64) -> String {
        switch Int.random(in: 0..<12, using: &random) {
        case 0: return #"{"operator": "EQUALS", "value": "gold"}"#
        case 1: return #"{"key": "plan", "value": "gold"}"#
        case 2: return #"{"key": "plan", "operator": "EQUALS"}"#
        default:
            let key = Self.keys.randomElement(using: &random)!, op = Self.operators.randomElement(using: &random)!
            return BucketingJSON.rule(key, op, Self.values.randomElement(using: &random)!)
        }
    }

    static func group(_ random: inout SplitMix64, _ campaign: Int, _ number: Int) -> String {
        let targeting = Int.random(in: 0..<8, using: &random) == 0 ? "null" : BucketingJSON.targeting(
            (0..<Int.random(in: 0..<3, using: &random) + 1).map { _ in (0..<Int.random(in: 0..<3, using: &random)).map { _ in rule(&random) } })
        let variations = (0..<Int.random(in: 0..<4, using: &random) + 1).map { variation -> String in
            // Some without an id, some with their group's first id again.
            let id = Int.random(in: 0..<10, using: &random) == 0 ? "" : (Int.random(in: 0..<10, using: &random) == 0 ? "v\(campaign)-\(number)-0" : "v\(campaign)-\(number)-\(variation)")
            let allocation = [0, 10, 25, 33, 50, 100].randomElement(using: &random)!
            let flags = Int.random(in: 0..<6, using: &random) == 0 ? #""not an object""# : #"{"k\#(variation)": \#(Self.values.randomElement(using: &random)!)}"#
            return #"{"id": "\#(id)", "allocation": \#(allocation), "modifications": {"type": "FLAG", "value": \#(flags)}}"#
        }
        return #"{"id": "g\#(campaign)-\#(number)", "targeting": \#(targeting), "variations": [\#(variations.joined(separator: ", "))]}"#
    }

    static func file(_ random: inout SplitMix64, campaigns: ClosedRange<Int> = 1...10) -> Data {
        let campaigns = (0..<Int.random(in: campaigns, using: &random)).map { number in
            #"{"id": "c\#(number)", "name": "campaign \#(number)", "type": "ab", "variationGroups": [\#((0..<Int.random(in: 0..<3, using: &random) + 1).map { group(&random, number, $0) }.joined(separator: ", "))]}"#
        }
        return BucketingJSON.file(campaigns)
    }

    static func context(_ random: inout SplitMix64) -> [String: FSJSONValue] {
        let values: [FSJSONValue] = [.string("gold"), .string("Gold Plan"), .string("1.2.3"), .string("2.0.0"), .int(30),
                                     .double(30.5), .bool(true), .bool(false), .null, .array([.string("gold")])]
        var context: [String: FSJSONValue] = [:]
        for key in ["plan", "age", "version", "vip", "Plan"] where Int.random(in: 0..<2, using: &random) == 0 {
            context[key] = values.randomElement(using: &random)!
        }
        return context
    }
}
