import Foundation

/// The Decision API's answer for one visitor (PROTOCOL.md section 1).
///
/// Read leniently, as the official SDKs do: unknown fields are ignored and missing optional fields
/// take their defaults (`""`, `false`, `null`), so a server that adds fields never breaks the SDK.
/// Only a body that cannot be a decision at all (not JSON, truncated, not an object, `campaigns`
/// not an array) is refused, with ``DecisionError/malformedBody(_:)``.
///
/// Within a well-formed answer, one bad campaign does not spoil the others:
/// - a campaign without its `id`, `variationGroupId` or `variation.id` (missing, empty or not a
///   string) is skipped, and why is kept in ``skippedCampaigns`` for the caller to log: without
///   those ids it can be neither exposed (activate) nor remembered (assignment history);
/// - a campaign whose `variation.modifications` lacks `type` or `value` is kept, with no flags:
///   the visitor still is assigned to it.
package struct DecisionResponse: Sendable, Equatable {
    package var visitorId: String?
    package var panic: Bool
    /// In response order: flags are merged in this order, the later campaign winning.
    package var campaigns: [AssignedCampaign]
    /// `extras.accountSettings`, when the answer has it.
    package var accountSettings: AccountSettings?
    /// One sentence per campaign left out, naming its position (from 1), its id when it has one,
    /// and what it lacked: `campaign #3 (id "c3") was skipped: it has no "variationGroupId"`.
    package var skippedCampaigns: [String]
    /// One sentence per flag left out of a kept campaign because its value is unusable (a number beyond
    /// a double, a lone surrogate, invalid UTF-8, nested too deep): the campaign's other flags are kept.
    package var droppedFlags: [String]
    /// The version (sha256) of the bucketing file that decided, in bucketing mode.
    package var fileVersion: String?

    package init(visitorId: String? = nil, panic: Bool = false, campaigns: [AssignedCampaign] = [],
         accountSettings: AccountSettings? = nil, skippedCampaigns: [String] = [], droppedFlags: [String] = []) {
        self.droppedFlags = droppedFlags
        self.visitorId = visitorId
        self.panic = panic
        self.campaigns = campaigns
        self.accountSettings = accountSettings
        self.skippedCampaigns = skippedCampaigns
    }
}

/// The account's settings: the Decision API sends them back with `extras[]=accountSettings`, a
/// bucketing file has them at its top level.
package struct AccountSettings: Sendable, Equatable {
    /// Experience continuity (cross-platform visitor) is enabled.
    package var enabledXPC: Bool
    /// One visitor, one test.
    package var enabled1V1T: Bool

    package init(enabledXPC: Bool = false, enabled1V1T: Bool = false) {
        self.enabledXPC = enabledXPC
        self.enabled1V1T = enabled1V1T
    }
}

extension DecisionResponse {
    /// Reads a Decision API body.
    package init(json data: Data) throws(DecisionError) {
        guard !data.isEmpty else { throw .malformedBody("the body is empty") }
        let parsed: TolerantJSON
        do {
            parsed = try TolerantJSON(data)
        } catch {
            throw .malformedBody("the body (\(data.count) bytes) is not valid JSON, or is truncated")
        }
        // An unusable value inside one flag's value costs that flag only; anywhere else, the body.
        var unusableFlags: [Int: [String: String]] = [:]
        for unusable in parsed.unusable {
            guard unusable.path.count >= 6, unusable.path[0] == .key("campaigns"), case .index(let campaign) = unusable.path[1],
                  Array(unusable.path[2...4]) == [.key("variation"), .key("modifications"), .key("value")],
                  case .key(let flag) = unusable.path[5] else {
                throw .malformedBody(unusable.sentence)
            }
            unusableFlags[campaign, default: [:]][flag] = unusable.reason
        }
        guard case .object(let body) = parsed.value else {
            throw .malformedBody("the body is JSON but not an object")
        }

        var campaigns: [AssignedCampaign] = []
        var skipped: [String] = []
        var droppedFlags: [String] = []
        switch body["campaigns"] {
        case nil, .null?:
            break
        case .array(let entries)?:
            for (index, entry) in entries.enumerated() {
                do {
                    var campaign = try AssignedCampaign(decided: entry)
                    for (flag, reason) in (unusableFlags[index] ?? [:]).sorted(by: { $0.key < $1.key }) {
                        campaign.flags[flag] = nil
                        droppedFlags.append("flag \"\(flag)\" of campaign \"\(campaign.campaignId)\" was dropped: \(reason)")
                    }
                    campaigns.append(campaign)
                } catch {
                    let id = entry["id"]?.stringValue.map { " (id \"\($0)\")" } ?? ""
                    skipped.append("campaign #\(index + 1)\(id) was skipped: \(error.reason)")
                }
            }
        case .some:
            throw .malformedBody("\"campaigns\" is not an array")
        }

        let settings = body["extras"]?["accountSettings"]?.objectValue.map { settings in
            AccountSettings(enabledXPC: settings["enabledXPC"]?.boolValue ?? false,
                            enabled1V1T: settings["enabled1V1T"]?.boolValue ?? false)
        }
        self.init(visitorId: body["visitorId"]?.stringValue, panic: body["panic"]?.boolValue ?? false,
                  campaigns: campaigns, accountSettings: settings, skippedCampaigns: skipped, droppedFlags: droppedFlags)
    }
}

extension AssignedCampaign {
    /// Why a campaign of a decision was left out.
    struct Unusable: Error {
        let reason: String
    }

    /// A campaign as the Decision API gives it, mapped field by field; `activated` is false.
    init(decided entry: FSJSONValue) throws(Unusable) {
        guard case .object = entry else { throw Unusable(reason: "it is not an object") }
        func requiredId(_ value: FSJSONValue?, _ name: String) throws(Unusable) -> String {
            guard let id = value?.stringValue, !id.isEmpty else { throw Unusable(reason: "it has no \"\(name)\"") }
            return id
        }
        let variation = entry["variation"]
        self.init(
            campaignId: try requiredId(entry["id"], "id"),
            campaignName: entry["name"]?.stringValue ?? "",
            variationGroupId: try requiredId(entry["variationGroupId"], "variationGroupId"),
            variationGroupName: entry["variationGroupName"]?.stringValue ?? "",
            variationId: try requiredId(variation?["id"], "variation.id"),
            variationName: variation?["name"]?.stringValue ?? "",
            isReference: variation?["reference"]?.boolValue ?? false,
            type: entry["type"]?.stringValue ?? "",
            slug: entry["slug"]?.stringValue,
            activated: false,
            flags: Self.flags(of: variation?["modifications"]))
    }

    /// Every key of `modifications.value` is a flag, provided `modifications` also has its `type`.
    private static func flags(of modifications: FSJSONValue?) -> [String: FSJSONValue] {
        guard modifications?["type"]?.stringValue != nil, let value = modifications?["value"]?.objectValue else {
            return [:]
        }
        return value
    }
}
