/// One flag of a visitor: its value and the campaign and variation that gave it.
///
/// A class, immutable: a flag read takes one reference out of the visitor's dictionary instead
/// of copying a value and the ten strings of its metadata.
package final class FlagEntry: Sendable, Equatable {
    package let key: String
    /// May be `.null`: with `exposeAllKeys=true` the Decision API lists sibling variations' keys with
    /// `null`, and such a flag exists (reads give the default value).
    package let value: FSJSONValue
    /// The campaign and variation the flag comes from: what metadata shows and an activate reports.
    package let metadata: FSFlagMetadata
    /// This flag's place in `VisitorState.exposureReported`, given by `merge`.
    package let slot: Int
    /// Whether its campaign is an A/B test (reason `SPLIT`), worked out once, not at each details read.
    let isSplit: Bool

    package init(key: String, value: FSJSONValue, metadata: FSFlagMetadata, slot: Int = 0) {
        self.key = key
        self.value = value
        self.metadata = metadata
        self.slot = slot
        isSplit = metadata.campaignType == "ab"
    }

    /// The same flag: key, value and campaign (the slot is bookkeeping).
    package static func == (lhs: FlagEntry, rhs: FlagEntry) -> Bool {
        lhs === rhs || (lhs.key == rhs.key && lhs.value == rhs.value && lhs.metadata == rhs.metadata)
    }
}

extension FlagEntry {
    /// The visitor's flags from its campaigns, merged campaign by campaign in the given (response)
    /// order: when two campaigns give the same key, the later one wins (PROTOCOL.md section 1).
    package static func merge(_ campaigns: [AssignedCampaign]) -> [String: FlagEntry] {
        var flags: [String: FlagEntry] = [:]
        var slot = 0
        for campaign in campaigns {
            let metadata = FSFlagMetadata(campaign)
            for (key, value) in campaign.flags {
                flags[key] = FlagEntry(key: key, value: value, metadata: metadata, slot: slot)
                slot += 1
            }
        }
        return flags
    }

    /// The number of slots `merge` gave out for these campaigns.
    package static func slotCount(_ campaigns: [AssignedCampaign]) -> Int {
        campaigns.reduce(0) { $0 + $1.flags.count }
    }
}
