import CSQLite
import Foundation

/// Copies what can still be read in a damaged store (one moved aside) into a sound one: every
/// hit, visitor and decision whose row can be read, each once.
///
/// The damaged file is never written: it is read through a private copy (with its `-wal`).
/// Rows are read by rowid, straight from each table's b-tree, so a damaged index costs nothing,
/// and a damaged table page costs only the rows on it: the scan skips past it and goes on. A hit
/// or visitor already in the sound store is left as it is there. The sound store records that the
/// file was salvaged (`sdk_state`, key `salvaged:<file name>`), so a second salvage of the same
/// file is refused: a hit delivered and deleted since is not put back.
package struct Salvage: Sendable, Equatable {
    /// Hits copied into the sound store.
    package var hitsCopied = 0
    /// Hits read that the sound store already had (same id).
    package var hitsAlreadyThere = 0
    package var visitorsCopied = 0
    package var visitorsAlreadyThere = 0
    /// Rows of `decisions` (what a fetch assigned, with its provenance) copied, and those the
    /// sound store already had (same visitor, time and assignments).
    package var decisionsCopied = 0
    package var decisionsAlreadyThere = 0
    /// Rows read but refused by the sound store's checks (a document that is not JSON, say).
    package var rowsRefused = 0
    /// Stretches of a table that could not be read (damaged pages), skipped.
    package var unreadableStretches = 0
    /// Tables whose scan stopped at its time bound (`scanBound`): the rows read so far are copied.
    package var tablesCutShort = 0

    /// How long the scan of one table may take: a salvage runs while the SDK starts, and a file
    /// damaged so that every row needs a search must not hold the start for ever.
    static let scanBound: Duration = .seconds(3)

    /// The `sdk_state` key recording that `file` was salvaged into a store.
    static func stateKey(_ file: URL) -> String {
        "salvaged:" + file.lastPathComponent
    }

    /// When `file` was salvaged into `store` (unix ms), if it was.
    package static func salvagedAt(_ file: URL, into store: Database) throws -> Int64? {
        try store.read { try $0.scalar("SELECT updated_at FROM main.sdk_state WHERE key = ?", [.text(stateKey(file))])?.int64 }
    }

    /// Copies the readable hits and visitors of `damaged` into `store`, in one transaction.
    /// Throws `StoreError.fileSystem` when `damaged` was already salvaged into `store`.
    package static func copy(from damaged: URL, into store: Database, now: Date = Date()) throws -> Salvage {
        if let when = try salvagedAt(damaged, into: store) {
            throw StoreError.fileSystem(path: damaged.path, reason: "already salvaged into this store (at unix ms \(when)): each hit is copied once")
        }
        var salvage = Salvage()
        let (source, scratch) = try StoreOpener.readingWithoutWriting(damaged, copyingWAL: true)
        defer {
            source.close(checkpoint: false)
            if let scratch { try? FileManager.default.removeItem(at: scratch) }
        }
        let hits = try readableRows(of: .hits, in: source, salvage: &salvage)
        let visitors = try readableRows(of: .visitors, in: source, salvage: &salvage)
        // From schema version 5 on, a visitor row may be compact: its shared parts are copied too,
        // by content (the store's ids may differ), and its references rewritten to the copies.
        let variations = try readableRows(of: .sharedVariations, in: source, salvage: &salvage)
        let contexts = try readableRows(of: .sharedContexts, in: source, salvage: &salvage)
        let decisions = try readableRows(of: .decisions, in: source, salvage: &salvage)
        try store.write { connection in
            let hitRows = try insertEach(hits.map(withoutLease), Self.insertHit, into: connection)
            (salvage.hitsCopied, salvage.hitsAlreadyThere) = (hitRows.copied, hitRows.alreadyThere)
            let compactRows = try copySharedParts(variations: variations, contexts: contexts, into: connection)
            let visitorRows = try insertEach(visitors, compactRows ? Self.insertVisitorRewritingSharedIds : Self.insertVisitor, into: connection)
            (salvage.visitorsCopied, salvage.visitorsAlreadyThere) = (visitorRows.copied, visitorRows.alreadyThere)
            let decisionRows = try insertEach(compactRows ? decisions : decisions.map { Array($0.prefix(6)) },
                                              compactRows ? Self.insertDecisionRewritingSharedIds : Self.insertDecision, into: connection)
            (salvage.decisionsCopied, salvage.decisionsAlreadyThere) = (decisionRows.copied, decisionRows.alreadyThere)
            salvage.rowsRefused += hitRows.refused + visitorRows.refused + decisionRows.refused
            try connection.hits.recount()
            let note = "\(salvage.hitsCopied) hits, \(salvage.visitorsCopied) visitors, \(salvage.decisionsCopied) decisions from \(damaged.path)"
            try connection.state.setValue(note, forKey: stateKey(damaged), now: now.unixMilliseconds)
        }
        return salvage
    }

    /// Inserts each row with `statement`: one row changed is a copy, none a row the store already
    /// had; a row the store's checks refuse (a document that is not JSON, say) is counted, not thrown.
    private static func insertEach(_ rows: [[SQLiteValue]], _ statement: String,
                                   into connection: Connection) throws(StoreError) -> (copied: Int, alreadyThere: Int, refused: Int) {
        var counts = (copied: 0, alreadyThere: 0, refused: 0)
        for row in rows {
            do throws(StoreError) {
                if try connection.execute(statement, row) == 1 { counts.copied += 1 } else { counts.alreadyThere += 1 }
            } catch {
                guard case .sqlite(let failure) = error, failure.code == SQLITE_CONSTRAINT || failure.code == SQLITE_MISMATCH else { throw error }
                counts.refused += 1
            }
        }
        return counts
    }

    private static let insertHit = """
        INSERT INTO main.hits (id, visitor_id, type, is_consent, document, created_at, attempts,
                               next_attempt_at, file_version, decided_at, lease_owner, lease_until)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (id) DO NOTHING
        """

    /// A decision, unless the store has it (the same visitor, time and assignments).
    private static let insertDecision = """
        INSERT INTO main.decisions (visitor_id, decided_at, source, file_version, context, assignments)
        SELECT ?1, ?2, ?3, ?4, ?5, ?6
        WHERE NOT EXISTS (SELECT 1 FROM main.decisions WHERE visitor_id = ?1 AND decided_at = ?2 AND assignments = ?6)
        """

    /// As `insertDecision`, a compact row's shared ids mapped to the copies' (`salvaged_ids`): its
    /// assignments' variations and its context's preset keys; a part that could not be read is
    /// left out (that assignment, or the preset keys). Text that is not JSON is left as it is, for
    /// the store's check to refuse.
    private static let insertDecisionRewritingSharedIds = """
        INSERT INTO main.decisions (visitor_id, decided_at, source, file_version, context, assignments, context_preset)
        SELECT ?1, ?2, ?3, ?4, ?5, n.assignments,
               (SELECT m.new_id FROM temp.salvaged_ids AS m WHERE m.kind = 'context' AND m.old_id = ?7)
        FROM (SELECT CASE WHEN substr(?6, 1, 2) <> '[[' OR NOT json_valid(?6) THEN ?6 ELSE (
            SELECT coalesce(json_group_array(json(r.assignment)), '[]') FROM (
                SELECT json_array(m.new_id, json_extract(x.value, '$[1]')) AS assignment
                FROM json_each(?6) AS x
                JOIN temp.salvaged_ids AS m ON m.kind = 'variation' AND m.old_id = json_extract(x.value, '$[0]')
                ORDER BY x.key) AS r) END AS assignments) AS n
        WHERE NOT EXISTS (SELECT 1 FROM main.decisions AS d WHERE d.visitor_id = ?1 AND d.decided_at = ?2 AND d.assignments = n.assignments)
        """

    /// A hit's row with its claim dropped, unless the claim is a dead letter's (`setAside`), which
    /// never lapses: a salvaged hit is claimed by no process, but one set aside stays aside.
    private static func withoutLease(_ row: [SQLiteValue]) -> [SQLiteValue] {
        guard row.count == 12, row[11].int64 != HitRecordStore.deadLetterUntil else { return row }
        return Array(row.prefix(10)) + [.null, .null]
    }

    private static let insertVisitor = """
        INSERT INTO main.visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6)
        ON CONFLICT (visitor_id) DO NOTHING
        """

    /// As `insertVisitor`, a compact row's shared ids mapped to the copies' (`salvaged_ids`); a
    /// part that could not be read is left out (its campaign, or the preset keys). Text that is
    /// not JSON is left as it is, for the store's check to refuse.
    private static let insertVisitorRewritingSharedIds = """
        INSERT INTO main.visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at)
        VALUES (?1, ?2, ?3, CASE WHEN substr(?4, 1, 11) <> '{"compact":' OR NOT json_valid(?4) THEN ?4 ELSE json_set(?4,
            '$.campaigns', json((SELECT coalesce(json_group_array(json(r.reference)), '[]') FROM (
                SELECT json_array(m.new_id, json(CASE WHEN json_extract(c.value, '$[1]') THEN 'true' ELSE 'false' END)) AS reference
                FROM json_each(?4, '$.campaigns') AS c
                JOIN temp.salvaged_ids AS m ON m.kind = 'variation' AND m.old_id = json_extract(c.value, '$[0]')
                ORDER BY c.key) AS r)),
            '$.preset', (SELECT m.new_id FROM temp.salvaged_ids AS m WHERE m.kind = 'context' AND m.old_id = json_extract(?4, '$.preset')))
            END, ?5, ?6)
        ON CONFLICT (visitor_id) DO NOTHING
        """

    /// Writes the readable shared rows into `connection`'s store by content, and records each one's
    /// new id in the temporary table `salvaged_ids`; returns whether the store can hold compact rows.
    private static func copySharedParts(variations: [[SQLiteValue]], contexts: [[SQLiteValue]], into connection: Connection) throws -> Bool {
        let shared = connection.sharedParts
        guard try shared.available() else { return false }
        try shared.revalidate()
        try connection.execute(
            "CREATE TEMP TABLE IF NOT EXISTS salvaged_ids (kind TEXT NOT NULL, old_id INTEGER NOT NULL, new_id INTEGER NOT NULL, PRIMARY KEY (kind, old_id))")
        try connection.execute("DELETE FROM temp.salvaged_ids")
        try copy(variations, kind: "variation", into: connection) { (text: String) throws(StoreError) -> Int64 in try shared.variationId(text) }
        try copy(contexts, kind: "context", into: connection) { (text: String) throws(StoreError) -> Int64 in try shared.contextId(text) }
        return true
    }

    /// One kind of shared row (id, JSON text) written by `write`, and its ids recorded. A text
    /// that is not a JSON object (damage) is not copied: the rows that refer to it lose that part.
    private static func copy(_ rows: [[SQLiteValue]], kind: String, into connection: Connection,
                             write: (String) throws(StoreError) -> Int64) throws(StoreError) {
        for row in rows {
            guard row.count == 2, let oldId = row[0].int64, let text = row[1].text else { continue }
            guard try connection.scalar("SELECT json_valid(?1) AND json_type(?1) = 'object'", [.text(text)])?.int64 == 1 else { continue }
            let newId = try write(text)
            try connection.execute("INSERT OR REPLACE INTO temp.salvaged_ids (kind, old_id, new_id) VALUES (?, ?, ?)",
                                   [.text(kind), .integer(oldId), .integer(newId)])
        }
    }

    /// A table salvaged, with the two statements that read it by rowid. A file of an older schema
    /// lacks the later columns (`laterColumns`): it is read with `olderPage`, which gives them as
    /// `NULL`, as the migrations would have added them.
    private struct Table {
        let name: String
        let page: String
        let probe: String
        var laterColumns: [String] = []
        var olderPage: String?

        /// The whole row: its retry time, its decision's provenance (the file version and time of
        /// an activate's decision), its claim (dropped when copied but a dead letter's: `withoutLease`).
        static let hits = Table(
            name: "hits",
            page: """
                SELECT rowid, id, visitor_id, type, is_consent, document, created_at, attempts, next_attempt_at, file_version, decided_at,
                       lease_owner, lease_until
                FROM main.hits WHERE rowid > ? ORDER BY rowid LIMIT ?
                """,
            probe: "SELECT rowid FROM main.hits WHERE rowid > ? ORDER BY rowid LIMIT 1",
            laterColumns: ["next_attempt_at", "file_version", "decided_at", "lease_owner", "lease_until"],
            olderPage: """
                SELECT rowid, id, visitor_id, type, is_consent, document, created_at, attempts, NULL, NULL, NULL, NULL, NULL
                FROM main.hits WHERE rowid > ? ORDER BY rowid LIMIT ?
                """)
        /// With when it was last seen, which retention counts from.
        static let visitors = Table(
            name: "visitors",
            page: """
                SELECT rowid, visitor_id, anonymous_id, consent, document, updated_at, last_seen_at
                FROM main.visitors WHERE rowid > ? ORDER BY rowid LIMIT ?
                """,
            probe: "SELECT rowid FROM main.visitors WHERE rowid > ? ORDER BY rowid LIMIT 1",
            laterColumns: ["last_seen_at"],
            olderPage: """
                SELECT rowid, visitor_id, anonymous_id, consent, document, updated_at, NULL
                FROM main.visitors WHERE rowid > ? ORDER BY rowid LIMIT ?
                """)
        /// What each fetch assigned, with its provenance: the shared parts it names (schema
        /// version 5 on) mapped as a visitor's are.
        static let decisions = Table(
            name: "decisions",
            page: """
                SELECT id, visitor_id, decided_at, source, file_version, context, assignments, context_preset
                FROM main.decisions WHERE id > ? ORDER BY id LIMIT ?
                """,
            probe: "SELECT id FROM main.decisions WHERE id > ? ORDER BY id LIMIT 1",
            laterColumns: ["context_preset"],
            olderPage: """
                SELECT id, visitor_id, decided_at, source, file_version, context, assignments, NULL
                FROM main.decisions WHERE id > ? ORDER BY id LIMIT ?
                """)
        static let sharedVariations = Table(
            name: "shared_variations",
            page: "SELECT id, id, entry FROM main.shared_variations WHERE id > ? ORDER BY id LIMIT ?",
            probe: "SELECT id FROM main.shared_variations WHERE id > ? ORDER BY id LIMIT 1")
        static let sharedContexts = Table(
            name: "shared_contexts",
            page: "SELECT id, id, context FROM main.shared_contexts WHERE id > ? ORDER BY id LIMIT ?",
            probe: "SELECT id FROM main.shared_contexts WHERE id > ? ORDER BY id LIMIT 1")
    }

    /// The rows of `table` that can be read, in rowid order, 500 at a time. A read that meets a
    /// damaged page is done again one row at a time, up to the damage; past it, the first rowid
    /// from which reading works again is found by doubling a step, then narrowing it by halves.
    private static func readableRows(of table: Table, in database: Database, salvage: inout Salvage) throws -> [[SQLiteValue]] {
        guard (try? database.read({ try $0.tableExists(table.name) })) == true else { return [] }
        let page = table.olderPage.map { olderPage in
            let later = (try? database.read { connection in
                try table.laterColumns.allSatisfy { column in
                    try connection.scalar("SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
                                          [.text(table.name), .text(column)])?.int64 == 1
                }
            }) ?? false
            return later ? table.page : olderPage
        } ?? table.page
        let probe = table.probe
        var rows: [[SQLiteValue]] = []
        var last = Int64.min
        var limit: Int64 = 500
        func readable(after start: Int64) -> Bool {
            (try? database.read { try $0.query(probe, [.integer(start)]) }) != nil
        }
        let deadline = ContinuousClock.now + scanBound
        while true {
            guard ContinuousClock.now < deadline else {
                salvage.tablesCutShort += 1
                return rows
            }
            do {
                let batch = try database.read { try $0.query(page, [.integer(last), .integer(limit)]) }
                // A damaged b-tree may hand back rows out of order: only rowids past `last` count,
                // so the scan always moves on.
                let fresh = batch.filter { ($0[0].int64 ?? .min) > last }
                guard let end = fresh.compactMap({ $0[0].int64 }).max() else { return rows }
                rows += fresh.map { Array($0.values.dropFirst()) }
                last = end
            } catch {
                guard case .sqlite(let sqliteError)? = error as? StoreError, sqliteError.meansFileIsDamaged else { throw error }
                guard limit == 1 else {
                    limit = 1
                    continue
                }
                salvage.unreadableStretches += 1
                var step: Int64 = 1
                while !readable(after: last.addingReportingOverflow(step).partialValue) {
                    let (doubled, overflow) = step.multipliedReportingOverflow(by: 2)
                    guard !overflow, !last.addingReportingOverflow(doubled).overflow else { return rows }
                    step = doubled
                }
                var (low, high) = (step / 2, step)
                while high - low > 1 {
                    let middle = low + (high - low) / 2
                    if readable(after: last + middle) { high = middle } else { low = middle }
                }
                last += high
                limit = 500
            }
        }
    }
}
