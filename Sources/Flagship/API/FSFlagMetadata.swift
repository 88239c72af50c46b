import Foundation

/// The campaign behind a flag: what to send a third-party tool for reporting.
public struct FSFlagMetadata: Sendable, Equatable {
    public let campaignId: String
    public let campaignName: String
    public let variationGroupId: String
    public let variationGroupName: String
    public let variationId: String
    public let variationName: String
    public let isReference: Bool
    public let campaignType: String
    /// The campaign's slug, `""` when none is set.
    public let slug: String

    /// The metadata of a flag that does not exist: every field empty.
    public static let empty = FSFlagMetadata(
        campaignId: "", campaignName: "", variationGroupId: "", variationGroupName: "",
        variationId: "", variationName: "", isReference: false, campaignType: "", slug: "")

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

    var jsonValue: JSONValue {
        .object([
            "campaignId": .string(campaignId), "campaignName": .string(campaignName),
            "variationGroupId": .string(variationGroupId), "variationGroupName": .string(variationGroupName),
            "variationId": .string(variationId), "variationName": .string(variationName),
            "isReference": .bool(isReference), "campaignType": .string(campaignType), "slug": .string(slug),
        ])
    }
}
