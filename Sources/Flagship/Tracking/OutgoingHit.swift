import FlagshipStore
import Foundation

/// A hit or an activate ready to go on the wire, in the one shape it keeps from `sendHit` to the
/// request: its wire fields encoded once as JSON text (`wire`), which is also the `content` of its
/// hit cache document, stored as it is and sent as it is.
package struct OutgoingHit: Sendable, Equatable {
    /// The hit's id in the hit cache, reported back in ``SendResult/hitIds``.
    package let id: String
    /// The wire type (`EVENT`, `SCREENVIEW`... or `ACTIVATE`).
    package let type: String
    /// Creation time, unix milliseconds: the base of `qt`.
    package let createdAt: Int64
    /// The visitor the hit belongs to: an activate's `vid`; a hit's `cuid` when authenticated,
    /// else its `vid` (PROTOCOL.md sections 2 and 3 put the two ids in opposite places).
    package let visitorId: String
    /// The anonymous id while the visitor is authenticated.
    package let anonymousId: String?
    /// The consent hit (`ea: fs_consent`) is the one hit kept when a visitor withdraws consent.
    package let isConsentHit: Bool
    /// The wire content without `qt` (added at each send), a JSON object as text, keys sorted. A
    /// hit has `t`, `vid`, `cuid` when authenticated, `ds`, `cid` and its own fields; an activate
    /// has `vid`, `aid`, `caid`, `vaid`.
    package let wire: String
    /// An activate's decision provenance, kept in the store's row beside the document (not sent):
    /// the bucketing file version and the time of the fetch that decided the flag it reports.
    package var fileVersion: String?
    package var decidedAt: Int64?

    package var isActivate: Bool { type == "ACTIVATE" }
    /// As the instrumentation counts it.
    var kind: FSHitKind { isActivate ? .activate : .hit }

    /// A hit from its wire fields (without `qt`), encoded here once.
    init(id: String, type: String, createdAt: Int64, fields: [String: FSJSONValue]) {
        let isActivate = type == "ACTIVATE"
        let visitor = isActivate ? fields["vid"] : (fields["cuid"] ?? fields["vid"])
        self.init(id: id, type: type, createdAt: createdAt,
                  visitorId: visitor?.stringValue ?? String(id.prefix { $0 != ":" }),
                  anonymousId: isActivate ? fields["aid"]?.stringValue : (fields["cuid"] != nil ? fields["vid"]?.stringValue : nil),
                  isConsentHit: type == "EVENT" && fields["ea"]?.stringValue == "fs_consent",
                  wire: FSJSONValue.object(fields).jsonString())
    }

    private init(id: String, type: String, createdAt: Int64, visitorId: String, anonymousId: String?, isConsentHit: Bool, wire: String) {
        self.id = id
        self.type = type
        self.createdAt = createdAt
        self.visitorId = visitorId
        self.anonymousId = anonymousId
        self.isConsentHit = isConsentHit
        self.wire = wire
    }

    /// The same hit created at `time` instead (its cache document's `time` with it): a store
    /// that keeps another clock moves hits into its time, and back out.
    package func created(at time: Int64) -> OutgoingHit {
        var moved = OutgoingHit(id: id, type: type, createdAt: time, visitorId: visitorId, anonymousId: anonymousId,
                                isConsentHit: isConsentHit, wire: wire)
        moved.fileVersion = fileVersion
        moved.decidedAt = decidedAt
        return moved
    }

    /// A hit as the `hits` table holds it, its wire content taken from the stored document's
    /// bytes without parsing them, when the document is one this SDK wrote (`cacheDocumentText`)
    /// for this row; `nil` otherwise (another writer's layout, a hand edit): then parse it.
    package init?(record: HitRecord) {
        guard let wire = Self.storedWire(record) else { return nil }
        self.init(id: record.id, type: record.type, createdAt: record.createdAt, visitorId: record.visitorId,
                  anonymousId: Self.storedAnonymousId(record.document), isConsentHit: record.isConsent, wire: wire)
        fileVersion = record.fileVersion
        decidedAt = record.decidedAt
    }

    /// The hit cache document (STORE.md), as the `hits.document` column holds it, written around
    /// the wire text, which is not encoded again: `FSJSONValue.jsonString()`'s layout, keys sorted.
    package var cacheDocumentText: String {
        Self.documentPrefix(anonymousId: anonymousId) + wire + Self.documentSuffix(createdAt: createdAt, type: type, visitorId: visitorId)
    }

    /// The wire text with `qt` (milliseconds since creation) added: one entry of a request body.
    func wireEntry(queueTime: Int64) -> String {
        let qt = "\"qt\":\(queueTime)"
        return wire == "{}" ? "{" + qt + "}" : "{" + qt + "," + wire.dropFirst()
    }

    private static func documentPrefix(anonymousId: String?) -> String {
        "{\"data\":{\"anonymousId\":" + (anonymousId.map { FSJSONValue.string($0).jsonString() } ?? "null") + ",\"content\":"
    }

    private static func documentSuffix(createdAt: Int64, type: String, visitorId: String) -> String {
        ",\"time\":\(createdAt),\"type\":" + FSJSONValue.string(type).jsonString()
            + ",\"visitorId\":" + FSJSONValue.string(visitorId).jsonString() + "},\"version\":1}"
    }

    private static let anonymousIdStart = "{\"data\":{\"anonymousId\":"

    /// The anonymous id of a document in this SDK's layout: `null`, or the JSON string after the
    /// fixed start (decoded only when it holds an escape).
    private static func storedAnonymousId(_ document: String) -> String? {
        guard let rest = document.utf8.dropFirst(anonymousIdStart.utf8.count).first, rest == UInt8(ascii: "\"") else { return nil }
        let utf8 = document.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: anonymousIdStart.utf8.count)
        guard let end = JSONText.endOfString(in: utf8, at: start) else { return nil }
        let token = String(document[start..<end])
        return token.contains("\\") ? (try? FSJSONValue(parsing: Data(token.utf8)))?.stringValue : String(token.dropFirst().dropLast())
    }

    /// The content of a stored document, when the document is this SDK's layout for this very
    /// row (its id fields match the row's columns) and the content is one JSON object.
    private static func storedWire(_ record: HitRecord) -> String? {
        let document = record.document
        let utf8 = document.utf8
        guard document.hasPrefix(anonymousIdStart) else { return nil }
        // After the fixed start: `null` or one JSON string, then `,"content":`.
        var cursor = utf8.index(utf8.startIndex, offsetBy: anonymousIdStart.utf8.count)
        if utf8[cursor...].starts(with: "null".utf8) {
            cursor = utf8.index(cursor, offsetBy: 4)
        } else if utf8[cursor] == UInt8(ascii: "\"") {
            guard let end = JSONText.endOfString(in: utf8, at: cursor) else { return nil }
            cursor = end
        } else {
            return nil
        }
        let contentKey = ",\"content\":".utf8
        guard utf8[cursor...].starts(with: contentKey) else { return nil }
        let contentStart = utf8.index(cursor, offsetBy: contentKey.count)
        let suffix = documentSuffix(createdAt: record.createdAt, type: record.type, visitorId: record.visitorId)
        guard document.hasSuffix(suffix) else { return nil }
        let contentEnd = utf8.index(utf8.endIndex, offsetBy: -suffix.utf8.count)
        guard contentStart < contentEnd, JSONText.isOneObject(utf8[contentStart..<contentEnd]) else { return nil }
        return String(document[contentStart..<contentEnd])
    }
}

