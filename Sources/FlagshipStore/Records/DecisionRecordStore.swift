import Foundation

/// One row of `decisions`: a visitor placed in a variation of a variation group, with when, by
/// what (the bucketing file version, the Decision API) and on which context.
package struct DecisionRecord: Sendable, Equatable {
    /// Where a decision came from (the `source` column).
    package enum Source: String, Sendable, CaseIterable {
        case bucketingFile = "bucketing_file"
        case bootstrap
        case decisionAPI = "decision_api"
        /// A row carried forward from a store older than provenance.
        case unknown
    }

    package var visitorId: String
    /// Unix milliseconds.
    package var decidedAt: Int64
    package var campaignId: String?
    package var variationGroupId: String
    package var variationId: String
    package var source: Source
    /// The flags' reason then (`SPLIT`, `TARGETING_MATCH`, `STATIC`), `UNKNOWN` for a carried row.
    package var reason: String
    /// The sha256 (hex) of the bucketing file that decided; `nil` for the Decision API or unknown.
    package var fileVersion: String?
    /// The context sent, as a JSON object text.
    package var context: String?
    /// The variation's flags then, as a JSON object text.
    package var flags: String?
    /// The same decision in parts: with them for every assignment of a fetch, a store at schema
    /// version 5 writes the compact row (shared parts by id). Never read back.
    package var shared: SharedDecisionParts?

    package init(visitorId: String, decidedAt: Int64, campaignId: String?, variationGroupId: String, variationId: String,
                 source: Source, reason: String, fileVersion: String?, context: String?, flags: String?,
                 shared: SharedDecisionParts? = nil) {
        self.shared = shared
        self.visitorId = visitorId
        self.decidedAt = decidedAt
        self.campaignId = campaignId
        self.variationGroupId = variationGroupId
        self.variationId = variationId
        self.source = source
        self.reason = reason
        self.fileVersion = fileVersion
        self.context = context
        self.flags = flags
    }
}

/// The `decisions` table (`db.decisions`), in the caller's transaction. A row holds one fetch's
/// assignments (those with the same visitor, time, source, version and context): the context is
/// written once. Records go in and come out one per assignment.
/// A `decisions` row that could not be read (a hand edit, a damaged page): its row id and why.
/// The readers skip it and say so; the rows around it are read.
package struct UnreadableDecision: Sendable, Equatable {
    package let rowId: Int64
    package let reason: String

    package init(rowId: Int64, reason: String) {
        self.rowId = rowId
        self.reason = reason
    }
}

/// A page of the `decisions` table in row order: the decisions of its readable rows, the rows that
/// could not be read, and the last row id it covered (either kind), where the next page starts.
package struct DecisionPage: Sendable {
    package var decisions: [(rowId: Int64, record: DecisionRecord)] = []
    package var unreadable: [UnreadableDecision] = []
    /// `nil`: no row after the cursor.
    package var lastRowId: Int64?
}

