import Foundation
import FlagshipStore

/// The visitor cache document, version 1: what `FSVisitorCacheDelegate.cacheVisitor` receives and
/// `lookupVisitor` gives back. Compatible with the official SDKs' custom-cache format.
///
/// Read leniently (unknown keys ignored, missing optional fields defaulted, `assignationHistory`
/// accepted for `assignmentsHistory`), but never trusted blindly: another `version`, or another
/// visitor's id, is refused.
package struct VisitorCacheDocument: Sendable, Equatable {
    static let currentVersion = 1

    package var visitorId: String
    package var anonymousId: String?
    package var consent: Bool
    package var context: [String: FSJSONValue]
    package var campaigns: [AssignedCampaign]
    /// Variation group id → variation id: what the visitor was assigned, kept across fetches.
    package var assignmentsHistory: [String: String]
    /// What the platform was told about the visitor (`reported`): written by this SDK only, read
    /// leniently, ignored by the official SDKs' readers (an unknown key).
    package var reported = ReportedFacts()
    /// The flags dropped when the document was read, each as a sentence: a flag value that could
    /// not be read (a number beyond a double, a lone surrogate, invalid UTF-8, nested too deep)
    /// costs that flag alone. Not part of the document: left out of `==` and of `jsonData()`.
    package var droppedFlags: [String] = []

    /// About the size of `jsonText()` in bytes, without writing it: what the hot visitors'
    /// budget counts (flag values are counted at a flat 48 bytes each).
    package var estimatedBytes: Int {
        var bytes = 160 + visitorId.utf8.count + (anonymousId?.utf8.count ?? 0) + context.count * 40 + assignmentsHistory.count * 64
        for campaign in campaigns {
            bytes += 200 + campaign.campaignId.utf8.count + campaign.campaignName.utf8.count + campaign.variationGroupId.utf8.count
                + campaign.variationGroupName.utf8.count + campaign.variationId.utf8.count + campaign.variationName.utf8.count
                + campaign.flags.count * 48
        }
        return bytes + reported.exposures.count * 80
    }

    /// How many campaigns the visitor was assigned (what `flagship visitors` shows).
    package var campaignCount: Int { campaigns.count }

    package init(visitorId: String, anonymousId: String? = nil, consent: Bool = true, context: [String: FSJSONValue] = [:],
         campaigns: [AssignedCampaign] = [], assignmentsHistory: [String: String] = [:]) {
        self.visitorId = visitorId
        self.anonymousId = anonymousId
        self.consent = consent
        self.context = context
        self.campaigns = campaigns
        self.assignmentsHistory = assignmentsHistory
    }

    package static func == (lhs: VisitorCacheDocument, rhs: VisitorCacheDocument) -> Bool {
        lhs.visitorId == rhs.visitorId && lhs.anonymousId == rhs.anonymousId && lhs.consent == rhs.consent
            && lhs.context == rhs.context && lhs.campaigns == rhs.campaigns && lhs.assignmentsHistory == rhs.assignmentsHistory
            && lhs.reported == rhs.reported
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
        case .wrongVisitor:
            // The ids stay in the case, out of the text: it is logged above debug, and ids are personal data.
            return "the visitor cache document looked up for one visitor belongs to another"
        case .invalid(let reason):
            return "the visitor cache document is invalid: \(reason)"
        }
    }
}

extension VisitorCacheDocument {
    /// Reads a document, checking its version and, when given, that it is `expectedVisitorId`'s.
    package init(data: Data, expectedVisitorId: String? = nil) throws(VisitorCacheDocumentError) {
        // Read tolerantly: an unusable value inside one flag's value costs that flag only.
        var parsed: FSJSONValue
        var dropped: [(campaign: Int, flag: String, reason: String)] = []
        do {
            let tolerant = try TolerantJSON(data)
            parsed = tolerant.value
            for unusable in tolerant.unusable {
                let path = unusable.path
                guard path.count >= 5, path[0] == .key("data"), path[1] == .key("campaigns"), case .index(let campaign) = path[2],
                      path[3] == .key("flags"), case .key(let flag) = path[4] else {
                    throw VisitorCacheDocumentError.notJSON(unusable.sentence)
                }
                parsed.remove(at: path[0...4])
                dropped.append((campaign, flag, unusable.reason))
            }
        } catch let error as VisitorCacheDocumentError {
            throw error
        } catch {
            throw .notJSON("the document (\(data.count) bytes) is not valid JSON, or is truncated")
        }
        // Read from the tree just parsed, not parsed again by `JSONDecoder`: a returning
        // visitor's lookup spent more in that second parse than in its decision.
        let envelope: Envelope
        do {
            envelope = try Envelope(parsed)
        } catch {
            throw .invalid(error.sentence)
        }
        guard envelope.version == Self.currentVersion else { throw .unsupportedVersion(envelope.version) }
        guard let body = envelope.data else { throw .invalid("it has no \"data\" object") }
        if let expectedVisitorId, body.visitorId != expectedVisitorId {
            throw .wrongVisitor(expected: expectedVisitorId, found: body.visitorId)
        }
        self.init(visitorId: body.visitorId, anonymousId: body.anonymousId, consent: body.consent ?? true,
                  context: body.context ?? [:], campaigns: body.campaigns ?? [],
                  assignmentsHistory: body.assignmentsHistory ?? body.assignationHistory ?? [:])
        reported = body.reported
        let campaignIds = campaigns.map(\.campaignId)
        droppedFlags = dropped.map { drop in
            let campaign = campaignIds.indices.contains(drop.campaign) ? "campaign \"\(campaignIds[drop.campaign])\"" : "campaign #\(drop.campaign + 1)"
            return "flag \"\(drop.flag)\" of \(campaign) was dropped: \(drop.reason)"
        }
    }

