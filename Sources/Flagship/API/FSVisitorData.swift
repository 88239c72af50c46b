import FlagshipStore
import Foundation

/// Everything the SDK's store holds for one visitor: what an access request must return.
///
/// Read with ``Flagship/visitorData(visitorId:)`` from the running SDK (its SQLite store, and a
/// fleet's PostgreSQL store when it has one), with ``read(visitorId:storeFile:)`` from a store
/// file, or with `flagship export --db STORE --visitor-id V`. ``jsonData()`` is the answer as
/// JSON. After the visitor's data is erased (consent withdrawn), it holds nothing but the consent
/// hit that tells Flagship so, until that hit is sent.
public struct FSVisitorData: Sendable, Equatable {
    /// The visitor's cached document and the columns kept beside it.
    public struct Visitor: Sendable, Equatable {
        /// The anonymous id an authenticated visitor was linked to, if any.
        public let anonymousId: String?
        /// Whether the visitor had consented when the document was last written.
        public let consent: Bool
        /// When the document was last written.
        public let updatedAt: Date
        /// When it was last looked up or written: what the retention counts from.
        public let lastSeenAt: Date?
        /// The visitor cache document as stored (JSON text): its context, campaigns and
        /// assignment history.
        public let document: String
    }

    /// One recorded assignment: the visitor placed in a variation, when, by what, on which context.
    public struct Decision: Sendable, Equatable {
        /// When the assignment was made.
        public let decidedAt: Date
        /// The campaign (`nil` in a row carried from a store older than provenance).
        public let campaignId: String?
        /// The variation group the visitor was placed in a variation of.
        public let variationGroupId: String
        /// The variation the visitor got.
        public let variationId: String
        /// `bucketing_file`, `bootstrap`, `decision_api`, or `unknown` (a row older than provenance).
        public let source: String
        /// The flags' reason then: `SPLIT`, `TARGETING_MATCH`, `STATIC`, `UNKNOWN`.
        public let reason: String
        /// The sha256 of the bucketing file that decided (`nil`: the Decision API, or unknown).
        public let fileVersion: String?
        /// The context the decision was made on, as JSON object text.
        public let context: String?
        /// The variation's flags then, as JSON object text.
        public let flags: String?
    }

    /// A hit or activate that waits to be sent.
    public struct Hit: Sendable, Equatable {
        /// The hit's id in the store (`<visitorId>:<uuid>`).
        public let id: String
        /// `EVENT`, `TRANSACTION`, `ACTIVATE`...
        public let type: String
        /// A consent hit: kept when the visitor's other data is erased, so that Flagship learns of it.
        public let isConsent: Bool
        /// When the hit was created.
        public let createdAt: Date
        /// Failed sends so far.
        public let attempts: Int
        /// Why it is never sent, for a dead letter (`nil` for a hit that waits its turn).
        public let deadLetter: String?
        /// The hit cache document as stored (JSON text).
        public let document: String
    }

    /// What the store gave: the public values are read from it, and the JSON from its integers
    /// (unix ms exactly as stored, whatever a hand edit put there).
    private let records: VisitorDataRecords

    package init(_ records: VisitorDataRecords) {
        self.records = records
    }

    /// The visitor asked about.
    public var visitorId: String { records.visitorId }

    /// `nil`: the store keeps no document for this id.
    public var visitor: Visitor? {
        records.visitor.map { record in
            Visitor(anonymousId: record.anonymousId, consent: record.consent, updatedAt: Date(unixMilliseconds: record.updatedAt),
                    lastSeenAt: records.lastSeenAt.map(Date.init(unixMilliseconds:)), document: record.document)
        }
    }

    /// Oldest first.
    public var decisions: [Decision] {
        records.decisions.map { record in
            Decision(decidedAt: Date(unixMilliseconds: record.decidedAt), campaignId: record.campaignId,
                     variationGroupId: record.variationGroupId, variationId: record.variationId, source: record.source.rawValue,
                     reason: record.reason, fileVersion: record.fileVersion, context: record.context, flags: record.flags)
        }
    }