package struct DecisionRecordStore {
    let connection: Connection

    /// Writes `records`, one row per run of records of the same fetch.
    package func insert(_ records: [DecisionRecord]) throws(StoreError) {
        guard !records.isEmpty else { return }
        let shared = connection.sharedParts
        var compacting = records.contains { $0.shared != nil }
        if compacting { compacting = try shared.available() }
        if !compacting {
            _ = try connection.executeMany(
                """
                INSERT INTO main.decisions (visitor_id, decided_at, source, file_version, context, assignments)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
                Self.fetches(records).map { fetch in
                    let first = fetch[fetch.startIndex]
                    return [.text(first.visitorId), .integer(first.decidedAt), .text(first.source.rawValue),
                            SQLiteValue(first.fileVersion), SQLiteValue(first.context), .text(Self.assignmentsJSON(fetch))]
                }
            )
            return
        }
        try shared.revalidate()
        var rows: [[SQLiteValue]] = []
        for fetch in Self.fetches(records) {
            let first = fetch[fetch.startIndex]
            // A fetch is compact whole or not at all: its row has one shape.
            guard let parts = first.shared, fetch.allSatisfy({ $0.shared?.context == parts.context && $0.shared?.preset == parts.preset }) else {
                rows.append([.text(first.visitorId), .integer(first.decidedAt), .text(first.source.rawValue),
                             SQLiteValue(first.fileVersion), SQLiteValue(first.context), .null, .text(Self.assignmentsJSON(fetch))])
                continue
            }
            var assignments = "["
            for (index, record) in fetch.enumerated() {
                if index > 0 { assignments += "," }
                assignments += "[\(try shared.variationId(record.shared?.variation ?? "{}")),\(Self.jsonString(record.reason))]"
            }
            assignments += "]"
            let preset: SQLiteValue = try parts.preset.map { preset throws(StoreError) in .integer(try shared.contextId(preset)) } ?? .null
            rows.append([.text(first.visitorId), .integer(first.decidedAt), .text(first.source.rawValue),
                         SQLiteValue(first.fileVersion), .text(parts.context), preset, .text(assignments)])
        }
        _ = try connection.executeMany(
            """
            INSERT INTO main.decisions (visitor_id, decided_at, source, file_version, context, context_preset, assignments)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            rows
        )
    }

    /// One visitor's decisions, oldest first; rows that cannot be read are skipped.
    package func decisions(visitorId: String) throws -> [DecisionRecord] {
        var unreadable: [UnreadableDecision] = []
        return try decisions(visitorId: visitorId, unreadable: &unreadable)
    }

    /// One visitor's decisions, oldest first; the rows that cannot be read are skipped and added
    /// to `unreadable`.
    package func decisions(visitorId: String, unreadable: inout [UnreadableDecision]) throws -> [DecisionRecord] {
        let rows = try readRows(.visitor(visitorId))
        unreadable += rows.unreadable
        return rows.readable.flatMap(\.records)
    }

    /// Every decision, in the order they were recorded, from the rows after row `after`,
    /// `limit` rows at most, for a walk over the whole table in pages. A row that cannot be read
    /// is in the page's `unreadable`, and the walk goes on past it.
    package func page(after rowId: Int64, limit: Int) throws -> DecisionPage {
        let rows = try readRows(.page(after: rowId, limit: limit))
        var page = DecisionPage()
        for row in rows.readable {
            page.decisions += row.records.map { (row.rowId, $0) }
        }
        page.unreadable = rows.unreadable
        let last = max(rows.readable.last?.rowId ?? .min, rows.unreadable.last?.rowId ?? .min)
        page.lastRowId = last == .min ? nil : last
        return page
    }

    /// Which rows `readRows` reads.
    private enum Rows {
        /// One visitor's, oldest first.
        case visitor(String)
        /// The table's, in row order, after a row id.
        case page(after: Int64, limit: Int)
    }

    private func select(_ rows: Rows) throws(StoreError) -> [Row] {
        switch rows {
        case .visitor(let visitorId):
            try connection.query("\(try selectColumns()) WHERE visitor_id = ? ORDER BY decided_at, id", [.text(visitorId)])
        case .page(let after, let limit):
            try connection.query("\(try selectColumns()) WHERE id > ? ORDER BY id LIMIT ?", [.integer(after), SQLiteValue(limit)])
        }
    }

    /// The row ids of the same rows, from the table: what the view would put together is not read.
    private func rowIds(_ rows: Rows) throws -> [Int64] {
        let found: [Row]
        switch rows {
        case .visitor(let visitorId):
            found = try connection.query("SELECT id FROM main.decisions WHERE visitor_id = ? ORDER BY decided_at, id", [.text(visitorId)])
        case .page(let after, let limit):
            found = try connection.query("SELECT id FROM main.decisions WHERE id > ? ORDER BY id LIMIT ?", [.integer(after), SQLiteValue(limit)])
        }
        return try found.map { try $0.int64(0) }
    }

    /// The rows asked for, each read on its own: one that fails (an `assignments` that is not what
    /// this SDK writes, a column of another type) is unreadable, the others are read. A row the
    /// view cannot even put together (JSON that does not parse fails the whole statement) sends
    /// the read row by row.
    private func readRows(_ rows: Rows) throws
        -> (readable: [(rowId: Int64, records: [DecisionRecord])], unreadable: [UnreadableDecision]) {
        var readable: [(rowId: Int64, records: [DecisionRecord])] = []
        var unreadable: [UnreadableDecision] = []
        func read(_ row: Row) throws {
            let rowId = try row.int64(6)
            do {
                readable.append((rowId, try Self.records(row)))
            } catch {
                unreadable.append(UnreadableDecision(rowId: rowId, reason: "\(error)"))
            }
        }
        do {
            for row in try select(rows) { try read(row) }
            return (readable, unreadable)
        } catch {
            readable.removeAll()
            unreadable.removeAll()
        }
        for id in try rowIds(rows) {
            do {
                for row in try connection.query("\(try selectColumns()) WHERE id = ?", [.integer(id)]) { try read(row) }
            } catch {
                unreadable.append(UnreadableDecision(rowId: id, reason: "\(error)"))
            }
        }
        return (readable, unreadable)
    }

    /// Deletes the visitor's decisions (consent withdrawn); returns how many rows went.
    @discardableResult
    package func delete(visitorId: String) throws(StoreError) -> Int {
        try connection.execute("DELETE FROM main.decisions WHERE visitor_id = ?", [.text(visitorId)])
    }

    /// How many assignments are recorded, in the rows that can be read.
    package func count() throws(StoreError) -> Int {
        Int(try connection.scalar(
            """
            SELECT coalesce(sum(CASE WHEN json_valid(assignments)
                                     THEN CASE WHEN json_type(assignments) = 'array' THEN json_array_length(assignments) END
                                END), 0)
            FROM main.decisions
            """
        )?.int64 ?? 0)
    }

    /// Rows whose `assignments` is not a JSON array (a hand edit, a damaged page): no reader can
    /// take their decisions; `why` and the replay skip them, naming them.
    package func unreadableCount() throws(StoreError) -> Int {
        Int(try connection.scalar(
            """
            SELECT count(*) FROM main.decisions
            WHERE CASE WHEN json_valid(assignments) THEN json_type(assignments) <> 'array' ELSE 1 END
            """
        )?.int64 ?? 0)
    }

    /// The visitors decided at more than one moment. A visitor decided from its stored assignment
    /// history adds no row, so while the bucketing file and the visitors' contexts stay the same
    /// (a soak), each was decided again without its history.
    package func visitorsDecidedMoreThanOnce() throws -> [String] {
        try connection.query("SELECT visitor_id FROM main.decisions GROUP BY visitor_id HAVING count(DISTINCT decided_at) > 1")
            .map { try $0.text(0) }
    }

    /// How many visitors have decisions recorded.
    package func visitorCount() throws(StoreError) -> Int {
        Int(try connection.scalar("SELECT count(DISTINCT visitor_id) FROM main.decisions")?.int64 ?? 0)
    }

    /// Rows in the full shape: through `decision_rows` from schema version 5 on (compact rows put
    /// together again), from the table itself in older files.
    private func selectColumns() throws(StoreError) -> String {
        try connection.sharedParts.available()
            ? "SELECT visitor_id, decided_at, source, file_version, context, assignments, id FROM main.decision_rows"
            : "SELECT visitor_id, decided_at, source, file_version, context, assignments, id FROM main.decisions"
    }

    /// Runs of records made by one fetch (same visitor, time, source, version and context).
    package static func fetches(_ records: [DecisionRecord]) -> [ArraySlice<DecisionRecord>] {
        var runs: [ArraySlice<DecisionRecord>] = []
        var start = records.startIndex
        for index in records.indices.dropFirst() where !records[index].sameFetch(as: records[start]) {
            runs.append(records[start..<index])
            start = index
        }
        if start < records.endIndex { runs.append(records[start...]) }
        return runs
    }

    /// `[{"campaignId", "variationGroupId", "variationId", "reason", "flags"}]`, as the column holds it.
    package static func assignmentsJSON(_ fetch: ArraySlice<DecisionRecord>) -> String {
        var text = "["
        var first = true
        for record in fetch {
            if !first { text += "," }
            first = false
            text += "{\"campaignId\":" + (record.campaignId.map(jsonString) ?? "null")
            text += ",\"variationGroupId\":" + jsonString(record.variationGroupId)
            text += ",\"variationId\":" + jsonString(record.variationId)
            text += ",\"reason\":" + jsonString(record.reason)
            if let flags = record.flags { text += ",\"flags\":" + flags }
            text += "}"
        }
        return text + "]"
    }

    /// The records of one row's `assignments`: a row this SDK did not write in that shape (a hand
    /// edit) is a typed error naming the column.
    package static func records(visitorId: String, decidedAt: Int64, source: DecisionRecord.Source, fileVersion: String?,
                                context: String?, assignments: String) throws(StoreError) -> [DecisionRecord] {
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(assignments.utf8)), let list = parsed as? [[String: Any]] else {
            throw StoreError.unexpectedValue(column: "decisions.assignments", found: "not a JSON array of objects")
        }
        return try list.map { entry throws(StoreError) in
            guard let group = entry["variationGroupId"] as? String, let variation = entry["variationId"] as? String else {
                throw StoreError.unexpectedValue(column: "decisions.assignments", found: "an assignment without its ids")
            }
            let flags = entry["flags"].flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys, .fragmentsAllowed]) }
            return DecisionRecord(visitorId: visitorId, decidedAt: decidedAt, campaignId: entry["campaignId"] as? String,
                                  variationGroupId: group, variationId: variation, source: source,
                                  reason: entry["reason"] as? String ?? "UNKNOWN", fileVersion: fileVersion, context: context,
                                  flags: flags.map { String(decoding: $0, as: UTF8.self) })
        }
    }

    private static func records(_ row: Row) throws -> [DecisionRecord] {
        let sourceText = try row.text(2)
        guard let source = DecisionRecord.Source(rawValue: sourceText) else {
            throw StoreError.unexpectedValue(column: "decisions.source", found: "'\(sourceText)' is not a known source")
        }
        return try records(visitorId: try row.text(0), decidedAt: try row.int64(1), source: source, fileVersion: try row.optionalText(3),
                           context: try row.optionalText(4), assignments: try row.text(5))
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped.
    private static func jsonString(_ text: String) -> String {
        // Ids and reasons rarely hold anything to escape: then the text goes as it is.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + text + "\""
        }
        var escaped = "\""
        escaped.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                escaped += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }
}

extension DecisionRecord {
    /// Whether both were made by the same fetch, and so share a row.
    func sameFetch(as other: DecisionRecord) -> Bool {
        visitorId == other.visitorId && decidedAt == other.decidedAt && source == other.source
            && fileVersion == other.fileVersion && context == other.context
    }
}

extension Connection {
    /// The `decisions` table, in this connection's transaction.
    package var decisions: DecisionRecordStore { DecisionRecordStore(connection: self) }
}
