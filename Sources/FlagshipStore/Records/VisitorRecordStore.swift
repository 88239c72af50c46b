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
    /// The same document in parts: with it, a store at schema version 5 writes the compact row
    /// (shared parts by id) instead of `document`. Never read back: a read gives `document`.
    package var compact: CompactVisitorDocument?

    package init(visitorId: String, anonymousId: String?, consent: Bool, document: String, updatedAt: Int64,
                 decisions: [DecisionRecord] = [], compact: CompactVisitorDocument? = nil) {
        self.visitorId = visitorId
        self.anonymousId = anonymousId
        self.consent = consent
        self.document = document
        self.updatedAt = updatedAt
        self.decisions = decisions
        self.compact = compact
    }
}

/// The `visitors` table, seen through the connection of an open transaction (`db.visitors`):
/// every operation runs in the caller's transaction (`Database.read` or `Database.write`).
package struct VisitorRecordStore {
    let connection: Connection

    /// Inserts each visitor, or replaces the row of the same id, and records its new decisions.
    package func save(_ records: [VisitorRecord]) throws(StoreError) {
        guard !records.isEmpty else { return }
        let shared = connection.sharedParts
        var compacting = records.contains { $0.compact != nil }
        if compacting { compacting = try shared.available() }
        if compacting { try shared.revalidate() }
        var documents: [String] = []
        documents.reserveCapacity(records.count)
        for record in records {
            if compacting, let compact = record.compact {
                documents.append(try shared.documentText(compact))
            } else {
                documents.append(record.document)
            }
        }
        _ = try connection.executeMany(
            """
            INSERT INTO main.visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at)
            VALUES (?1, ?2, ?3, ?4, ?5, ?5)
            ON CONFLICT (visitor_id) DO UPDATE SET
                anonymous_id = excluded.anonymous_id, consent = excluded.consent,
                document = excluded.document, updated_at = excluded.updated_at,
                last_seen_at = max(coalesce(visitors.last_seen_at, visitors.updated_at), excluded.last_seen_at)
            """,
            zip(records, documents).map { record, document in
                [.text(record.visitorId), SQLiteValue(record.anonymousId), SQLiteValue(record.consent),
                 .text(document), .integer(record.updatedAt)]
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
        try connection.query("\(try selectColumns()) WHERE visitor_id = ?", [.text(visitorId)])
            .first.map(Self.record)
    }

    /// Deletes the visitor's row and its decisions; returns whether there was a row. The caller
    /// erases the traces on disk once committed (`Database.eraseWALHistory()`).
    @discardableResult
    package func delete(visitorId: String) throws(StoreError) -> Bool {
        try connection.decisions.delete(visitorId: visitorId)
        return try connection.execute("DELETE FROM main.visitors WHERE visitor_id = ?", [.text(visitorId)]) > 0
    }

    /// The visitor and when it was last seen (looked up or written, unix ms), for a lookup that
    /// records the sighting when the row's is old (`VisitorSightings`).
    package func visitorAndLastSeen(id visitorId: String) throws -> (record: VisitorRecord, lastSeenAt: Int64)? {
        let sql = try connection.sharedParts.available()
            ? "SELECT visitor_id, anonymous_id, consent, document, updated_at, coalesce(last_seen_at, updated_at) FROM main.visitor_documents WHERE visitor_id = ?"
            : "SELECT visitor_id, anonymous_id, consent, document, updated_at, coalesce(last_seen_at, updated_at) FROM main.visitors WHERE visitor_id = ?"
        return try connection.query(sql, [.text(visitorId)]).first.map { row in (try Self.record(row), try row.int64(5)) }
    }

    /// Records that these visitors were seen (looked up), at the unix ms given for each: a
    /// sighting never moves a visitor's last-seen time back. Returns how many rows it touched
    /// (a visitor deleted meanwhile has none).
    @discardableResult
    package func markSeen(_ sightings: [String: Int64]) throws(StoreError) -> Int {
        guard !sightings.isEmpty else { return 0 }
        // Sorted: one order of rows per batch, whatever the dictionary's.
        return try connection.executeMany(
            """
            UPDATE main.visitors SET last_seen_at = ?2
            WHERE visitor_id = ?1 AND coalesce(last_seen_at, updated_at) < ?2
            """,
            sightings.sorted { $0.key < $1.key }.map { [.text($0.key), .integer($0.value)] }
        )
    }

    /// A visitor as a listing shows it: its row, and when it was last seen (looked up or written).
    package struct Listed: Sendable, Equatable {
        package var record: VisitorRecord
        package var lastSeenAt: Int64
        /// Where the page after this visitor starts.
        package var cursor: ListingCursor
    }

    /// A place in the listing's order: last seen, then row id, both descending.
    package struct ListingCursor: Sendable, Equatable {
        package var lastSeenAt: Int64
        package var rowId: Int64

        package static let start = ListingCursor(lastSeenAt: .max, rowId: .max)
    }

    /// Up to `limit` visitors, most recently seen first, after `cursor`: a walk down the index
    /// retention keeps (`visitors_by_last_seen`), so that a page costs the same at any size and a
    /// listing never holds more than a page. A file from before that index (schema 3 and older,
    /// read as found) is ordered by its last write instead, sorted whole.
    package func mostRecentlySeen(after cursor: ListingCursor = .start, limit: Int) throws -> [Listed] {
        let sql: String
        if try connection.sharedParts.available() {
            sql = """
                SELECT visitor_id, anonymous_id, consent, document, updated_at, coalesce(last_seen_at, updated_at), row_id
                FROM main.visitor_documents
                WHERE coalesce(last_seen_at, updated_at) <= ?1 AND (coalesce(last_seen_at, updated_at) < ?1 OR row_id < ?2)
                ORDER BY coalesce(last_seen_at, updated_at) DESC, row_id DESC LIMIT ?3
                """
        } else if try hasLastSeen() {
            sql = """
                SELECT visitor_id, anonymous_id, consent, document, updated_at, coalesce(last_seen_at, updated_at), rowid
                FROM main.visitors
                WHERE coalesce(last_seen_at, updated_at) <= ?1 AND (coalesce(last_seen_at, updated_at) < ?1 OR rowid < ?2)
                ORDER BY coalesce(last_seen_at, updated_at) DESC, rowid DESC LIMIT ?3
                """
        } else {
            sql = """
                SELECT visitor_id, anonymous_id, consent, document, updated_at, updated_at, rowid
                FROM main.visitors
                WHERE updated_at <= ?1 AND (updated_at < ?1 OR rowid < ?2)
                ORDER BY updated_at DESC, rowid DESC LIMIT ?3
                """
        }
        return try connection.query(sql, [.integer(cursor.lastSeenAt), .integer(cursor.rowId), SQLiteValue(max(0, limit))]).map { row in
            let seen = try row.int64(5)
            return Listed(record: try Self.record(row), lastSeenAt: seen, cursor: ListingCursor(lastSeenAt: seen, rowId: try row.int64(6)))
        }
    }

    /// Visitors, most recently updated first.
    package func visitors(limit: Int = .max) throws -> [VisitorRecord] {
        try connection.query("\(try selectColumns()) ORDER BY updated_at DESC, visitor_id LIMIT ?", [SQLiteValue(limit)])
            .map(Self.record)
    }

    /// The visitors, as the store keeps their number (`visitors_total`, schema 7: one row read);
    /// counted in an older file.
    package func count() throws(StoreError) -> Int {
        guard try connection.tableExists("visitors_total") else { return try countRows() }
        return Int(try connection.scalar("SELECT total FROM main.visitors_total WHERE id = 1")?.int64 ?? 0)
    }

    /// The visitors, counted: a walk of the table's smallest index, in time linear in its size.
    package func countRows() throws(StoreError) -> Int {
        Int(try connection.scalar("SELECT count(*) FROM main.visitors")?.int64 ?? 0)
    }

    // MARK: Retention

    /// Deletes, least recently seen first, at most `limit` visitors not seen since `boundary`
    /// (unix ms), with their decisions: one batch of a prune, in the caller's transaction.
    package func deleteNotSeen(since boundary: Int64, limit: Int) throws -> VisitorsDeleted {
        try delete(try connection.query(
            """
            SELECT rowid, visitor_id FROM main.visitors
            WHERE coalesce(last_seen_at, updated_at) < ?
            ORDER BY coalesce(last_seen_at, updated_at) LIMIT ?
            """,
            [.integer(boundary), SQLiteValue(max(0, limit))]
        ))
    }

    /// Deletes, least recently seen first, at most `limit` of the visitors beyond the newest
    /// `keeping`, with their decisions: one batch of a budget's eviction.
    package func deleteLeastRecentlySeen(keeping: Int, limit: Int) throws -> VisitorsDeleted {
        let excess = try count() - max(0, keeping)
        guard excess > 0 else { return VisitorsDeleted() }
        return try delete(try connection.query(
            "SELECT rowid, visitor_id FROM main.visitors ORDER BY coalesce(last_seen_at, updated_at) LIMIT ?",
            [SQLiteValue(min(excess, max(0, limit)))]
        ))
    }

    /// Whether a prune would delete anything: a visitor not seen since `boundary`, or more
    /// visitors than `keeping`. One index probe, and a count only with a budget.
    package func anyDue(notSeenSince boundary: Int64?, keepingAtMost keeping: Int?) throws(StoreError) -> Bool {
        if let boundary,
           try connection.scalar("SELECT 1 FROM main.visitors WHERE coalesce(last_seen_at, updated_at) < ? LIMIT 1", [.integer(boundary)]) != nil {
            return true
        }
        guard let keeping else { return false }
        return try count() > keeping
    }

    /// How many visitors were not seen since `boundary` (unix ms). Reads a file of any schema
    /// version (`flagship db inspect` opens older ones as they are): before version 4, by
    /// `updated_at`, the only time those files keep.
    /// `atMost`: the count stops there (a walk of the index as long as the visitors due, which
    /// can be the whole table when no prune has run).
    package func countNotSeen(since boundary: Int64, atMost: Int = .max) throws(StoreError) -> Int {
        let sql = try hasLastSeen()
            ? "SELECT count(*) FROM (SELECT 1 FROM main.visitors WHERE coalesce(last_seen_at, updated_at) < ?1 LIMIT ?2)"
            : "SELECT count(*) FROM (SELECT 1 FROM main.visitors WHERE updated_at < ?1 LIMIT ?2)"
        return Int(try connection.scalar(sql, [.integer(boundary), SQLiteValue(max(0, atMost))])?.int64 ?? 0)
    }

    /// The least recently seen visitor and when (unix ms); `nil` when there is none. Any
    /// schema version, as `countNotSeen`.
    package func leastRecentlySeen() throws -> (visitorId: String, lastSeenAt: Int64)? {
        let sql = try hasLastSeen()
            ? "SELECT visitor_id, coalesce(last_seen_at, updated_at) FROM main.visitors ORDER BY coalesce(last_seen_at, updated_at), rowid LIMIT 1"
            : "SELECT visitor_id, updated_at FROM main.visitors ORDER BY updated_at, rowid LIMIT 1"
        return try connection.query(sql).first.map { row in (try row.text(0), try row.int64(1)) }
    }

    /// Whether `visitors` has its `last_seen_at` column (schema version 4 on).
    private func hasLastSeen() throws(StoreError) -> Bool {
        try connection.scalar("SELECT count(*) FROM pragma_table_info('visitors') WHERE name = 'last_seen_at'")?.int64 ?? 0 > 0
    }

    /// Deletes the chosen rows (rowid, visitor id) and their visitors' decisions.
    private func delete(_ chosen: [Row]) throws -> VisitorsDeleted {
        guard !chosen.isEmpty else { return VisitorsDeleted() }
        var ids: [String] = []
        var rowIds: [[SQLiteValue]] = []
        for row in chosen {
            ids.append(try row.text(1))
            rowIds.append([.integer(try row.int64(0))])
        }
        let decisions = try connection.executeMany("DELETE FROM main.decisions WHERE visitor_id = ?", ids.map { [.text($0)] })
        let visitors = try connection.executeMany("DELETE FROM main.visitors WHERE rowid = ?", rowIds)
        return VisitorsDeleted(visitors: visitors, decisionRows: decisions)
    }

    /// Rows in the full shape: through `visitor_documents` from schema version 5 on (compact rows
    /// put together again), from the table itself in older files (`flagship db inspect` opens
    /// them as they are).
    private func selectColumns() throws(StoreError) -> String {
        try connection.sharedParts.available()
            ? "SELECT visitor_id, anonymous_id, consent, document, updated_at FROM main.visitor_documents"
            : "SELECT visitor_id, anonymous_id, consent, document, updated_at FROM main.visitors"
    }

    private static func record(_ row: Row) throws -> VisitorRecord {
        VisitorRecord(
            visitorId: try row.text(0), anonymousId: try row.optionalText(1), consent: try row.bool(2),
            document: try row.text(3), updatedAt: try row.int64(4)
        )
    }
}

/// What one batch of a prune deleted.
package struct VisitorsDeleted: Sendable, Equatable {
    package var visitors = 0
    /// Rows of `decisions` (each one fetch's assignments) of those visitors.
    package var decisionRows = 0

    package init(visitors: Int = 0, decisionRows: Int = 0) {
        self.visitors = visitors
        self.decisionRows = decisionRows
    }
}

extension Connection {
    /// The `visitors` table, in this connection's transaction.
    package var visitors: VisitorRecordStore { VisitorRecordStore(connection: self) }
}