extension HitRecord {
    /// The row of `hit`, unclaimed: every store writes a hit through this one mapping. `document`
    /// is its hit cache document when made before (`CachedHit`), else `cacheDocumentText`.
    package init(_ hit: OutgoingHit, document: String? = nil) {
        self.init(id: hit.id, visitorId: hit.visitorId, type: hit.type, isConsent: hit.isConsentHit,
                  document: document ?? hit.cacheDocumentText, createdAt: hit.createdAt,
                  fileVersion: hit.fileVersion, decidedAt: hit.decidedAt)
    }
}

/// Scanning JSON text without building values: where a string ends, whether a stretch is one
/// object. For stored documents this SDK wrote, whose layout it knows.
enum JSONText {
    /// The index just past the string token starting at `start` (a `"`), or `nil` if it never ends.
    static func endOfString(in utf8: String.UTF8View, at start: String.Index) -> String.Index? {
        var index = utf8.index(after: start)
        while index < utf8.endIndex {
            switch utf8[index] {
            case UInt8(ascii: "\\"):
                index = utf8.index(after: index)
                guard index < utf8.endIndex else { return nil }
            case UInt8(ascii: "\""):
                return utf8.index(after: index)
            default:
                break
            }
            index = utf8.index(after: index)
        }
        return nil
    }

