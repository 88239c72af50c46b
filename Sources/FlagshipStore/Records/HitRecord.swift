/// One row of `hits`: an unsent hit or activate.
package struct HitRecord: Sendable, Equatable {
    /// `<visitorId>:<uuid>`.
    package var id: String
    package var visitorId: String
    /// The wire type: `EVENT`, `ACTIVATE`...
    package var type: String
    /// A consent hit: kept when the visitor withdraws consent.
    package var isConsent: Bool
    /// The hit cache document, as JSON text.
    package var document: String
    /// Unix milliseconds when the hit was created.
    package var createdAt: Int64
    /// Failed sends so far.
    package var attempts: Int
    /// Unix milliseconds before which the sender that failed last will not try again.
    package var nextAttemptAt: Int64?
    /// The SDK instance that claimed the row to send it, and until when (unix ms).
    package var leaseOwner: String?
    package var leaseUntil: Int64?
    /// An activate's provenance: the bucketing file version its decision was made on (`nil`: a
    /// hit, the Decision API, or unknown) and when that decision was made (unix ms).
    package var fileVersion: String?
    package var decidedAt: Int64?
    /// `created_at` as the row holds it when it is not an integer (a hand edit: a REAL, a text),
    /// and `createdAt` only the nearest integer to it (`Int64.min` when there is none): the value
    /// an oldest-first walk goes on after (`HitCursor(after:)`).
    package var storedCreatedAt: SQLiteValue?
    /// The columns a listing read as near as they go because they hold what the SDK would not
    /// have written (`created_at`, `attempts`...): empty for a row as written.
    package var columnsNotAsWritten: [String] = []

    /// Why the hit is a dead letter, if it is one: a row the SDK can never send exactly, kept
    /// out of every claim (`lease_until` at its maximum, `lease_owner` saying why).
    package var deadLetter: String? {
        guard leaseUntil == HitRecordStore.deadLetterUntil, let leaseOwner else { return nil }
        return leaseOwner
    }

    package init(id: String, visitorId: String, type: String, isConsent: Bool = false, document: String, createdAt: Int64,
                 attempts: Int = 0, nextAttemptAt: Int64? = nil, leaseOwner: String? = nil, leaseUntil: Int64? = nil,
                 fileVersion: String? = nil, decidedAt: Int64? = nil) {
        self.id = id
        self.visitorId = visitorId
        self.type = type
        self.isConsent = isConsent
        self.document = document
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.leaseOwner = leaseOwner
        self.leaseUntil = leaseUntil
        self.fileVersion = fileVersion
        self.decidedAt = decidedAt
    }
}

/// Where an oldest-first walk over `hits` stopped: the next page starts after it.
package struct HitCursor: Sendable, Equatable {
    /// As the row holds it, whatever its type: SQLite orders a page by the stored value.
    let createdAt: SQLiteValue
    package let id: String

    package init(createdAt: Int64, id: String) {
        self.createdAt = .integer(createdAt)
        self.id = id
    }

    /// After `record`, the last of a page.
    package init(after record: HitRecord) {
        createdAt = record.storedCreatedAt ?? .integer(record.createdAt)
        id = record.id
    }
}

/// Which endpoint a row goes to: activates to the Decision API, every other hit to the events
/// endpoint. Each is claimed and sent on its own.
package enum HitEndpoint: Sendable, Equatable {
    case events
    case activate

    var isActivate: SQLiteValue { SQLiteValue(self == .activate) }
}