    /// The document as JSON text, in the documented shape, keys sorted. Written by hand: it is
    /// made at every `fetchFlags`, where `JSONEncoder` cost more than the bucketing decision.
    package func jsonData() -> Data {
        Data(jsonText().utf8)
    }

    package func jsonText() -> String {
        var text = "{\"data\":{\"anonymousId\":"
        text.reserveCapacity(512 + campaigns.count * 320)
        if let anonymousId { FSJSONValue.writeString(anonymousId, into: &text) } else { text += "null" }
        text += ",\"assignmentsHistory\":"
        FSJSONValue.object(assignmentsHistory.mapValues(FSJSONValue.string)).write(into: &text)
        text += ",\"campaigns\":["
        for (index, campaign) in campaigns.enumerated() {
            if index > 0 { text += "," }
            campaign.write(into: &text)
        }
        text += "],\"consent\":"
        text += consent ? "true" : "false"
        text += ",\"context\":"
        FSJSONValue.object(context).write(into: &text, integralDoubles: .asIntegers)
        if !reported.isEmpty {
            text += ",\"reported\":"
            reported.write(into: &text)
        }
        text += ",\"visitorId\":"
        FSJSONValue.writeString(visitorId, into: &text)
        text += "},\"version\":\(Self.currentVersion)}"
        return text
    }

    private struct Envelope {
        var version: Int?
        var data: Body?

        init(_ value: FSJSONValue) throws(FieldError) {
            let root = try DocumentObject(value, path: "")
            version = try root.optional("version") { $0.int64Value.flatMap { Int(exactly: $0) } }
            data = try root.optionalObject("data").map(Body.init)
        }
    }

    private struct Body {
        var visitorId: String
        var anonymousId: String?
        var consent: Bool?
        var context: [String: FSJSONValue]?
        var campaigns: [AssignedCampaign]?
        var assignmentsHistory: [String: String]?
        var assignationHistory: [String: String]?
        var reported: ReportedFacts

        init(_ body: DocumentObject) throws(FieldError) {
            reported = body.fields["reported"].map(ReportedFacts.init) ?? ReportedFacts()
            visitorId = try body.required("visitorId", \.stringValue)
            anonymousId = try body.optional("anonymousId", \.stringValue)
            consent = try body.optional("consent", \.boolValue)
            context = try body.optional("context") { $0.objectValue?.mapValues(\.asDecoded) }
            campaigns = try body.optionalArray("campaigns")?.map { element throws(FieldError) in
                try AssignedCampaign(element)
            }
            assignmentsHistory = try body.optional("assignmentsHistory", Self.history)
            assignationHistory = try body.optional("assignationHistory", Self.history)
        }

        private static func history(_ value: FSJSONValue) -> [String: String]? {
            guard let object = value.objectValue else { return nil }
            var history: [String: String] = [:]
            for (key, value) in object {
                guard let variation = value.stringValue else { return nil }
                history[key] = variation
            }
            return history
        }
    }
}

/// A field of a cache document that is missing or of the wrong type, with its path
/// (`data.campaigns[0].variationGroupId`).
struct FieldError: Error {
    let sentence: String
}

/// An object of a cache document read field by field, as `Decodable` would, from a tree already
/// parsed: unknown keys ignored, `null` taken as absent for an optional field.
struct DocumentObject {
    let fields: [String: FSJSONValue]
    let path: String

    init(_ value: FSJSONValue, path: String) throws(FieldError) {
        guard let fields = value.objectValue else { throw FieldError(sentence: "wrong type at \(path.isEmpty ? "the top" : path)") }
        self.fields = fields
        self.path = path
    }

