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

    /// The visitor asked about.
    public let visitorId: String
    /// `nil`: the store keeps no document for this id.
    public let visitor: Visitor?
    /// Oldest first.
    public let decisions: [Decision]
    /// Oldest first.
    public let hits: [Hit]
    /// Rows of this visitor the store holds but could not read (a damaged page, a hand edit):
    /// when it is not 0, the answer is incomplete, and `flagship db inspect` says more.
    public let unreadableRows: Int

    /// Whether the store holds nothing for this visitor.
    public var isEmpty: Bool {
        visitor == nil && decisions.isEmpty && hits.isEmpty && unreadableRows == 0
    }

    package init(_ records: VisitorDataRecords) {
        visitorId = records.visitorId
        visitor = records.visitor.map { record in
            Visitor(anonymousId: record.anonymousId, consent: record.consent, updatedAt: Date(unixMilliseconds: record.updatedAt),
                    lastSeenAt: records.lastSeenAt.map(Date.init(unixMilliseconds:)), document: record.document)
        }
        decisions = records.decisions.map { record in
            Decision(decidedAt: Date(unixMilliseconds: record.decidedAt), campaignId: record.campaignId,
                     variationGroupId: record.variationGroupId, variationId: record.variationId, source: record.source.rawValue,
                     reason: record.reason, fileVersion: record.fileVersion, context: record.context, flags: record.flags)
        }
        hits = records.hits.map { record in
            Hit(id: record.id, type: record.type, isConsent: record.isConsent, createdAt: Date(unixMilliseconds: record.createdAt),
                attempts: record.attempts, deadLetter: record.deadLetter, document: record.document)
        }
        unreadableRows = records.unreadableRows
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
    /// `unreadableRows`. Times are unix milliseconds, with a `…UTC` twin in ISO 8601.
    public func jsonData() -> Data {
        // Every value is a string, number, bool, NSNull, array or dictionary: serialisation cannot fail.
        (try? JSONSerialization.data(withJSONObject: jsonObject, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
    }

    private var jsonObject: [String: Any] {
        [
            "visitorId": visitorId,
            "visitor": visitor.map { visitor -> Any in
                [
                    "anonymousId": visitor.anonymousId ?? NSNull(),
                    "consent": visitor.consent,
                    "updatedAt": visitor.updatedAt.milliseconds,
                    "updatedAtUTC": Self.utc(visitor.updatedAt),
                    "lastSeenAt": visitor.lastSeenAt.map { $0.milliseconds as Any } ?? NSNull(),
                    "lastSeenAtUTC": visitor.lastSeenAt.map(Self.utc) ?? NSNull(),
                    "document": Self.embedded(visitor.document),
                ] as [String: Any]
            } ?? NSNull(),
            "decisions": decisions.map { decision -> [String: Any] in
                [
                    "decidedAt": decision.decidedAt.milliseconds,
                    "decidedAtUTC": Self.utc(decision.decidedAt),
                    "campaignId": decision.campaignId ?? NSNull(),
                    "variationGroupId": decision.variationGroupId,
                    "variationId": decision.variationId,
                    "source": decision.source,
                    "reason": decision.reason,
                    "fileVersion": decision.fileVersion ?? NSNull(),
                    "context": decision.context.map(Self.embedded) ?? NSNull(),
                    "flags": decision.flags.map(Self.embedded) ?? NSNull(),
                ]
            },
            "hits": hits.map { hit -> [String: Any] in
                [
                    "id": hit.id,
                    "type": hit.type,
                    "isConsent": hit.isConsent,
                    "createdAt": hit.createdAt.milliseconds,
                    "createdAtUTC": Self.utc(hit.createdAt),
                    "attempts": hit.attempts,
                    "deadLetter": hit.deadLetter ?? NSNull(),
                    "document": Self.embedded(hit.document),
                ]
            },
            "unreadableRows": unreadableRows,
        ]
    }

    /// A stored JSON text as JSON, or as the string it is when it does not parse (a hand edit).
    private static func embedded(_ text: String) -> Any {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) ?? text
    }

    /// ISO 8601 to the millisecond (`2024-11-21T06:20:01.000Z`, as the tool prints times), or
    /// null for a time no calendar reaches (a hand-edited row).
    private static func utc(_ date: Date) -> Any {
        let milliseconds = date.milliseconds
        guard milliseconds > -62_135_596_800_000, milliseconds < 253_402_300_800_000 else { return NSNull() }   // years 1 – 9999
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let whole = Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
        return String(whole.dropLast()) + "." + String(String(milliseconds - seconds * 1000 + 1000).dropFirst()) + "Z"
    }
}

private extension Date {
    /// Unix milliseconds, clamped to what an `Int64` holds: a stored time of `Int64.min` comes back as it was.
    var milliseconds: Int64 {
        let value = (timeIntervalSince1970 * 1000).rounded()
        guard value.isFinite else { return 0 }
        if value <= -9.223372036854775e18 { return .min }
        if value >= 9.223372036854775e18 { return .max }
        return Int64(value)
    }
}
