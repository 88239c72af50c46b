import Foundation

/// Bucketing mode: decisions made on this machine from the poller's current file, no request per
/// visitor. The answer has the Decision API's shape, so a visitor is handled alike in both modes.
struct BucketingDecider: FlagDecider {
    let poller: BucketingPoller

    func decide(_ request: DecisionRequest) async throws(DecisionError) -> DecisionResponse {
        guard let file = await poller.usableFile() else {
            // Cancelled while the first file of this start downloads: not a want of a file.
            if Task.isCancelled { throw .transport("cancelled while the first bucketing file downloads") }
            throw .noBucketingFile
        }
        let decision = file.decide(visitorId: request.visitorId, context: request.context,
                                   history: request.assignmentsHistory)
        var response = DecisionResponse(visitorId: request.visitorId, panic: decision.panic,
                                        campaigns: decision.campaigns.map(AssignedCampaign.init(bucketed:)),
                                        accountSettings: file.accountSettings)
        response.fileVersion = file.version
        return response
    }

    var reportsSegment: Bool { true }

    /// Only when the file's account settings enable it (`enabledXPC`).
    var allowsExperienceContinuity: Bool {
        poller.file?.accountSettings.enabledXPC ?? false
    }
}

extension AssignedCampaign {
    init(bucketed campaign: BucketedCampaign) {
        self.init(campaignId: campaign.campaignId, campaignName: campaign.campaignName,
                  variationGroupId: campaign.variationGroupId, variationGroupName: campaign.variationGroupName,
                  variationId: campaign.variationId, variationName: campaign.variationName,
                  isReference: campaign.isReference, type: campaign.type, slug: campaign.slug,
                  activated: false, flags: campaign.flags)
    }
}
