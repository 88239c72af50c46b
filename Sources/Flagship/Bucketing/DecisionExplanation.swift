import Foundation

/// Why a bucketing file decides what it decides for one visitor: each campaign's variation
/// groups as they were tried, each targeting condition with the context's value and whether it
/// matched, the visitor's bucket and the allocation range it fell in, and what decided.
///
/// ```swift
/// let explanation = try FSDecisionExplanation(bucketingFile: data, visitorId: "v42",
///                                             context: ["plan": "pro"])
/// for campaign in explanation.campaigns {
///     print(campaign.campaignId, campaign.decidedBy, campaign.variationId ?? "-")
/// }
/// ```
///
/// Made by the same code that decides (`flagship eval --explain` prints it), so it never
/// disagrees with a decision.
public struct FSDecisionExplanation: Sendable, Equatable {
    /// The visitor the decisions were explained for (its bucket depends on it).
    public let visitorId: String
    /// The sha256 of the bucketing file's bytes (64 hex digits).
    public let fileVersion: String
    /// A file in panic decides nothing: no campaign is explained.
    public let panic: Bool
    /// In file order.
    public let campaigns: [FSCampaignExplanation]

    /// Explains the decisions `bucketingFile` makes for a visitor. `context` holds the values an
    /// app gives `newVisitor` (`String`, `Bool`, numbers); `assignmentsHistory` maps variation
    /// group ids to the variation ids the visitor already has.
    /// - Throws: `FSDecisionExplanationError` when the file is unusable or a context value is
    ///   not a string, a boolean or a number.
    public init(bucketingFile: Data, visitorId: String, context: [String: any Sendable] = [:],
                assignmentsHistory: [String: String] = [:]) throws(FSDecisionExplanationError) {
        let file: BucketingFile
        do {
            file = try BucketingFile(json: bucketingFile)
        } catch {
            throw .unusableFile(error.reason)
        }
        var values: [String: FSJSONValue] = [:]
        for (key, value) in context {
            guard case .success(let json) = ContextValue.validate(value) else { throw .invalidContextValue(key: key) }
            values[key] = json
        }
        self = file.explain(visitorId: visitorId, context: values, history: assignmentsHistory)
    }

    package init(visitorId: String, fileVersion: String, panic: Bool, campaigns: [FSCampaignExplanation]) {
        self.visitorId = visitorId
        self.fileVersion = fileVersion
        self.panic = panic
        self.campaigns = campaigns
    }

    /// The campaigns that gave the visitor a variation.
    public var assigned: [FSCampaignExplanation] { campaigns.filter { $0.variationId != nil } }
}

/// Why an explanation could not be made: a struct with a ``code`` to switch on, as the SDK's
/// other errors are.
public struct FSDecisionExplanationError: Error, Equatable, CustomStringConvertible {
    /// The kind of failure, to switch on.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case unusableFile, invalidContextValue
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The bucketing file could not be read.
        public static let unusableFile = Code(.unusableFile)
        /// A context value is not a string, a boolean or a number.
        public static let invalidContextValue = Code(.invalidContextValue)

        /// The code's name as written here.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// Why the file could not be read (``Code/unusableFile``: not JSON, a missing field...), or
    /// the context key whose value is refused (``Code/invalidContextValue``).
    public let detail: String

    /// The bucketing file could not be read, for `reason`.
    public static func unusableFile(_ reason: String) -> FSDecisionExplanationError {
        FSDecisionExplanationError(code: .unusableFile, detail: reason)
    }

    /// The context value of `key` is not a string, a boolean or a number.
    public static func invalidContextValue(key: String) -> FSDecisionExplanationError {
        FSDecisionExplanationError(code: .invalidContextValue, detail: key)
    }

    /// One sentence naming the problem, for a log or a command's error output.
    public var description: String {
        code == .unusableFile
            ? "The bucketing file is unusable: \(detail)."
            : "The context value of '\(detail)' is not a string, a boolean or a number."
    }
}

