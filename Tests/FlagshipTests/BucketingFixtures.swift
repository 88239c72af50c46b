import Foundation
import XCTest

@testable import Flagship

/// Bucketing files written as JSON text, piece by piece, so a test shows the file it decides from.
enum BucketingJSON {
    static func file(_ campaigns: String..., panic: Bool? = nil) -> Data {
        file(campaigns, panic: panic)
    }

    static func file(_ campaigns: [String], panic: Bool? = nil) -> Data {
        Data(text(campaigns, panic: panic).utf8)
    }

    static func text(_ campaigns: String...) -> String {
        text(campaigns)
    }

    static func text(_ campaigns: [String], panic: Bool? = nil) -> String {
        let panicMember = panic.map { "\"panic\": \($0), " } ?? ""
        return "{\(panicMember)\"campaigns\": [\(campaigns.joined(separator: ", "))]}"
    }

    static func campaign(_ id: String, _ groups: String...) -> String {
        #"{"id": "\#(id)", "name": "\#(id) name", "type": "ab", "variationGroups": [\#(groups.joined(separator: ", "))]}"#
    }

    /// A group targeting everyone unless told otherwise.
    static func group(_ id: String, targeting: String = everyone, _ variations: String...) -> String {
        #"{"id": "\#(id)", "name": "\#(id) name", "targeting": \#(targeting), "variations": [\#(variations.joined(separator: ", "))]}"#
    }

    /// `flags` is the JSON text of `modifications.value`.
    static func variation(_ id: String, _ allocation: Int, flags: String = "{}") -> String {
        #"{"id": "\#(id)", "name": "\#(id) name", "allocation": \#(allocation), "modifications": {"type": "JSON", "value": \#(flags)}}"#
    }

    /// Targeting groups (OR'ed) of rules (AND'ed).
    static func targeting(_ groups: [String]...) -> String {
        targeting(groups)
    }

    static func targeting(_ groups: [[String]]) -> String {
        let groupTexts = groups.map { #"{"targetings": [\#($0.joined(separator: ", "))]}"# }
        return #"{"targetingGroups": [\#(groupTexts.joined(separator: ", "))]}"#
    }

    /// `value` is JSON text.
    static func rule(_ key: String, _ op: String, _ value: String) -> String {
        #"{"key": "\#(key)", "operator": "\#(op)", "value": \#(value)}"#
    }

    static let everyone = targeting([rule("fs_all_users", "EQUALS", #""""#)])
}

extension BucketingFile {
    /// The ids of what the visitor was assigned, `"campaign/group/variation"`, in file order.
    func assignedIds(visitorId: String, context: [String: FSJSONValue] = [:], history: [String: String] = [:]) -> [String] {
        decide(visitorId: visitorId, context: context, history: history).campaigns.map {
            "\($0.campaignId)/\($0.variationGroupId)/\($0.variationId)"
        }
    }
}

/// Whether one rule (`value` as JSON text) matches the visitor: the rule targets the only group
/// of a file whose one variation takes every visitor.
func ruleMatches(key: String = "k", _ op: String, _ value: String, context: [String: FSJSONValue] = [:],
                 visitorId: String = "visitor_1") throws -> Bool {
    let file = try BucketingFile(json: BucketingJSON.file(BucketingJSON.campaign("c", BucketingJSON.group(
        "g", targeting: BucketingJSON.targeting([BucketingJSON.rule(key, op, value)]), BucketingJSON.variation("v", 100)))))
    return !file.decide(visitorId: visitorId, context: context, history: [:]).campaigns.isEmpty
}

/// The bucket (0...99) the hash gives a visitor in a group.
func bucket(of visitorId: String, inGroup groupId: String) -> UInt32 {
    MurmurHash3.x86_32(utf8Of: groupId, followedBy: visitorId) % 100
}

/// The first `visitor-N` id the hash puts in `buckets` of `groupId`.
func visitorId(inBuckets buckets: ClosedRange<UInt32>, ofGroup groupId: String) -> String {
    (0...).lazy.map { "visitor-\($0)" }.first { buckets.contains(bucket(of: $0, inGroup: groupId)) }!
}

extension Conformance {
    /// The conformance folder for bucketing: `$FLAGSHIP_SHARED_DIR/conformance`, else where
    /// ``directory`` finds it (`$FLAGSHIP_CONFORMANCE_DIR`, `../shared/conformance`). Absent, the
    /// test skips with a notice, or fails when `FLAGSHIP_REQUIRE_SHARED=1`.
    static func bucketingDirectory() throws -> URL {
        let candidate: URL
        if let shared = ProcessInfo.processInfo.environment["FLAGSHIP_SHARED_DIR"], !shared.isEmpty {
            candidate = URL(fileURLWithPath: shared, isDirectory: true).appendingPathComponent("conformance", isDirectory: true)
        } else {
            candidate = directory ?? SharedData.besidePackage("conformance")
        }
        return try SharedData.require(candidate, holding: "bucketing-cases.json", what: "Bucketing conformance data",
                                      setting: "FLAGSHIP_SHARED_DIR to the shared/ folder")
    }

    /// A conformance file parsed as JSON.
    static func bucketingDocument(_ name: String) throws -> FSJSONValue {
        try FSJSONValue(parsing: Data(contentsOf: bucketingDirectory().appendingPathComponent(name)))
    }
}
