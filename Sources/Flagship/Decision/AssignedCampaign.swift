import Foundation

/// One campaign a visitor was assigned, with the flags it gave: from a decision, or from the cache.
package struct AssignedCampaign: Sendable, Equatable, Codable {
    package var campaignId: String
    package var campaignName: String
    package var variationGroupId: String
    package var variationGroupName: String
    package var variationId: String
    package var variationName: String
    package var isReference: Bool
    package var type: String
    package var slug: String?
    package var activated: Bool
    package var flags: [String: FSJSONValue]

    package init(campaignId: String, campaignName: String = "", variationGroupId: String, variationGroupName: String = "",
         variationId: String, variationName: String = "", isReference: Bool = false, type: String = "",
         slug: String? = nil, activated: Bool = false, flags: [String: FSJSONValue] = [:]) {
        self.campaignId = campaignId
        self.campaignName = campaignName
        self.variationGroupId = variationGroupId
        self.variationGroupName = variationGroupName
        self.variationId = variationId
        self.variationName = variationName
        self.isReference = isReference
        self.type = type
        self.slug = slug
        self.activated = activated
        self.flags = flags
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        campaignId = try container.decode(String.self, forKey: .campaignId)
        campaignName = try container.decodeIfPresent(String.self, forKey: .campaignName) ?? ""
        variationGroupId = try container.decode(String.self, forKey: .variationGroupId)
        variationGroupName = try container.decodeIfPresent(String.self, forKey: .variationGroupName) ?? ""
        variationId = try container.decode(String.self, forKey: .variationId)
        variationName = try container.decodeIfPresent(String.self, forKey: .variationName) ?? ""
        isReference = try container.decodeIfPresent(Bool.self, forKey: .isReference) ?? false
        type = try container.decodeIfPresent(String.self, forKey: .type) ?? ""
        slug = try container.decodeIfPresent(String.self, forKey: .slug)
        activated = try container.decodeIfPresent(Bool.self, forKey: .activated) ?? false
        flags = try container.decodeIfPresent([String: FSJSONValue].self, forKey: .flags) ?? [:]
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(campaignId, forKey: .campaignId)
        try container.encode(campaignName, forKey: .campaignName)
        try container.encode(variationGroupId, forKey: .variationGroupId)
        try container.encode(variationGroupName, forKey: .variationGroupName)
        try container.encode(variationId, forKey: .variationId)
        try container.encode(variationName, forKey: .variationName)
        try container.encode(isReference, forKey: .isReference)
        try container.encode(type, forKey: .type)
        try container.encode(slug, forKey: .slug) // null, not absent: the documented shape
        try container.encode(activated, forKey: .activated)
        try container.encode(flags, forKey: .flags)
    }

    private enum CodingKeys: String, CodingKey {
        case campaignId, campaignName, variationGroupId, variationGroupName, variationId, variationName
        case isReference, type, slug, activated, flags
    }
}

extension AssignedCampaign {
    /// Appends the campaign as the visitor cache document holds it, keys sorted, as `encode(to:)`
    /// writes it (`slug` is `null` when absent, not left out).
    func write(into text: inout String) {
        text += "{\"activated\":"
        text += activated ? "true" : "false"
        text += ","
        writeVariation(into: &text)
    }

    /// The campaign as the document lists it without `activated` (which is the visitor's own):
    /// what the default store keeps once for every visitor placed in that variation.
    func variationText() -> String {
        var text = "{"
        writeVariation(into: &text)
        return text
    }

    /// Every key but `activated`, sorted, then the closing brace.
    private func writeVariation(into text: inout String) {
        text += "\"campaignId\":"
        FSJSONValue.writeString(campaignId, into: &text)
        text += ",\"campaignName\":"
        FSJSONValue.writeString(campaignName, into: &text)
        text += ",\"flags\":"
        FSJSONValue.object(flags).write(into: &text, integralDoubles: .asIntegers)
        text += ",\"isReference\":"
        text += isReference ? "true" : "false"
        text += ",\"slug\":"
        if let slug { FSJSONValue.writeString(slug, into: &text) } else { text += "null" }
        text += ",\"type\":"
        FSJSONValue.writeString(type, into: &text)
        text += ",\"variationGroupId\":"
        FSJSONValue.writeString(variationGroupId, into: &text)
        text += ",\"variationGroupName\":"
        FSJSONValue.writeString(variationGroupName, into: &text)
        text += ",\"variationId\":"
        FSJSONValue.writeString(variationId, into: &text)
        text += ",\"variationName\":"
        FSJSONValue.writeString(variationName, into: &text)
        text += "}"
    }
}
