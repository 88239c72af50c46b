import Flagship
import Foundation

/// How `eval --explain` and `why` show an `FSDecisionExplanation`: text for a person, JSON for a program.
enum ExplanationOutput {
    /// The first 12 hex digits of a file version, as `why` and `eval --explain` print it.
    static func shortVersion(_ version: String?) -> String {
        version.map { String($0.prefix(12)) } ?? "unknown"
    }

    static func text(_ explanation: FSDecisionExplanation, indent: String = "") -> String {
        var lines = ["\(indent)visitor \(explanation.visitorId), bucketing file \(shortVersion(explanation.fileVersion))"]
        if explanation.panic {
            lines.append("\(indent)  the file is in panic: no campaign, every flag gives its default")
        }
        for campaign in explanation.campaigns {
            let type = campaign.campaignType.isEmpty ? "" : " (\(campaign.campaignType))"
            var outcome = "\(indent)  campaign \(campaign.campaignId)\(type): \(campaign.decidedBy.rawValue)"
            if let group = campaign.variationGroupId, let variation = campaign.variationId {
                let name = campaign.variationName.map { $0.isEmpty ? "" : " \"\($0)\"" } ?? ""
                outcome += " -> \(group) / \(variation)\(name)"
            }
            lines.append(outcome)
            for group in campaign.variationGroups {
                lines.append("\(indent)    variation group \(group.variationGroupId): \(group.matched ? "targeted" : "not targeted")")
                if group.targetingGroups.isEmpty {
                    lines.append("\(indent)      no targeting group: targets nobody")
                }
                for (index, targeting) in group.targetingGroups.enumerated() {
                    lines.append("\(indent)      targeting group \(index + 1): \(targeting.matched ? "match" : "no match")")
                    for condition in targeting.conditions {
                        lines.append("\(indent)        \(condition.matched ? "[x]" : "[ ]") \(conditionText(condition))")
                    }
                }
                if let bucket = group.bucket {
                    let ranges = bucket.ranges.map { range in
                        "\(range.variationId ?? "(no id)") [\(number(range.lower)), \(number(range.upper)))"
                    }
                    let landed = bucket.ranges.first { $0.holds(bucket.bucket) && $0.upper > $0.lower }
                    let into = landed.map { " -> in \($0.variationId ?? "(a variation without id)")'s range" } ?? " -> in no range"
                    lines.append("\(indent)      bucket: murmur3 \(bucket.hash) % 100 = \(bucket.bucket)\(into)")
                    lines.append("\(indent)      ranges: \(ranges.joined(separator: ", "))")
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    private static func conditionText(_ condition: FSConditionExplanation) -> String {
        guard let key = condition.key else { return "(a condition without key: never matches)" }
        if key == "fs_all_users" { return "fs_all_users (everyone)" }
        let op = condition.operator ?? "(no operator)"
        let expected = condition.expected.map { " \($0)" } ?? ""
        let actual = key == "fs_users" ? "visitor id \(condition.contextValue ?? "")" : "context: \(condition.contextValue ?? "absent")"
        return "\(key) \(op)\(expected)  (\(actual))"
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    static func json(_ explanation: FSDecisionExplanation) -> FSJSONValue {
        .object([
            "visitorId": .string(explanation.visitorId),
            "fileVersion": .string(explanation.fileVersion),
            "panic": .bool(explanation.panic),
            "campaigns": .array(explanation.campaigns.map(json)),
        ])
    }

    private static func json(_ campaign: FSCampaignExplanation) -> FSJSONValue {
        .object([
            "campaignId": .string(campaign.campaignId),
            "campaignType": .string(campaign.campaignType),
            "decidedBy": .string(campaign.decidedBy.rawValue),
            "variationGroupId": campaign.variationGroupId.map(FSJSONValue.string) ?? .null,
            "variationId": campaign.variationId.map(FSJSONValue.string) ?? .null,
            "variationGroups": .array(campaign.variationGroups.map { group in
                .object([
                    "variationGroupId": .string(group.variationGroupId),
                    "matched": .bool(group.matched),
                    "targetingGroups": .array(group.targetingGroups.map { targeting in
                        .object([
                            "matched": .bool(targeting.matched),
                            "conditions": .array(targeting.conditions.map { condition in
                                .object([
                                    "key": condition.key.map(FSJSONValue.string) ?? .null,
                                    "operator": condition.operator.map(FSJSONValue.string) ?? .null,
                                    "expected": condition.expected.flatMap { try? FSJSONValue(parsing: Data($0.utf8)) } ?? .null,
                                    "contextValue": condition.contextValue.flatMap { try? FSJSONValue(parsing: Data($0.utf8)) } ?? .null,
                                    "matched": .bool(condition.matched),
                                ])
                            }),
                        ])
                    }),
                    "bucket": group.bucket.map { bucket in
                        .object([
                            "hash": .int(Int64(bucket.hash)),
                            "bucket": .int(Int64(bucket.bucket)),
                            "ranges": .array(bucket.ranges.map { range in
                                .object([
                                    "variationId": range.variationId.map(FSJSONValue.string) ?? .null,
                                    "lower": .double(range.lower),
                                    "upper": .double(range.upper),
                                ])
                            }),
                        ])
                    } ?? .null,
                ])
            }),
        ])
    }
}
