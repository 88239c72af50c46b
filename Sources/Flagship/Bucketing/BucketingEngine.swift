/// One campaign a bucketing decision assigned: the campaign, the group that targeted the visitor,
/// and the variation the hash or the assignment history chose.
package struct BucketedCampaign: Sendable, Equatable {
    package var campaignId: String
    package var campaignName: String
    package var slug: String?
    package var type: String
    package var variationGroupId: String
    package var variationGroupName: String
    package var variationId: String
    package var variationName: String
    package var isReference: Bool
    /// The `modifications.type` label (`"FLAG"`, `"JSON"`...), `nil` when the file gave none.
    package var modificationsType: String?
    /// The keys of `modifications.value`; empty when the modifications lack `type` or `value`.
    package var flags: [String: FSJSONValue]

    package init(campaignId: String, campaignName: String = "", slug: String? = nil, type: String = "",
                 variationGroupId: String, variationGroupName: String = "", variationId: String,
                 variationName: String = "", isReference: Bool = false, modificationsType: String? = nil,
                 flags: [String: FSJSONValue] = [:]) {
        self.campaignId = campaignId
        self.campaignName = campaignName
        self.slug = slug
        self.type = type
        self.variationGroupId = variationGroupId
        self.variationGroupName = variationGroupName
        self.variationId = variationId
        self.variationName = variationName
        self.isReference = isReference
        self.modificationsType = modificationsType
        self.flags = flags
    }
}

/// What a bucketing file decides for one visitor.
package struct BucketingDecision: Sendable, Equatable {
    /// The file is in panic: no campaign, the SDK serves default values.
    package var panic: Bool
    /// In file order.
    package var campaigns: [BucketedCampaign]

    package init(panic: Bool, campaigns: [BucketedCampaign]) {
        self.panic = panic
        self.campaigns = campaigns
    }

    /// Every campaign's flags, merged in file order: a later campaign overwrites a key.
    package var flags: [String: FSJSONValue] {
        campaigns.reduce(into: [:]) { flags, campaign in
            flags.merge(campaign.flags) { _, later in later }
        }
    }
}

extension BucketingFile {
    /// The campaigns this file assigns a visitor (BUCKETING.md, "Decision"): in each campaign the
    /// first variation group whose targeting matches decides, by the assignment history when it
    /// names a variation of that group, else by the hash of the group id and visitor id. A visitor
    /// the hash leaves unallocated, or whose remembered variation is gone, gets nothing from that
    /// campaign: the next group is not tried.
    ///
    /// - Parameters:
    ///   - context: every key the visitor sends, the predefined `sdk_*` and `fs_*` ones included.
    ///   - history: variation group id → variation id, the visitor's assignments so far.
    package func decide(visitorId: String, context: [String: FSJSONValue], history: [String: String]) -> BucketingDecision {
        guard !panic else { return BucketingDecision(panic: true, campaigns: []) }
        if let compiled, let assigned = compiled.decide(visitorId: visitorId, context: context, history: history) {
            return BucketingDecision(panic: false, campaigns: assigned)
        }
        return decideFromCampaigns(visitorId: visitorId, context: context, history: history)
    }

    /// `decide` on the engine's structures (`campaigns`), which a file read from the JSON holds.
    package func decideFromCampaigns(visitorId: String, context: [String: FSJSONValue], history: [String: String]) -> BucketingDecision {
        guard !panic else { return BucketingDecision(panic: true, campaigns: []) }
        let visitor = PreparedContext(visitorId: visitorId, context: context, keys: contextKeys,
                                      readsVisitorId: readsVisitorId)
        var assigned: [BucketedCampaign] = []
        assigned.reserveCapacity(campaigns.count)
        for campaign in campaigns {
            guard let group = campaign.variationGroups.first(where: { $0.targeting.matches(visitor) }),
                  let assignment = group.variation(visitorId: visitorId, history: history)?.assignment else { continue }
            assigned.append(assignment)
        }
        return BucketingDecision(panic: false, campaigns: assigned)
    }
}

extension BucketingFile.VariationGroup {
    /// This group's variation for a visitor it targets, or `nil`: the remembered one if the
    /// history names one (still in the group), else the first whose running allocation total
    /// passes `hash % 100`.
    func variation(visitorId: String, history: [String: String]) -> BucketingFile.Variation? {
        if !history.isEmpty, let remembered = history[id] {
            return variations.first { $0.id == remembered }
        }
        var hash = hashPrefix
        hash.append(utf8Of: visitorId)
        let bucket = Double(hash.finalized() % 100)
        var total = 0.0
        for variation in variations where variation.allocation > 0 {
            total += variation.allocation
            if bucket < total { return variation }
        }
        return nil
    }
}
