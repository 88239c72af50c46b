#if Postgres
import FlagshipStore
import PostgresNIO

/// The one reader of a `flagship.hits` row: a claim, `db inspect` and `hits`, and a visitor's
/// data (`visitorData`, `flagship export`) all select `columns` and read them here, so that each
/// carries every column the SQLite store's reader does.
enum PostgresHitRow {
    /// Every column of a row, in the order `record(_:)` reads them.
    static let columns = ["id", "visitor_id", "type", "is_consent", "document", "created_at", "attempts", "next_attempt_at",
                          "lease_owner", "lease_until", "file_version", "decided_at"]
    /// The columns schema version 3 brought (an activate's provenance).
    static let provenance: Set = ["file_version", "decided_at"]

    /// `columns` as a select list, each of `table` when given (`h.id`...). Before schema version 3
    /// (`withProvenance` false: a store inspected without migrating it) they are read as NULL.
    static func selectList(of table: String? = nil, withProvenance: Bool = true) -> String {
        columns.map { column in
            guard withProvenance || !provenance.contains(column) else {
                return (column == "decided_at" ? "NULL::bigint AS " : "NULL::text AS ") + column
            }
            return table.map { "\($0).\(column)" } ?? column
        }.joined(separator: ", ")
    }

    /// A row of `selectList()`.
    static func record(_ row: PostgresRow) throws -> HitRecord {
        let (id, visitorId, type, isConsent, document, createdAt, attempts, nextAttemptAt, leaseOwner, leaseUntil, fileVersion, decidedAt)
            = try row.decode((String, String, String, Bool, String, Int64, Int32, Int64?, String?, Int64?, String?, Int64?).self)
        return HitRecord(id: id, visitorId: visitorId, type: type, isConsent: isConsent, document: document, createdAt: createdAt,
                         attempts: Int(attempts), nextAttemptAt: nextAttemptAt, leaseOwner: leaseOwner, leaseUntil: leaseUntil,
                         fileVersion: fileVersion, decidedAt: decidedAt)
    }
}
#endif
