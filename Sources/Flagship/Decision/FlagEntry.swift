/// One flag of a visitor: its value and the campaign and variation that gave it.
struct FlagEntry: Sendable, Equatable {
    let key: String
    /// May be `.null`: with `exposeAllKeys=true` the Decision API lists sibling variations' keys with
    /// `null`, and such a flag exists (reads give the default value).
    let value: JSONValue
    /// The campaign and variation the flag comes from: what metadata shows and an activate reports.
    let metadata: FSFlagMetadata
}

extension FlagEntry {
    /// The visitor's flags from its campaigns, merged campaign by campaign in the given (response)
    /// order: when two campaigns give the same key, the later one wins (PROTOCOL.md section 1).
    static func merge(_ campaigns: [AssignedCampaign]) -> [String: FlagEntry] {
        var flags: [String: FlagEntry] = [:]
        for campaign in campaigns {
            let metadata = FSFlagMetadata(campaign)
            for (key, value) in campaign.flags {
                flags[key] = FlagEntry(key: key, value: value, metadata: metadata)
            }
        }
        return flags
    }
}