/// What decided a campaign for the visitor.
public enum FSDecidedBy: String, Sendable, Equatable, CaseIterable {
    /// The assignment history named a variation of the targeted group, which the file still has.
    case history
    /// The visitor's bucket fell in a variation's allocation range.
    case allocation
    /// No variation group's targeting matched: nothing from this campaign.
    case targetingMiss = "targeting miss"
    /// The targeted group's allocations left the visitor's bucket out: nothing from this campaign.
    case unallocated
    /// The history named a variation the targeted group no longer has: nothing from this campaign.
    case rememberedVariationGone = "remembered variation gone"
}

/// How one campaign of the bucketing file was decided for the visitor.
public struct FSCampaignExplanation: Sendable, Equatable {
    /// The campaign's id in the bucketing file.
    public let campaignId: String
    /// The campaign's type as its variations name it (`"ab"` for an A/B test); `""` when none does.
    public let campaignType: String
    /// The groups in the order they were tried: up to the first whose targeting matched.
    public let variationGroups: [FSVariationGroupExplanation]
    /// How the campaign's outcome was reached.
    public let decidedBy: FSDecidedBy
    /// The group and variation the visitor got; `nil` when the campaign gave nothing.
    public let variationGroupId: String?
    /// The id of the variation the visitor got; `nil` when the campaign gave nothing.
    public let variationId: String?
    /// The name of the variation the visitor got; `nil` when the campaign gave nothing or the
    /// file names none.
    public let variationName: String?
}

/// One variation group of a campaign, as it was tried for the visitor.
public struct FSVariationGroupExplanation: Sendable, Equatable {
    /// The group's id in the bucketing file.
    public let variationGroupId: String
    /// Whether one of its targeting groups matched (they are OR'ed).
    public let matched: Bool
    /// Each targeting group of the variation group, in file order.
    public let targetingGroups: [FSTargetingGroupExplanation]
    /// The visitor's bucket in this group, for the group that matched and decided by allocation.
    public let bucket: FSBucketExplanation?
}

/// One targeting group of a variation group: conditions that must all match.
public struct FSTargetingGroupExplanation: Sendable, Equatable {
    /// Whether every condition matched (they are AND'ed).
    public let matched: Bool
    /// Each condition of the group, in file order.
    public let conditions: [FSConditionExplanation]
}

/// One targeting condition: the file's key, operator and value, the visitor's value, the outcome.
public struct FSConditionExplanation: Sendable, Equatable {
    /// The context key (`fs_users`: the visitor id, `fs_all_users`: everyone); `nil` when the
    /// file gave none (the condition never matches).
    public let key: String?
    /// The operator as the file writes it (`EQUALS`, `CONTAINS`, `SEMVER_GREATER_THAN`...);
    /// `nil` when the file gave none.
    public let `operator`: String?
    /// The file's value, as JSON text; `nil` when it gave none.
    public let expected: String?
    /// The visitor's value, as JSON text; `nil` when the context does not hold the key.
    public let contextValue: String?
    /// Whether the visitor satisfied the condition.
    public let matched: Bool
}

/// Where the visitor's hash put it among a variation group's allocations.
public struct FSBucketExplanation: Sendable, Equatable {
    /// MurmurHash3 (x86, 32 bits, seed 0) of the variation group id followed by the visitor id.
    public let hash: UInt32
    /// `hash % 100`: the visitor falls in the variation whose range holds it.
    public let bucket: Int
    /// Each variation's allocation range, in file order: [lower, upper).
    public let ranges: [FSAllocationRange]
}

/// The buckets (0 to 99) that one variation's allocation covers, its allocation being in percent.
public struct FSAllocationRange: Sendable, Equatable {
    /// `nil` for a variation without a usable id (it only holds its share).
    public let variationId: String?
    /// The range's start, included: the sum of the allocations of the variations before it.
    public let lower: Double
    /// The range's end, excluded: `lower` plus the variation's allocation (0 to 100).
    public let upper: Double

    /// Whether `bucket` falls in [`lower`, `upper`).
    public func holds(_ bucket: Int) -> Bool { Double(bucket) >= lower && Double(bucket) < upper }
}