    /// Oldest first.
    public var hits: [Hit] {
        records.hits.map { record in
            Hit(id: record.id, type: record.type, isConsent: record.isConsent, createdAt: Date(unixMilliseconds: record.createdAt),
                attempts: record.attempts, deadLetter: record.deadLetter, document: record.document)
        }
    }

    /// Rows of this visitor the store holds but could not read (a damaged page, a hand edit):
    /// when it is not 0, the answer is incomplete, and `flagship db inspect` says more.
    public var unreadableRows: Int { records.unreadableRows }

    /// Rows of this visitor in the answer with a column the SDK would not have written (a hand
    /// edit, a damaged value): a document or context that is not JSON, a hit's creation time that
    /// is not unix milliseconds. They are in the answer as stored, each marked with `damaged` in
    /// ``jsonData()``; when this is not 0, what they say may be wrong.
    public var damagedRows: Int {
        (records.visitor.map { Self.damage(ofVisitor: $0) != nil ? 1 : 0 } ?? 0)
            + records.decisions.count(where: { Self.damage(ofDecision: $0) != nil })
            + records.hits.count(where: { Self.damage(ofHit: $0) != nil })
    }

    private static func damage(ofVisitor record: VisitorRecord) -> String? {
        isJSON(record.document) ? nil : "its document is not JSON"
    }

    private static func damage(ofDecision record: DecisionRecord) -> String? {
        if let context = record.context, !isJSON(context) { return "its context is not JSON" }
        if let flags = record.flags, !isJSON(flags) { return "its flags are not JSON" }
        return nil
    }

    private static func damage(ofHit record: HitRecord) -> String? {
        var reasons: [String] = []
        if let stored = record.storedCreatedAt { reasons.append("its created_at holds \(Self.describe(stored)), not unix milliseconds") }
        let others = record.columnsNotAsWritten.filter { $0 != "created_at" }
        if !others.isEmpty { reasons.append("its " + others.joined(separator: ", ") + " hold(s) a value of another type than the SDK writes, shown as near as it goes") }
        if !isJSON(record.document) { reasons.append("its document is not JSON") }
        return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
    }

    private static func describe(_ value: SQLiteValue) -> String {
        switch value {
        case .integer(let number): "the integer \(number)"
        case .real(let number): "the real \(number)"
        case .text(let text): "the text \"\(text.prefix(64))\""
        case .blob(let bytes): "a blob of \(bytes.count) bytes"
        case .null: "null"
        }
    }

