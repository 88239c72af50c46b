/// The `hits` table, seen through the connection of an open transaction (`db.hits`).
///
/// No operation opens a transaction: each runs in the one the caller holds (`Database.read` or
/// `Database.write`), so that several compose into one commit, GRDB-style. Writes of many rows
/// share one transaction: that is where the speed is (one commit per row costs an fsync-bound
/// write each). The view lives as long as the closure's connection: never keep it.
///
/// ```swift
/// try store.write { db in
///     try db.hits.delete(ids: delivered)
///     try db.hits.recordFailedAttempt(ids: failed, nextAttemptAt: retryAt)
///     try db.hits.evictOldest(beyond: 100_000)
/// }
/// ```
package struct HitRecordStore {
    let connection: Connection

    package struct InsertOutcome: Sendable, Equatable {
        package var inserted: Int
        /// Rows evicted, oldest first, to stay within the capacity.
        package var evicted: Int
        /// Rows in the table once written (the kept count).
        package var total: Int
    }

    // MARK: Writing

    /// Saves `records` (a row with the same id is replaced, keeping its attempt count and claim),
    /// then evicts the oldest rows beyond `capacity` that no sender holds by `now`. The cap check
    /// reads the kept row count (`hits_total`): no `count(*)` over the table.
    ///
    /// A record that carries a claim (`leaseOwner`, `leaseUntil`) is written claimed: the sender
    /// that will send it from memory holds it from its first commit, so no claim is needed.
    @discardableResult
    package func insert(_ records: [HitRecord], capacity: Int? = nil, now: Int64 = .max) throws(StoreError) -> InsertOutcome {
        let inserted = try connection.executeMany(
            """
            INSERT INTO main.hits (id, visitor_id, type, is_consent, document, created_at, attempts, file_version, decided_at,
                              lease_owner, lease_until)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO NOTHING
            """,
            records.map { record in
                [.text(record.id), .text(record.visitorId), .text(record.type), SQLiteValue(record.isConsent),
                 .text(record.document), .integer(record.createdAt), SQLiteValue(record.attempts),
                 SQLiteValue(record.fileVersion), SQLiteValue(record.decidedAt),
                 SQLiteValue(record.leaseOwner), SQLiteValue(record.leaseUntil)]
            }
        )
        if inserted < records.count {
            // Ids saved before (a custom cache's `cacheHits` may repeat one): replaced in place.
            try connection.executeMany(
                """
                UPDATE main.hits SET visitor_id = ?2, type = ?3, is_consent = ?4, document = ?5, created_at = ?6
                WHERE id = ?1
                """,
                records.map { record in
                    [.text(record.id), .text(record.visitorId), .text(record.type), SQLiteValue(record.isConsent),
                     .text(record.document), .integer(record.createdAt)]
                }
            )
        }
        try adjustCount(by: inserted)
        let evicted = try capacity.map { capacity throws(StoreError) in try evictOldest(beyond: capacity, now: now) } ?? 0
        return InsertOutcome(inserted: records.count, evicted: evicted, total: try count())
    }

    /// Evicts the oldest rows (in insertion order within a millisecond) so that at most
    /// `capacity` remain; returns exactly how many went. A row a sender holds at `now` (in
    /// flight: its claim has not lapsed) is never evicted, so the table may stay above `capacity`
    /// by the rows in flight; dead letters (a claim that never lapses) are evicted like any row.
    @discardableResult
    package func evictOldest(beyond capacity: Int, now: Int64 = .max) throws(StoreError) -> Int {
        let excess = try count() - max(0, capacity)
        guard excess > 0 else { return 0 }
        return try counted(connection.execute(
            """
            DELETE FROM main.hits WHERE rowid IN (
                SELECT rowid FROM main.hits
                WHERE lease_until IS NULL OR lease_until <= ?2 OR lease_until = ?3
                ORDER BY created_at, rowid LIMIT ?1)
            """,
            [SQLiteValue(excess), .integer(now), .integer(Self.deadLetterUntil)]
        ))
    }

    // MARK: Claiming and settling (the tracking manager's sending cycle)

    /// Claims up to `limit` rows for `endpoint`, oldest first (in the order they were inserted
    /// within one millisecond), for `owner` until `leaseUntil`: rows nobody holds, and rows whose
    /// claim lapsed by `now` (a sender that died). A row `owner` holds already is not claimed
    /// again: it is in flight. Run it in a write transaction (`Database.write`): two senders, even
    /// in two processes, then never claim the same row.
    package func claim(
        _ endpoint: HitEndpoint, owner: String, now: Int64, leaseUntil: Int64, limit: Int
    ) throws -> [HitRecord] {
        let rows = try connection.query(
            """
            UPDATE main.hits SET lease_owner = ?1, lease_until = ?2
            WHERE rowid IN (
                SELECT rowid FROM main.hits
                WHERE (type = 'ACTIVATE') = ?3
                  AND (lease_until IS NULL OR lease_until <= ?4)
                ORDER BY created_at, rowid
                LIMIT ?5)
            RETURNING \(Self.columns), rowid, CAST(id AS BLOB), CAST(document AS BLOB)
            """,
            [.text(owner), .integer(leaseUntil), endpoint.isActivate, .integer(now), SQLiteValue(max(0, limit))]
        )
        // A row whose text is not UTF-8 (written by hand or by another program) would be read,
        // sent and deleted with its bytes replaced: never sent, it becomes a dead letter. So does a
        // row a column of which cannot be read as this SDK writes it (an `attempts` past 2^63 − 1,
        // which SQLite keeps as a REAL, a time edited into text): alone, never failing the claim.
        var claimed: [(record: HitRecord, rowid: Int64)] = []
        var dead: [(rowid: Int64, reason: String)] = []
        for row in rows {
            guard let rowid = row[12].int64 else { continue }
            guard Self.isUTF8(row[13]), Self.isUTF8(row[14]) else {
                dead.append((rowid, Self.notUTF8))
                continue
            }
            do {
                claimed.append((try Self.record(row), rowid))
            } catch {
                dead.append((rowid, "dead letter: \(error): it cannot be sent as it was written"))
            }
        }
        try connection.executeMany("UPDATE main.hits SET lease_owner = ?2, lease_until = ?3 WHERE rowid = ?1",
                                   dead.map { [.integer($0.rowid), .text($0.reason), .integer(Self.deadLetterUntil)] })
        // RETURNING gives no order: put the claim back in sending order (hits created in the same
        // millisecond in the order they were accepted).
        return claimed.sorted { ($0.record.createdAt, $0.rowid) < ($1.record.createdAt, $1.rowid) }.map(\.record)
    }

    /// `lease_until` of a dead letter: a claim that never lapses.
    package static let deadLetterUntil = Int64.max
    static let notUTF8 = "dead letter: its id or document holds bytes that are not valid UTF-8, so it cannot be sent exactly"

    private static func isUTF8(_ value: SQLiteValue) -> Bool {
        switch value {
        case .blob(let bytes): return String(validating: bytes, as: UTF8.self) != nil
        case .null: return true
        default: return false
        }
    }

    /// How many hits are dead letters.
    package func deadLetterCount() throws(StoreError) -> Int {
        Int(try connection.scalar("SELECT count(*) FROM main.hits WHERE lease_until = ?", [.integer(Self.deadLetterUntil)])?.int64 ?? 0)
    }

    /// Adds one failed attempt to each of these hits, notes when they may be tried again, and
    /// ends their claim.
    package func recordFailedAttempt(ids: [String], nextAttemptAt: Int64? = nil) throws(StoreError) {
        try connection.executeMany(
            """
            UPDATE main.hits SET attempts = attempts + 1, next_attempt_at = ?2, lease_owner = NULL, lease_until = NULL
            WHERE id = ?1
            """,
            Set(ids).map { [.text($0), SQLiteValue(nextAttemptAt)] }
        )
    }

    /// Ends `owner`'s claim on these rows (or on all its rows, for `nil`) without counting an
    /// attempt: a sender that stopped before sending them.
    @discardableResult
    package func releaseClaims(owner: String, ids: [String]? = nil) throws(StoreError) -> Int {
        guard let ids else {
            return try connection.execute("UPDATE main.hits SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?", [.text(owner)])
        }
        return try connection.executeMany(
            "UPDATE main.hits SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?",
            Set(ids).map { [.text($0), .text(owner)] }
        )
    }

    /// The owners holding claims that have not lapsed by `now`, with how many rows each holds.
    package func claimOwners(now: Int64) throws -> [String: Int] {
        var owners: [String: Int] = [:]
        for row in try connection.query(
            "SELECT lease_owner, count(*) FROM main.hits WHERE lease_until > ? AND lease_owner IS NOT NULL GROUP BY lease_owner",
            [.integer(now)]
        ) {
            owners[try row.text(0)] = try row.int(1)
        }
        return owners
    }

    /// Keeps rows that cannot be sent (a document edited by hand) out of every claim, under a
    /// claim that never lapses whose owner says why: never sent, never silently lost, deleted by
    /// expiry like any hit.
    package func setAside(ids: [String], reason: String) throws(StoreError) {
        try connection.executeMany(
            "UPDATE main.hits SET lease_owner = ?2, lease_until = ?3 WHERE id = ?1",
            Set(ids).map { [.text($0), .text("dead letter: " + reason), .integer(Self.deadLetterUntil)] }
        )
    }

    // MARK: Deleting

    /// Deletes the hits with these ids; returns how many there were.
    @discardableResult
    package func delete(ids: [String]) throws(StoreError) -> Int {
        // One bound id per run of one statement: json_each(?) would cut an id at a NUL.
        try counted(connection.executeMany("DELETE FROM main.hits WHERE id = ?", Set(ids).map { [.text($0)] }))
    }

    /// Deletes every hit; returns how many there were.
    @discardableResult
    package func deleteAll() throws(StoreError) -> Int {
        try counted(connection.execute("DELETE FROM main.hits"))
    }

    /// Deletes one visitor's hits, keeping its consent hits when asked (consent withdrawal).
    @discardableResult
    /// Deletes a visitor's hits (consent withdrawn), but those in `keepingIds`: hits accepted after
    /// the withdrawal, which may reach the table before the deletion runs. The caller erases the
    /// deleted hits' traces on disk once committed (`Database.eraseWALHistory()`).
    package func deleteHits(
        visitorId: String, keepingConsentHits: Bool, keepingIds: Set<String> = []
    ) throws(StoreError) -> Int {
        guard !keepingIds.isEmpty else {
            return try counted(connection.execute(
                "DELETE FROM main.hits WHERE visitor_id = ? AND (is_consent = 0 OR ? = 0)",
                [.text(visitorId), SQLiteValue(keepingConsentHits)]
            ))
        }
        // The ids to delete are read, then deleted one bound id at a time (as `delete(ids:)`).
        let doomed = try connection.query(
            "SELECT id FROM main.hits WHERE visitor_id = ? AND (is_consent = 0 OR ? = 0)",
            [.text(visitorId), SQLiteValue(keepingConsentHits)]
        ).compactMap { $0[0].text }.filter { !keepingIds.contains($0) }
        return try delete(ids: doomed)
    }

    /// Deletes the hits created before `createdAt` (unix ms): expiry.
    @discardableResult
    package func deleteHits(createdBefore createdAt: Int64) throws(StoreError) -> Int {
        try counted(connection.execute("DELETE FROM main.hits WHERE created_at < ?", [.integer(createdAt)]))
    }

    // MARK: Reading

    /// Up to `limit` hits, oldest first, starting after `cursor`. Memory stays bounded by `limit`
    /// however many rows the table holds.
    package func page(after cursor: HitCursor? = nil, limit: Int) throws -> [HitRecord] {
        // SQLite reads a negative LIMIT as "no limit": never let one through.
        let limit = SQLiteValue(max(0, limit))
        let rows: [Row]
        if let cursor {
            rows = try connection.query(
                "SELECT \(Self.columns) FROM main.hits WHERE (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?",
                [cursor.createdAt, .text(cursor.id), limit]
            )
        } else {
            rows = try connection.query("SELECT \(Self.columns) FROM main.hits ORDER BY created_at, id LIMIT ?", [limit])
        }
        return try rows.map { row in try Self.record(row, listing: true) }
    }

    /// One visitor's hits, oldest first, read as a listing reads them: a column edited into
    /// something the SDK would not write does not hide the row. A row whose id cannot be read at
    /// all is counted in `unreadable` instead. Bounded by the table's cap (`maxCachedHits`).
    package func hits(visitorId: String, unreadable: inout Int) throws -> [HitRecord] {
        let rows = try connection.query(
            "SELECT \(Self.columns) FROM main.hits WHERE visitor_id = ? ORDER BY created_at, id", [.text(visitorId)]
        )
        var records: [HitRecord] = []
        records.reserveCapacity(rows.count)
        for row in rows {
            if let record = try? Self.record(row, listing: true) { records.append(record) } else { unreadable += 1 }
        }
        return records
    }

    /// Every column of a row, in the order `record(_:listing:)` reads them: what every read of
    /// `hits` selects (a claim, a page, a visitor's hits).
    private static let columns = "id, visitor_id, type, is_consent, document, created_at, attempts, next_attempt_at, "
        + "lease_owner, lease_until, file_version, decided_at"

    /// The one reader of a row of `columns`. For sending (a claim), each column as the SDK writes
    /// it, or it throws (the claim makes the row a dead letter); an activate's provenance, never
    /// sent, is read as near as it goes. For a listing, a row the SDK wrote is read exactly, and
    /// any other one as near as it goes (`nearestRecord`).
    private static func record(_ row: Row, listing: Bool = false) throws -> HitRecord {
        do {
            return HitRecord(
                id: try row.text(0), visitorId: try row.text(1), type: try row.text(2), isConsent: try row.bool(3),
                document: try row.text(4), createdAt: try row.int64(5), attempts: try row.int(6),
                nextAttemptAt: try row.optionalInt64(7), leaseOwner: try row.optionalText(8), leaseUntil: try row.optionalInt64(9),
                fileVersion: listing ? try row.optionalText(10) : row[10].text,
                decidedAt: listing ? try row.optionalInt64(11) : row[11].int64
            )
        } catch {
            guard listing else { throw error }
            return try nearestRecord(row)
        }
    }

    /// A row for reading, not for sending: a column the SDK would not have written (an `attempts`
    /// past 2^63 − 1, which SQLite keeps as a REAL; a time edited into text) is read as near as it
    /// goes, so that a listing shows the row, which a claim makes a dead letter. Its id must still
    /// be read exactly; a `created_at` that is not an integer is kept as stored for the page's
    /// cursor (`storedCreatedAt`).
    private static func nearestRecord(_ row: Row) throws -> HitRecord {
        func integer(_ index: Int) -> Int64? {
            switch row[index] {
            case .integer(let value): return value
            case .real(let value): return value.isNaN ? nil : Int64(exactly: value.rounded()) ?? (value < 0 ? .min : .max)
            case .text(let text): return Int64(text)
            case .null, .blob: return nil
            }
        }
        var record = HitRecord(id: try row.text(0), visitorId: row[1].text ?? "", type: row[2].text ?? "",
                               isConsent: (integer(3) ?? 0) != 0, document: row[4].text ?? "", createdAt: integer(5) ?? .min,
                               attempts: Int(integer(6) ?? 0), nextAttemptAt: integer(7), leaseOwner: row[8].text,
                               leaseUntil: integer(9), fileVersion: row[10].text, decidedAt: integer(11))
        if case .integer = row[5] {} else { record.storedCreatedAt = row[5] }
        // Each column as the SDK writes it: an integer or a text, null where it may be.
        let written: [(index: Int, column: String, integer: Bool, nullable: Bool)] = [
            (1, "visitor_id", false, false), (2, "type", false, false), (3, "is_consent", true, false), (4, "document", false, false),
            (6, "attempts", true, false), (7, "next_attempt_at", true, true), (8, "lease_owner", false, true),
            (9, "lease_until", true, true), (10, "file_version", false, true), (11, "decided_at", true, true),
        ]
        for expected in written {
            switch row[expected.index] {
            case .integer where expected.integer, .text where !expected.integer: continue
            case .null where expected.nullable: continue
            default: record.columnsNotAsWritten.append(expected.column)
            }
        }
        return record
    }

    /// Counts the table again into `hits_total` (once per open: it heals a count that a hand
    /// edit in the sqlite3 shell put out of step).
    package func recount() throws(StoreError) {
        try connection.execute("UPDATE main.hits_total SET total = (SELECT count(*) FROM main.hits) WHERE id = 1")
    }

    /// Rows deleted by a statement: taken off the kept count, and returned.
    private func counted(_ deleted: Int) throws(StoreError) -> Int {
        try adjustCount(by: -deleted)
        return deleted
    }

    private func adjustCount(by change: Int) throws(StoreError) {
        guard change != 0 else { return }
        try connection.execute("UPDATE main.hits_total SET total = max(0, total + ?) WHERE id = 1", [SQLiteValue(change)])
    }

    /// The number of rows, from the kept `hits_total` (no scan).
    package func count() throws(StoreError) -> Int {
        Int(try connection.scalar("SELECT total FROM main.hits_total WHERE id = 1")?.int64 ?? 0)
    }

    package func countByType() throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try connection.query("SELECT type, count(*) FROM main.hits GROUP BY type") {
            counts[try row.text(0)] = try row.int(1)
        }
        return counts
    }

    /// The creation time (unix ms) of the oldest hit, `nil` when there is none.
    package func oldestCreatedAt() throws(StoreError) -> Int64? {
        try connection.scalar("SELECT min(created_at) FROM main.hits")?.int64
    }
}


extension Connection {
    /// The `hits` table, in this connection's transaction.
    package var hits: HitRecordStore { HitRecordStore(connection: self) }
}
