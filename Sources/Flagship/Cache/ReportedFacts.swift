import Foundation

/// What the platform was told about a visitor, kept in its visitor cache document (`reported`):
/// the consent it last received, a digest of the context of the last SEGMENT hit, and each
/// variation exposed with the time of its last activate. A request that would tell the platform
/// the same again sends nothing (`FSDeduplication`).
///
/// Recorded when the hit is accepted: every accepted hit reaches the platform (the hit cache keeps
/// it until it is delivered), so "accepted" and "told" differ only by the delivery delay. Kept in
/// the document rather than in this process: it survives a restart, and a fleet's instances read
/// it from their shared store (the store is the authority; a lookup reads it at every build).
package struct ReportedFacts: Sendable, Equatable {
    /// The consent the platform last received (`true` only: a withdrawal erases the document).
    package var consent: Bool?
    /// The sha256 (hex, first 32 digits) of the context the last SEGMENT hit carried.
    package var contextDigest: String?
    /// Variation group id → the variation exposed and when its last activate was sent (unix ms).
    package var exposures: [String: Exposure] = [:]

    package struct Exposure: Sendable, Equatable {
        package var variationId: String
        package var sentAt: Int64

        package init(variationId: String, sentAt: Int64) {
            self.variationId = variationId
            self.sentAt = sentAt
        }
    }

    package init(consent: Bool? = nil, contextDigest: String? = nil, exposures: [String: Exposure] = [:]) {
        self.consent = consent
        self.contextDigest = contextDigest
        self.exposures = exposures
    }

    package var isEmpty: Bool { consent == nil && contextDigest == nil && exposures.isEmpty }

    /// Whether the variation's activate was sent within `window` before `now`.
    func exposed(variationGroupId: String, variationId: String, within window: TimeInterval, now: Int64) -> Bool {
        guard window > 0, let last = exposures[variationGroupId], last.variationId == variationId else { return false }
        let age = now - last.sentAt
        // A clock stepped back makes the age negative: still within the window, not sent again.
        return age < Int64(window * 1000)
    }

    /// The digest a SEGMENT hit's context is compared by: its keys sorted, as the wire writes
    /// them, without `sdk_firstTimeInit`: that key says whether the SDK started with its store
    /// for the first time, true in the first process only, a fact of the installation and not of
    /// the visitor; with it, every visitor seen by that process would be reported again once.
    static func digest(of context: [String: FSJSONValue]) -> String {
        var compared = context
        compared[FlagshipContext.FIRST_TIME_INIT.key] = nil
        return String(SHA256.hex(of: FSJSONValue.object(compared).jsonString()).prefix(32))
    }

    // MARK: JSON

    /// `{"consent":true,"context":"<digest>","exposures":{"<vg>":["<variation>",<ms>]}}`, keys
    /// sorted, absent parts left out (never `null`: the compact row puts the document together
    /// with `json_patch`, which drops a `null`).
    func write(into text: inout String) {
        var parts: [String] = []
        if let consent { parts.append("\"consent\":\(consent ? "true" : "false")") }
        if let contextDigest {
            var part = "\"context\":"
            FSJSONValue.writeString(contextDigest, into: &part)
            parts.append(part)
        }
        if !exposures.isEmpty {
            var part = "\"exposures\":{"
            for (index, (group, exposure)) in exposures.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { part += "," }
                FSJSONValue.writeString(group, into: &part)
                part += ":["
                FSJSONValue.writeString(exposure.variationId, into: &part)
                part += ",\(exposure.sentAt)]"
            }
            parts.append(part + "}")
        }
        text += "{" + parts.joined(separator: ",") + "}"
    }

    var jsonText: String {
        var text = ""
        write(into: &text)
        return text
    }

    /// Read leniently: what cannot be read is left out (the worst outcome is a hit sent again).
    init(_ value: FSJSONValue) {
        guard let object = value.objectValue else { return }
        consent = object["consent"]?.boolValue
        contextDigest = object["context"]?.stringValue
        for (group, entry) in object["exposures"]?.objectValue ?? [:] {
            guard case .array(let pair) = entry, pair.count == 2, let variation = pair[0].stringValue,
                  let sentAt = pair[1].int64Value else { continue }
            exposures[group] = Exposure(variationId: variation, sentAt: sentAt)
        }
    }
}