    private static func isJSON(_ text: String) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil
    }

    /// Equal when what they show is: the rows' columns the SDK keeps for its own sending (who
    /// holds a hit now, when it is tried next) are not part of the answer.
    public static func == (lhs: FSVisitorData, rhs: FSVisitorData) -> Bool {
        lhs.visitorId == rhs.visitorId && lhs.visitor == rhs.visitor && lhs.decisions == rhs.decisions
            && lhs.hits == rhs.hits && lhs.unreadableRows == rhs.unreadableRows
    }

    /// Whether the store holds nothing for this visitor.
    public var isEmpty: Bool {
        records.visitor == nil && records.decisions.isEmpty && records.hits.isEmpty && records.unreadableRows == 0
    }

    /// Reads what the store file at `storeFile` holds for `visitorId`, read-only, in one snapshot.
    /// Safe while an SDK has the file open (it reads what was committed). Throws ``FSCacheError``
    /// when the file is missing or is not a store this build can read.
    public static func read(visitorId: String, storeFile: URL) throws(FSCacheError) -> FSVisitorData {
        guard FileManager.default.fileExists(atPath: storeFile.path) else {
            throw FSCacheError(code: .fileSystem, path: storeFile.path, description: "\(storeFile.path): no store file there")
        }
        do {
            let store = try FlagshipDatabase.openForInspection(at: storeFile)
            defer { store.close() }
            return FSVisitorData(try store.read { try $0.visitorData(visitorId: visitorId) })
        } catch {
            throw FSCacheError(error, path: storeFile.path)
        }
    }

    /// The answer as a JSON object (keys sorted, indented): `visitorId`, `visitor` (its
    /// `document` embedded as JSON), `decisions`, `hits` (each `document` embedded), and
    /// `unreadableRows`, and `damagedRows` (each such row says how in `damaged`). Times are unix
    /// milliseconds, with a `…UTC` twin in ISO 8601.
    public func jsonData() -> Data {
        // Every value is a string, number, bool, NSNull, array or dictionary: serialisation cannot fail.
        (try? JSONSerialization.data(withJSONObject: jsonObject, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
    }

    private var jsonObject: [String: Any] {
        [
            "visitorId": records.visitorId,
            "visitor": records.visitor.map { visitor -> Any in
                [
                    "anonymousId": visitor.anonymousId ?? NSNull(),
                    "consent": visitor.consent,
                    "updatedAt": visitor.updatedAt,
                    "updatedAtUTC": Self.utc(visitor.updatedAt),
                    "lastSeenAt": records.lastSeenAt ?? NSNull(),
                    "lastSeenAtUTC": records.lastSeenAt.map(Self.utc) ?? NSNull(),
                    "document": Self.embedded(visitor.document),
                ].merging(Self.damage(ofVisitor: visitor).map { ["damaged": $0] } ?? [:]) { $1 } as [String: Any]
            } ?? NSNull(),
            "decisions": records.decisions.map { decision -> [String: Any] in
                [
                    "decidedAt": decision.decidedAt,
                    "decidedAtUTC": Self.utc(decision.decidedAt),
                    "campaignId": decision.campaignId ?? NSNull(),
                    "variationGroupId": decision.variationGroupId,
                    "variationId": decision.variationId,
                    "source": decision.source.rawValue,
                    "reason": decision.reason,
                    "fileVersion": decision.fileVersion ?? NSNull(),
                    "context": decision.context.map(Self.embedded) ?? NSNull(),
                    "flags": decision.flags.map(Self.embedded) ?? NSNull(),
                ].merging(Self.damage(ofDecision: decision).map { ["damaged": $0] } ?? [:]) { $1 }
            },
            "hits": records.hits.map { hit -> [String: Any] in
                [
                    "id": hit.id,
                    "type": hit.type,
                    "isConsent": hit.isConsent,
                    // A creation time that is not an integer is shown as stored, not as a number it is not.
                    "createdAt": hit.storedCreatedAt.map(Self.stored) ?? hit.createdAt,
                    "createdAtUTC": hit.storedCreatedAt == nil ? Self.utc(hit.createdAt) : NSNull(),
                    "attempts": hit.attempts,
                    "deadLetter": hit.deadLetter ?? NSNull(),
                    "document": Self.embedded(hit.document),
                ].merging(Self.damage(ofHit: hit).map { ["damaged": $0] } ?? [:]) { $1 }
            },
            "unreadableRows": records.unreadableRows,
            "damagedRows": damagedRows,
        ]
    }

    /// A column's value as JSON: its text, its number, or null.
    private static func stored(_ value: SQLiteValue) -> Any {
        switch value {
        case .integer(let number): number
        case .real(let number): number.isFinite ? number : String(describing: number)
        case .text(let text): text
        case .blob(let bytes): "<\(bytes.count) bytes>"
        case .null: NSNull()
        }
    }

    /// A stored JSON text as JSON, or as the string it is when it does not parse (a hand edit,
    /// marked `damaged` on its row).
    private static func embedded(_ text: String) -> Any {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) ?? text
    }

    /// `UTCText` (as the tool prints times), or null for a time no calendar reaches (a hand-edited
    /// row): years 1 to 9999.
    private static func utc(_ unixMilliseconds: Int64) -> Any {
        guard unixMilliseconds > -62_135_596_800_000, unixMilliseconds < 253_402_300_800_000 else { return NSNull() }
        return UTCText.of(unixMilliseconds: unixMilliseconds)
    }
}
