/// One row of `visitors`: a visitor cache document and the columns a person queries.
package struct VisitorRecord: Sendable, Equatable {
    package var visitorId: String
    package var anonymousId: String?
    package var consent: Bool
    /// The visitor cache document, as JSON text.
    package var document: String
    /// Unix milliseconds.
    package var updatedAt: Int64
    /// The assignments decided since the visitor's last write, recorded with it in `decisions`
    /// (not read back with the row: `db.decisions` reads them).
    package var decisions: [DecisionRecord]

    package init(visitorId: String, anonymousId: String?, consent: Bool, document: String, updatedAt: Int64,
                 decisions: [DecisionRecord] = []) {
        self.visitorId = visitorId
        self.anonymousId = anonymousId
        self.consent = consent
        self.document = document
        self.updatedAt = updatedAt
        self.decisions = decisions
    }
}

/// The `visitors` table, seen through the connection of an open transaction (`db.visitors`):
/// every operation runs in the caller's transaction (`Database.read` or `Database.write`).
package struct VisitorRecordStore {
    let connection: Connection

    /// Inserts each visitor, or replaces the row of the same id, and records its new decisions.
    package func save(_ records: [VisitorRecord]) throws(StoreError) {
        guard !records.isEmpty else { return }
        _ = try connection.executeMany(
            """
            INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at)
            VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (visitor_id) DO UPDATE SET
                anonymous_id = excluded.anonymous_id, consent = excluded.consent,
                document = excluded.document, updated_at = excluded.updated_at
            """,
            records.map { record in
                [.text(record.visitorId), SQLiteValue(record.anonymousId), SQLiteValue(record.consent),
                 .text(record.document), .integer(record.updatedAt)]
            }
        )
        let decisions = records.flatMap(\.decisions)
        if !decisions.isEmpty { try connection.decisions.insert(decisions) }
    }

    /// Inserts the visitor, or replaces the row of the same id.
    package func save(_ record: VisitorRecord) throws(StoreError) {
        try save([record])
    }

    package func visitor(id visitorId: String) throws -> VisitorRecord? {
        try connection.query("\(Self.selectColumns) WHERE visitor_id = ?", [.text(visitorId)])
            .first.map(Self.record)
    }

    /// Deletes the visitor's row and its decisions; returns whether there was a row. The caller
    /// erases the traces on disk once committed (`Database.eraseWALHistory()`).
    @discardableResult
    package func delete(visitorId: String) throws(StoreError) -> Bool {
        try connection.decisions.delete(visitorId: visitorId)
        return try connection.execute("DELETE FROM visitors WHERE visitor_id = ?", [.text(visitorId)]) > 0
    }

    /// Visitors, most recently updated first.
    package func visitors(limit: Int = .max) throws -> [VisitorRecord] {
        try connection.query("\(Self.selectColumns) ORDER BY updated_at DESC, visitor_id LIMIT ?", [SQLiteValue(limit)])
            .map(Self.record)
    }

    package func count() throws(StoreError) -> Int {
        Int(try connection.scalar("SELECT count(*) FROM visitors")?.int64 ?? 0)
    }

    private static let selectColumns = "SELECT visitor_id, anonymous_id, consent, document, updated_at FROM visitors"

    private static func record(_ row: Row) throws -> VisitorRecord {
        VisitorRecord(
            visitorId: try row.text(0), anonymousId: try row.optionalText(1), consent: try row.bool(2),
            document: try row.text(3), updatedAt: try row.int64(4)
        )
    }
}

extension Connection {
    /// The `visitors` table, in this connection's transaction.
    package var visitors: VisitorRecordStore { VisitorRecordStore(connection: self) }
}
