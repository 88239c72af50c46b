import Foundation

/// The visitor cache document, version 1: what `FSVisitorCacheDelegate.cacheVisitor` receives and
/// `lookupVisitor` gives back. Compatible with the official SDKs' custom-cache format.
///
/// Read leniently (unknown keys ignored, missing optional fields defaulted, `assignationHistory`
/// accepted for `assignmentsHistory`), but never trusted blindly: another `version`, or another
/// visitor's id, is refused.
package struct VisitorCacheDocument: Sendable, Equatable {
    static let currentVersion = 1

    var visitorId: String
    var anonymousId: String?
    var consent: Bool
    var context: [String: JSONValue]
    var campaigns: [AssignedCampaign]
    /// Variation group id → variation id: what the visitor was assigned, kept across fetches.
    var assignmentsHistory: [String: String]

    /// How many campaigns the visitor was assigned (what `flagship visitors` shows).
    package var campaignCount: Int { campaigns.count }

    init(visitorId: String, anonymousId: String? = nil, consent: Bool = true, context: [String: JSONValue] = [:],
         campaigns: [AssignedCampaign] = [], assignmentsHistory: [String: String] = [:]) {
        self.visitorId = visitorId
        self.anonymousId = anonymousId
        self.consent = consent
        self.context = context
        self.campaigns = campaigns
        self.assignmentsHistory = assignmentsHistory
    }
}

/// Why a visitor cache document was not used.
package enum VisitorCacheDocumentError: Error, Equatable, CustomStringConvertible {
    case notJSON(String)
    case unsupportedVersion(Int?)
    case wrongVisitor(expected: String, found: String)
    case invalid(String)

    package var description: String {
        switch self {
        case .notJSON(let reason):
            return "the visitor cache document is not JSON (\(reason))"
        case .unsupportedVersion(let version):
            return "the visitor cache document has version \(version.map(String.init) ?? "none"); only version \(VisitorCacheDocument.currentVersion) is read"
        case let .wrongVisitor(expected, found):
            return "the visitor cache document looked up for visitor '\(expected)' belongs to visitor '\(found)'"
        case .invalid(let reason):
            return "the visitor cache document is invalid: \(reason)"
        }
    }
}

extension VisitorCacheDocument {
    /// Reads a document, checking its version and, when given, that it is `expectedVisitorId`'s.
    package init(data: Data, expectedVisitorId: String? = nil) throws(VisitorCacheDocumentError) {
        let envelope: Envelope
        do {
            _ = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw .notJSON(error.localizedDescription)
        }
        do {
            envelope = try JSONDecoder().decode(Envelope.self, from: data)
        } catch {
            throw .invalid(Self.describe(error))
        }
        guard envelope.version == Self.currentVersion else { throw .unsupportedVersion(envelope.version) }
        guard let body = envelope.data else { throw .invalid("it has no \"data\" object") }
        if let expectedVisitorId, body.visitorId != expectedVisitorId {
            throw .wrongVisitor(expected: expectedVisitorId, found: body.visitorId)
        }
        self.init(visitorId: body.visitorId, anonymousId: body.anonymousId, consent: body.consent ?? true,
                  context: body.context ?? [:], campaigns: body.campaigns ?? [],
                  assignmentsHistory: body.assignmentsHistory ?? body.assignationHistory ?? [:])
    }

    /// The document as JSON text, in the documented shape.
    func jsonData() throws -> Data {
        let envelope = Envelope(version: Self.currentVersion, data: Body(
            visitorId: visitorId, anonymousId: anonymousId, consent: consent, context: context,
            campaigns: campaigns, assignmentsHistory: assignmentsHistory, assignationHistory: nil))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(envelope)
    }

    private struct Envelope: Codable {
        var version: Int?
        var data: Body?
    }

    private struct Body: Codable {
        var visitorId: String
        var anonymousId: String?
        var consent: Bool?
        var context: [String: JSONValue]?
        var campaigns: [AssignedCampaign]?
        var assignmentsHistory: [String: String]?
        var assignationHistory: [String: String]?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(visitorId, forKey: .visitorId)
            try container.encode(anonymousId, forKey: .anonymousId)
            try container.encode(consent, forKey: .consent)
            try container.encode(context, forKey: .context)
            try container.encode(campaigns, forKey: .campaigns)
            try container.encode(assignmentsHistory, forKey: .assignmentsHistory)
        }
    }

    /// A decoding error as a short sentence naming the path of the offending field.
    private static func describe(_ error: any Error) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().drop { $0 == "." }.description
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            return "missing \(path(context.codingPath + [key]))"
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            return "wrong type at \(path(context.codingPath))"
        case .dataCorrupted(let context)?:
            return "unreadable value at \(path(context.codingPath))"
        default:
            return error.localizedDescription
        }
    }
}