    /// Whether `text` (already valid JSON as part of its document: the column is checked with
    /// `json_valid`) is exactly one object: it opens with `{` and that brace closes at its end.
    static func isOneObject(_ text: Substring.UTF8View) -> Bool {
        guard text.first == UInt8(ascii: "{"), text.last == UInt8(ascii: "}") else { return false }
        var depth = 0
        var inString = false
        var escaped = false
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""): inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    // Closed before the end: two values side by side, not one object.
                    if depth == 0 && text.index(after: index) != text.endIndex { return false }
                default: break
                }
            }
            index = text.index(after: index)
        }
        return depth == 0 && !inString
    }
}

extension OutgoingHit {
    /// Why this hit cannot be kept, when its visitor's id or anonymous id is longer than
    /// `FSVisitor.maximumIdBytes`; `nil` when they fit. Names the wire field that holds it.
    var identityRefusal: HitValidationError? {
        let fields = isActivate ? (visitor: "vid", anonymous: "aid") : (visitor: anonymousId == nil ? "vid" : "cuid", anonymous: "vid")
        for (field, id) in [(fields.visitor, visitorId), (fields.anonymous, anonymousId ?? "")] {
            let bytes = id.utf8.count
            guard bytes > FSVisitor.maximumIdBytes else { continue }
            return .invalidValue(hit: type, field: field, reason: "must be at most \(FSVisitor.maximumIdBytes) bytes in UTF-8 (got \(bytes)): "
                                 + "the hit and visitor stores index the visitor's id")
        }
        return nil
    }

    /// Who a hit or an activate is about: the visitor's id, and its anonymous id while it is
    /// authenticated.
    struct Identity: Sendable {
        let visitorId: String
        let anonymousId: String?
    }

    /// A hit with the visitor's identity and the environment (PROTOCOL.md section 2): `vid` is the
    /// anonymous id while authenticated, with `cuid` the visitor id; `ds` is `APP`; `cid` the env id.
    static func hit(type: String, fields: [String: FSJSONValue], identity: Identity, envId: String, createdAt: Int64) -> OutgoingHit {
        var content = fields
        if let anonymousId = identity.anonymousId {
            content["vid"] = .string(anonymousId)
            content["cuid"] = .string(identity.visitorId)
        } else {
            content["vid"] = .string(identity.visitorId)
        }
        content["ds"] = .string("APP")
        content["cid"] = .string(envId)
        return OutgoingHit(id: HitID.make(visitorId: identity.visitorId, createdAt: createdAt), type: type,
                           createdAt: createdAt, fields: content)
    }

    /// An activate (PROTOCOL.md section 3): the ids the other way round from a hit, `vid` the visitor
    /// id and `aid` its anonymous id, with the variation group (`caid`) and variation (`vaid`).
    /// Made on the thread of a flag read, so its wire text is written directly, in `jsonString()`'s
    /// layout (keys sorted: `aid`, `caid`, `vaid`, `vid`).
    static func activate(identity: Identity, variationGroupId: String, variationId: String, createdAt: Int64) -> OutgoingHit {
        var wire = "{"
        wire.reserveCapacity(48 + 2 * identity.visitorId.utf8.count + variationGroupId.utf8.count + variationId.utf8.count)
        if let anonymousId = identity.anonymousId {
            wire += "\"aid\":"
            FSJSONValue.writeString(anonymousId, into: &wire)
            wire += ","
        }
        wire += "\"caid\":"
        FSJSONValue.writeString(variationGroupId, into: &wire)
        wire += ",\"vaid\":"
        FSJSONValue.writeString(variationId, into: &wire)
        wire += ",\"vid\":"
        FSJSONValue.writeString(identity.visitorId, into: &wire)
        wire += "}"
        return OutgoingHit(id: HitID.make(visitorId: identity.visitorId, createdAt: createdAt), type: "ACTIVATE", createdAt: createdAt,
                           visitorId: identity.visitorId, anonymousId: identity.anonymousId, isConsentHit: false, wire: wire)
    }
}