extension BucketingFile {
    /// `decide(visitorId:context:history:)`, step by step: the same walk, each step recorded.
    package func explain(visitorId: String, context: [String: FSJSONValue], history: [String: String]) -> FSDecisionExplanation {
        guard !panic else { return FSDecisionExplanation(visitorId: visitorId, fileVersion: version, panic: true, campaigns: []) }
        let visitor = PreparedContext(visitorId: visitorId, context: context, keys: contextKeys, readsVisitorId: readsVisitorId)
        let explained = campaigns.map { campaign -> FSCampaignExplanation in
            var groups: [FSVariationGroupExplanation] = []
            for group in campaign.variationGroups {
                let targeting = group.targeting.explain(visitor, visitorId: visitorId, context: context)
                let matched = targeting.contains(where: \.matched)
                guard matched else {
                    groups.append(FSVariationGroupExplanation(variationGroupId: group.id, matched: false,
                                                              targetingGroups: targeting, bucket: nil))
                    continue
                }
                // The first group that matches decides, as in `decide`.
                let remembered = history.isEmpty ? nil : history[group.id]
                let bucket = remembered == nil ? group.bucket(visitorId: visitorId) : nil
                groups.append(FSVariationGroupExplanation(variationGroupId: group.id, matched: true,
                                                          targetingGroups: targeting, bucket: bucket))
                let chosen = group.variation(visitorId: visitorId, history: history)?.assignment
                let decidedBy: FSDecidedBy = switch (remembered, chosen) {
                case (.some, .some): .history
                case (.some, nil): .rememberedVariationGone
                case (nil, .some): .allocation
                case (nil, nil): .unallocated
                }
                return FSCampaignExplanation(campaignId: campaign.id, campaignType: Self.type(of: group),
                                             variationGroups: groups, decidedBy: decidedBy,
                                             variationGroupId: chosen?.variationGroupId, variationId: chosen?.variationId,
                                             variationName: chosen?.variationName)
            }
            return FSCampaignExplanation(campaignId: campaign.id, campaignType: campaign.variationGroups.first.map(Self.type(of:)) ?? "",
                                         variationGroups: groups, decidedBy: .targetingMiss,
                                         variationGroupId: nil, variationId: nil, variationName: nil)
        }
        return FSDecisionExplanation(visitorId: visitorId, fileVersion: version, panic: false, campaigns: explained)
    }

    private static func type(of group: VariationGroup) -> String {
        group.variations.lazy.compactMap(\.assignment).first?.type ?? ""
    }
}

extension BucketingFile.VariationGroup {
    /// The visitor's hash, bucket and every variation's range, as `variation(visitorId:history:)` walks them.
    func bucket(visitorId: String) -> FSBucketExplanation {
        var hash = hashPrefix
        hash.append(utf8Of: visitorId)
        let value = hash.finalized()
        var ranges: [FSAllocationRange] = []
        var total = 0.0
        for variation in variations {
            let lower = total
            if variation.allocation > 0 { total += variation.allocation }
            ranges.append(FSAllocationRange(variationId: variation.id, lower: lower, upper: total))
        }
        return FSBucketExplanation(hash: value, bucket: Int(value % 100), ranges: ranges)
    }
}

extension Targeting {
    func explain(_ visitor: PreparedContext, visitorId: String, context: [String: FSJSONValue]) -> [FSTargetingGroupExplanation] {
        zip(groups, written).map { rules, written in
            let conditions = zip(rules, written).map { rule, text in
                let actual: String? = switch text.key {
                case "fs_users"?: FSJSONValue.string(visitorId).jsonString()
                case "fs_all_users"?, nil: nil
                case let key?: context[key]?.jsonString()
                }
                return FSConditionExplanation(key: text.key, operator: text.operatorName, expected: text.value?.jsonString(),
                                              contextValue: actual, matched: rule.isSatisfied(by: visitor))
            }
            return FSTargetingGroupExplanation(matched: conditions.allSatisfy(\.matched), conditions: conditions)
        }
    }
}