    func at(_ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    func required<T>(_ key: String, _ read: (FSJSONValue) -> T?) throws(FieldError) -> T {
        guard let value = fields[key] else { throw FieldError(sentence: "missing \(at(key))") }
        guard let read = read(value) else { throw FieldError(sentence: "wrong type at \(at(key))") }
        return read
    }

    func optional<T>(_ key: String, _ read: (FSJSONValue) -> T?) throws(FieldError) -> T? {
        guard let value = fields[key], !value.isNull else { return nil }
        guard let read = read(value) else { throw FieldError(sentence: "wrong type at \(at(key))") }
        return read
    }

    func optionalObject(_ key: String) throws(FieldError) -> DocumentObject? {
        guard let value = fields[key], !value.isNull else { return nil }
        return try DocumentObject(value, path: at(key))
    }

    /// The elements of an array field, each as an object with its path (`campaigns[2]`).
    func optionalArray(_ key: String) throws(FieldError) -> [DocumentObject]? {
        guard let value = fields[key], !value.isNull else { return nil }
        guard case .array(let elements) = value else { throw FieldError(sentence: "wrong type at \(at(key))") }
        var objects: [DocumentObject] = []
        objects.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            objects.append(try DocumentObject(element, path: "\(at(key))[\(index)]"))
        }
        return objects
    }
}

extension FSJSONValue {
    /// The value as `JSONDecoder` gives it to `FSJSONValue(from:)`: a number with no fraction that
    /// fits 64 bits is an integer (`1.0`, `1e2`), whatever its spelling.
    var asDecoded: FSJSONValue {
        switch self {
        case .double(let value):
            if value.rounded() == value, let exact = Int64(exactly: value) { return .int(exact) }
            return self
        case .array(let elements):
            return .array(elements.map(\.asDecoded))
        case .object(let object):
            return .object(object.mapValues(\.asDecoded))
        default:
            return self
        }
    }
}

extension AssignedCampaign {
    /// A campaign of a visitor cache document, read from its parsed object.
    init(_ object: DocumentObject) throws(FieldError) {
        self.init(
            campaignId: try object.required("campaignId", \.stringValue),
            campaignName: try object.optional("campaignName", \.stringValue) ?? "",
            variationGroupId: try object.required("variationGroupId", \.stringValue),
            variationGroupName: try object.optional("variationGroupName", \.stringValue) ?? "",
            variationId: try object.required("variationId", \.stringValue),
            variationName: try object.optional("variationName", \.stringValue) ?? "",
            isReference: try object.optional("isReference", \.boolValue) ?? false,
            type: try object.optional("type", \.stringValue) ?? "",
            slug: try object.optional("slug", \.stringValue),
            activated: try object.optional("activated", \.boolValue) ?? false,
            flags: try object.optional("flags") { $0.objectValue?.mapValues(\.asDecoded) } ?? [:])
    }
}

extension VisitorCacheDocument {
    /// The document in parts for the default store's compact row (`CompactVisitorDocument`),
    /// written as `jsonText()` writes them; `nil` when a context value is `null` (the parts are
    /// put together with `json_patch`, which would drop it): then the whole document is stored.
    package func compactParts() -> CompactVisitorDocument? {
        guard let (rest, preset) = Self.splitPreset(context) else { return nil }
        var history = ""
        FSJSONValue.object(assignmentsHistory.mapValues(FSJSONValue.string)).write(into: &history)
        return CompactVisitorDocument(variations: campaigns.map { $0.variationText() }, activated: campaigns.map(\.activated),
                                      context: rest, preset: preset, assignmentsHistory: history,
                                      reported: reported.isEmpty ? nil : reported.jsonText)
    }

    /// A context as the compact rows hold it: the keys the SDK sets itself (`sdk_*`, `fs_*`,
    /// the same for every visitor of a process) apart, each part a JSON object text; `nil` when
    /// a value is `null`. Numbers are written as the whole context is where it goes: as the
    /// document writes them, or (`asDecisionContext`) as a decision row's context.
    package static func splitPreset(_ context: [String: FSJSONValue], asDecisionContext: Bool = false) -> (rest: String, preset: String?)? {
        let integralDoubles: FSJSONValue.IntegralDoubles = asDecisionContext ? .asDoubles : .asIntegers
        var rest: [String: FSJSONValue] = [:]
        var preset: [String: FSJSONValue] = [:]
        for (key, value) in context {
            if case .null = value { return nil }
            if key.hasPrefix("sdk_") || key.hasPrefix("fs_") { preset[key] = value } else { rest[key] = value }
        }
        var restText = ""
        FSJSONValue.object(rest).write(into: &restText, integralDoubles: integralDoubles)
        guard !preset.isEmpty else { return (restText, nil) }
        var presetText = ""
        FSJSONValue.object(preset).write(into: &presetText, integralDoubles: integralDoubles)
        return (restText, presetText)
    }
}
