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

    package init(id: String, visitorId: String, type: String, isConsent: Bool = false, document: String, createdAt: Int64, attempts: Int = 0) {
        self.id = id
        self.visitorId = visitorId
        self.type = type
        self.isConsent = isConsent
        self.document = document
        self.createdAt = createdAt
        self.attempts = attempts
    }
}

/// Where an oldest-first walk over `hits` stopped: the next page starts after it.
package struct HitCursor: Sendable, Equatable {
    package let createdAt: Int64
    package let id: String

    package init(createdAt: Int64, id: String) {
        self.createdAt = createdAt
        self.id = id
    }
}

/// The `hits` table. Writes of many rows share one transaction: that is where the speed is
/// (one commit per row costs an fsync-bound write each).
package struct HitRecordStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    package struct InsertOutcome: Sendable, Equatable {
        package var inserted: Int
        /// Rows evicted, oldest first, to stay within the capacity.
        package var evicted: Int
    }

    /// Saves `records` in one transaction (a row with the same id is replaced, keeping its
    /// attempt count), then evicts the oldest rows beyond `capacity`, in the same transaction.
    @discardableResult
    package func insert(_ records: [HitRecord], capacity: Int? = nil) throws -> InsertOutcome {
        guard !records.isEmpty || capacity != nil else { return InsertOutcome(inserted: 0, evicted: 0) }
        return try database.write { connection in
            try connection.executeMany(
                """
                INSERT INTO hits (id, visitor_id, type, is_consent, document, created_at, attempts)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET
                    visitor_id = excluded.visitor_id, type = excluded.type, is_consent = excluded.is_consent,
                    document = excluded.document, created_at = excluded.created_at
                """,
                records.map { record in
                    [.text(record.id), .text(record.visitorId), .text(record.type), SQLiteValue(record.isConsent),
                     .text(record.document), .integer(record.createdAt), SQLiteValue(record.attempts)]
                }
            )
            let evicted = try capacity.map { try Self.evictOldest(connection, beyond: $0) } ?? 0
            return InsertOutcome(inserted: records.count, evicted: evicted)
        }
    }

    /// Up to `limit` hits, oldest first, starting after `cursor`. Memory stays bounded by `limit`
    /// however many rows the table holds.
    package func page(after cursor: HitCursor? = nil, limit: Int) throws -> [HitRecord] {
        // SQLite reads a negative LIMIT as "no limit": never let one through.
        let limit = SQLiteValue(max(0, limit))
        return try database.read { connection in
            let rows: [Row]
            if let cursor {
                rows = try connection.query(
                    "\(Self.selectColumns) WHERE (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?",
                    [.integer(cursor.createdAt), .text(cursor.id), limit]
                )
            } else {
                rows = try connection.query("\(Self.selectColumns) ORDER BY created_at, id LIMIT ?", [limit])
            }
            return try rows.map(Self.record)
        }
    }

    /// Every hit, oldest first, read in pages of `pageSize`: `body` sees one page at a time.
    package func forEachPage(pageSize: Int = 500, _ body: ([HitRecord]) throws -> Void) throws {
        var cursor: HitCursor?
        while true {
            let records = try page(after: cursor, limit: max(1, pageSize))
            guard let last = records.last else { return }
            try body(records)
            cursor = HitCursor(createdAt: last.createdAt, id: last.id)
        }
    }

    /// Deletes the hits with these ids, in one transaction; returns how many there were.
    @discardableResult
    package func delete(ids: [String]) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try database.write { connection in
            // One bound id per run of one statement: json_each(?) would cut an id at a NUL.
            try connection.executeMany("DELETE FROM hits WHERE id = ?", Set(ids).map { [.text($0)] })
        }
    }

    @discardableResult
    package func deleteAll() throws -> Int {
        try database.write { try $0.execute("DELETE FROM hits") }
    }

    /// Deletes one visitor's hits, keeping its consent hits when asked (consent withdrawal).
    @discardableResult
    package func deleteHits(visitorId: String, keepingConsentHits: Bool) throws -> Int {
        try database.write { connection in
            try connection.execute(
                "DELETE FROM hits WHERE visitor_id = ? AND (is_consent = 0 OR ? = 0)",
                [.text(visitorId), SQLiteValue(keepingConsentHits)]
            )
        }
    }

    /// Deletes the hits created before `createdAt` (unix ms): expiry.
    @discardableResult
    package func deleteHits(createdBefore createdAt: Int64) throws -> Int {
        try database.write { try $0.execute("DELETE FROM hits WHERE created_at < ?", [.integer(createdAt)]) }
    }

    /// Evicts the oldest rows so that at most `capacity` remain; returns how many went.
    @discardableResult
    package func evictOldest(beyond capacity: Int) throws -> Int {
        try database.write { try Self.evictOldest($0, beyond: capacity) }
    }

    /// Adds one failed attempt to each of these hits.
    package func recordFailedAttempt(ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try database.write { connection in
            try connection.executeMany("UPDATE hits SET attempts = attempts + 1 WHERE id = ?", Set(ids).map { [.text($0)] })
        }
    }

    package func count() throws -> Int {
        try database.read { Int(try $0.scalar("SELECT count(*) FROM hits")?.int64 ?? 0) }
    }

    package func countByType() throws -> [String: Int] {
        try database.read { connection in
            var counts: [String: Int] = [:]
            for row in try connection.query("SELECT type, count(*) FROM hits GROUP BY type") {
                counts[try row.text(0)] = try row.int(1)
            }
            return counts
        }
    }

    /// The creation time (unix ms) of the oldest hit, `nil` when there is none.
    package func oldestCreatedAt() throws -> Int64? {
        try database.read { try $0.scalar("SELECT min(created_at) FROM hits")?.int64 }
    }

    private static func evictOldest(_ connection: Connection, beyond capacity: Int) throws(StoreError) -> Int {
        try connection.execute(
            """
            DELETE FROM hits WHERE id IN (
                SELECT id FROM hits ORDER BY created_at, id
                LIMIT max(0, (SELECT count(*) FROM hits) - ?)
            )
            """,
            [SQLiteValue(max(0, capacity))]
        )
    }

    private static let selectColumns = "SELECT id, visitor_id, type, is_consent, document, created_at, attempts FROM hits"

    private static func record(_ row: Row) throws -> HitRecord {
        HitRecord(
            id: try row.text(0), visitorId: try row.text(1), type: try row.text(2), isConsent: try row.bool(3),
            document: try row.text(4), createdAt: try row.int64(5), attempts: try row.int(6)
        )
    }
}
