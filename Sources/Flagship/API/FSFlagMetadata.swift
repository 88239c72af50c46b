import Foundation

/// The campaign behind a flag: what to send a third-party tool for reporting.
public struct FSFlagMetadata: Sendable, Equatable {
    /// The id of the campaign that gives the flag.
    public let campaignId: String
    /// The campaign's name, `""` when the decision did not give it.
    public let campaignName: String
    /// The id of the campaign's variation group the visitor fell in.
    public let variationGroupId: String
    /// The variation group's name, `""` when the decision did not give it.
    public let variationGroupName: String
    /// The id of the variation the visitor was assigned.
    public let variationId: String
    /// The variation's name, `""` when the decision did not give it.
    public let variationName: String
    /// Whether the assigned variation is the campaign's reference (its original).
    public let isReference: Bool
    /// The campaign's type as the decision names it (`"ab"` for an A/B test); `""` when not given.
    public let campaignType: String
    /// The campaign's slug, `""` when none is set.
    public let slug: String

    /// The metadata of a flag that does not exist: every field empty.
    public static let empty = FSFlagMetadata(
        campaignId: "", campaignName: "", variationGroupId: "", variationGroupName: "",
        variationId: "", variationName: "", isReference: false, campaignType: "", slug: "")

    /// Metadata with each field given, as a test or a third-party integration builds it.
    public init(campaignId: String, campaignName: String, variationGroupId: String, variationGroupName: String,
                variationId: String, variationName: String, isReference: Bool, campaignType: String, slug: String) {
        self.campaignId = campaignId
        self.campaignName = campaignName
        self.variationGroupId = variationGroupId
        self.variationGroupName = variationGroupName
        self.variationId = variationId
        self.variationName = variationName
        self.isReference = isReference
        self.campaignType = campaignType
        self.slug = slug
    }

    init(_ campaign: AssignedCampaign) {
        self.init(campaignId: campaign.campaignId, campaignName: campaign.campaignName,
                  variationGroupId: campaign.variationGroupId, variationGroupName: campaign.variationGroupName,
                  variationId: campaign.variationId, variationName: campaign.variationName,
                  isReference: campaign.isReference, campaignType: campaign.type, slug: campaign.slug ?? "")
    }

    /// The fields as a dictionary, keys as named here.
    public func toJson() -> [String: Any] {
        jsonValue.foundationValue as? [String: Any] ?? [:]
    }

    var jsonValue: FSJSONValue {
        .object([
            "campaignId": .string(campaignId), "campaignName": .string(campaignName),
            "variationGroupId": .string(variationGroupId), "variationGroupName": .string(variationGroupName),
            "variationId": .string(variationId), "variationName": .string(variationName),
            "isReference": .bool(isReference), "campaignType": .string(campaignType), "slug": .string(slug),
        ])
    }
}
