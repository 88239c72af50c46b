/// One row of `visitors`: a visitor cache document and the columns a person queries.
package struct VisitorRecord: Sendable, Equatable {
    package var visitorId: String
    package var anonymousId: String?
    package var consent: Bool
    /// The visitor cache document, as JSON text.
    package var document: String
    /// Unix milliseconds.
    package var updatedAt: Int64

    package init(visitorId: String, anonymousId: String?, consent: Bool, document: String, updatedAt: Int64) {
        self.visitorId = visitorId
        self.anonymousId = anonymousId
        self.consent = consent
        self.document = document
        self.updatedAt = updatedAt
    }
}

/// The `visitors` table.
package struct VisitorRecordStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Inserts the visitor, or replaces the row of the same id.
    package func save(_ record: VisitorRecord) throws {
        try database.write { try save([record], in: $0) }
    }

    /// Inserts each visitor, or replaces the row of the same id, in the caller's transaction.
    package func save(_ records: [VisitorRecord], in connection: Connection) throws(StoreError) {
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
    }

    package func visitor(id visitorId: String) throws -> VisitorRecord? {
        try database.read { connection in
            try connection.query("\(Self.selectColumns) WHERE visitor_id = ?", [.text(visitorId)])
                .first.map(Self.record)
        }
    }

    /// Deletes the visitor's row, and its traces on disk (`Database.eraseWALHistory()`);
    /// returns whether there was one.
    @discardableResult
    package func delete(visitorId: String) throws -> Bool {
        let deleted = try database.write { try delete(visitorId: visitorId, in: $0) }
        try database.eraseWALHistory()
        return deleted
    }

    /// Deletes the visitor's row in the caller's transaction; returns whether there was one. The
    /// caller erases the traces on disk once committed (`Database.eraseWALHistory()`).
    @discardableResult
    package func delete(visitorId: String, in connection: Connection) throws(StoreError) -> Bool {
        try connection.execute("DELETE FROM visitors WHERE visitor_id = ?", [.text(visitorId)]) > 0
    }

    /// Visitors, most recently updated first.
    package func visitors(limit: Int = .max) throws -> [VisitorRecord] {
        try database.read { connection in
            try connection.query("\(Self.selectColumns) ORDER BY updated_at DESC, visitor_id LIMIT ?", [SQLiteValue(limit)])
                .map(Self.record)
        }
    }

    package func count() throws -> Int {
        try database.read { Int(try $0.scalar("SELECT count(*) FROM visitors")?.int64 ?? 0) }
    }

    private static let selectColumns = "SELECT visitor_id, anonymous_id, consent, document, updated_at FROM visitors"

    private static func record(_ row: Row) throws -> VisitorRecord {
        VisitorRecord(
            visitorId: try row.text(0), anonymousId: try row.optionalText(1), consent: try row.bool(2),
            document: try row.text(3), updatedAt: try row.int64(4)
        )
    }
}
