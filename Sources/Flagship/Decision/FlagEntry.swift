/// One flag of a visitor: its value and the campaign and variation that gave it.
struct FlagEntry: Sendable, Equatable {
    let key: String
    /// May be `.null`: with `exposeAllKeys=true` the Decision API lists sibling variations' keys with
    /// `null`, and such a flag exists (reads give the default value).
    let value: JSONValue
    let origin: FlagOrigin
}

/// The campaign and variation a flag comes from: what flag metadata shows and an activate reports.
struct FlagOrigin: Sendable, Equatable {
    var campaignId: String
    var campaignName: String
    var variationGroupId: String
    var variationGroupName: String
    var variationId: String
    var variationName: String
    var isReference: Bool
    var campaignType: String
    var slug: String?

    init(_ campaign: AssignedCampaign) {
        campaignId = campaign.campaignId
        campaignName = campaign.campaignName
        variationGroupId = campaign.variationGroupId
        variationGroupName = campaign.variationGroupName
        variationId = campaign.variationId
        variationName = campaign.variationName
        isReference = campaign.isReference
        campaignType = campaign.type
        slug = campaign.slug
    }
}

extension FlagEntry {
    /// The visitor's flags from its campaigns, merged campaign by campaign in the given (response)
    /// order: when two campaigns give the same key, the later one wins (PROTOCOL.md section 1).
    static func merge(_ campaigns: [AssignedCampaign]) -> [String: FlagEntry] {
        var flags: [String: FlagEntry] = [:]
        for campaign in campaigns {
            let origin = FlagOrigin(campaign)
            for (key, value) in campaign.flags {
                flags[key] = FlagEntry(key: key, value: value, origin: origin)
            }
        }
        return flags
    }
}
