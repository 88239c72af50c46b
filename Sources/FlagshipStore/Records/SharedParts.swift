/// A visitor cache document in parts, for the compact row (schema version 5): what many
/// visitors share (each campaign's variation, the context keys the SDK sets itself) is stored
/// once in `shared_variations` and `shared_contexts`, and the row refers to it by id.
///
/// The SDK builds it beside the full document (`VisitorRecord.document`), with the same writer,
/// so that the parts put together again (`visitor_documents`) say what the document says.
package struct CompactVisitorDocument: Sendable, Equatable {
    /// Each campaign as the document lists it, without `activated`: a JSON object text.
    package var variations: [String]
    /// Each campaign's `activated`, in the same order.
    package var activated: [Bool]
    /// The context without its preset keys: a JSON object text.
    package var context: String
    /// The preset keys (`sdk_*`, `fs_*`) with their values: a JSON object text; `nil`: none.
    package var preset: String?
    /// `assignmentsHistory`: a JSON object text.
    package var assignmentsHistory: String
    /// `reported` (what the platform was told): a JSON object text; `nil`: nothing recorded.
    package var reported: String?

    package init(variations: [String], activated: [Bool], context: String, preset: String?, assignmentsHistory: String,
                 reported: String? = nil) {
        self.reported = reported
        self.variations = variations
        self.activated = activated
        self.context = context
        self.preset = preset
        self.assignmentsHistory = assignmentsHistory
    }
}

/// A decision's parts for the compact row: the variation as `CompactVisitorDocument` holds it,
/// and the fetch's context split the same way.
package struct SharedDecisionParts: Sendable, Equatable {
    /// The campaign's variation, as in `CompactVisitorDocument.variations`.
    package var variation: String
    /// The context sent, without its preset keys: a JSON object text.
    package var context: String
    /// Its preset keys: a JSON object text; `nil`: none.
    package var preset: String?

    package init(variation: String, context: String, preset: String?) {
        self.variation = variation
        self.context = context
        self.preset = preset
    }
}

/// The ids of shared rows this connection wrote or found, so that a steady flow of visitors
/// writes its campaigns as ids with no lookup. Bounded (`limit` texts of each kind; cleared
/// when full). A collection (`SharedPartsStore.collect`), in this process or another, bumps
/// a generation in `sdk_state`; a connection that sees another generation forgets its ids.
final class SharedPartsCache {
    static let limit = 4_096
    var variations: [String: Int64] = [:]
    var contexts: [String: Int64] = [:]
    var generation: String?
    /// Whether the file has the tables (schema version 5 on); `nil`: not asked yet.
    var available: Bool?

    func forget() {
        variations.removeAll(keepingCapacity: true)
        contexts.removeAll(keepingCapacity: true)
    }
}

/// `shared_variations` and `shared_contexts` (`db.sharedParts`), in the caller's transaction.
package struct SharedPartsStore {
    let connection: Connection

    static let generationKey = "shared_parts.generation"
    static let liveKey = "shared_parts.live"

    /// Whether the file has the shared tables (a file opened at an older version has not).
    package func available() throws(StoreError) -> Bool {
        let cache = connection.sharedPartsCache
        if let known = cache.available { return known }
        var found = try connection.tableExists("shared_variations")
        if found { found = try connection.tableExists("shared_contexts") }
        // Only a yes is kept: a migration on this connection may add them later.
        if found { cache.available = true }
        return found
    }

    /// Forgets the cached ids when a collection ran since they were cached: once per write
    /// transaction that writes compact rows, before the first id is used.
    func revalidate() throws(StoreError) {
        let cache = connection.sharedPartsCache
        let generation = try connection.state.value(forKey: Self.generationKey) ?? "0"
        if cache.generation != generation {
            cache.forget()
            cache.generation = generation
        }
    }

    /// The visitor row's `document`: the compact shape, with the shared parts written as needed.
    func documentText(_ compact: CompactVisitorDocument) throws(StoreError) -> String {
        var text = "{\"compact\":1,\"context\":"
        text += compact.context
        if let preset = compact.preset {
            text += ",\"preset\":\(try contextId(preset))"
        }
        text += ",\"campaigns\":["
        for (index, variation) in compact.variations.enumerated() {
            if index > 0 { text += "," }
            let activated = compact.activated.indices.contains(index) && compact.activated[index]
            text += "[\(try variationId(variation)),\(activated ? "true" : "false")]"
        }
        text += "],\"assignmentsHistory\":"
        text += compact.assignmentsHistory
        if let reported = compact.reported {
            text += ",\"reported\":"
            text += reported
        }
        return text + "}"
    }

    /// The id of the shared variation with that text, inserting it when new.
    func variationId(_ entry: String) throws(StoreError) -> Int64 {
        try sharedId(entry, cached: \.variations, column: "shared_variations.id",
                     upsert: "INSERT INTO main.shared_variations (entry) VALUES (?) ON CONFLICT (entry) DO UPDATE SET entry = excluded.entry RETURNING id")
    }

    /// The id of the shared context with that text, inserting it when new.
    func contextId(_ context: String) throws(StoreError) -> Int64 {
        try sharedId(context, cached: \.contexts, column: "shared_contexts.id",
                     upsert: "INSERT INTO main.shared_contexts (context) VALUES (?) ON CONFLICT (context) DO UPDATE SET context = excluded.context RETURNING id")
    }

    /// The id of `text` in the cache at `cached`, else from `upsert` (which returns the id of the
    /// row it wrote or found), then cached.
    private func sharedId(_ text: String, cached: ReferenceWritableKeyPath<SharedPartsCache, [String: Int64]>, column: String,
                          upsert: String) throws(StoreError) -> Int64 {
        let cache = connection.sharedPartsCache
        if let id = cache[keyPath: cached][text] { return id }
        guard let id = try connection.scalar(upsert, [.text(text)])?.int64 else {
            throw StoreError.unexpectedValue(column: column, found: "no id")
        }
        if cache[keyPath: cached].count >= SharedPartsCache.limit { cache[keyPath: cached].removeAll(keepingCapacity: true) }
        cache[keyPath: cached][text] = id
        return id
    }

    // MARK: Bound

    /// How many shared rows there are (variations, contexts).
    package func counts() throws(StoreError) -> (variations: Int, contexts: Int) {
        (Int(try connection.scalar("SELECT count(*) FROM main.shared_variations")?.int64 ?? 0),
         Int(try connection.scalar("SELECT count(*) FROM main.shared_contexts")?.int64 ?? 0))
    }

    /// Whether a collection is due: more than twice the rows in use at the last one, and more
    /// than `floor`.
    package func collectionDue(floor: Int = 1_000) throws(StoreError) -> Bool {
        guard try available() else { return false }
        let (variations, contexts) = try counts()
        let live = try connection.state.value(forKey: Self.liveKey).flatMap(Int.init) ?? 0
        return variations + contexts > max(floor, 2 * live)
    }

    /// Deletes the shared rows no visitor or decision refers to; returns how many went. In a
    /// write transaction: no row can gain a reference meanwhile. Reads every row (a scan of
    /// both tables): the retention task runs it only when `collectionDue`.
    package func collect(now: Int64) throws(StoreError) -> Int {
        guard try available() else { return 0 }
        var deleted = try connection.execute(
            """
            DELETE FROM main.shared_variations WHERE id NOT IN (
                SELECT json_extract(c.value, '$[0]') FROM main.visitors AS v, json_each(v.document, '$.campaigns') AS c
                WHERE substr(v.document, 1, 11) = '{"compact":' AND json_extract(c.value, '$[0]') IS NOT NULL
                UNION
                SELECT json_extract(x.value, '$[0]') FROM main.decisions AS d, json_each(d.assignments) AS x
                WHERE x.type = 'array' AND json_extract(x.value, '$[0]') IS NOT NULL)
            """)
        deleted += try connection.execute(
            """
            DELETE FROM main.shared_contexts WHERE id NOT IN (
                SELECT json_extract(document, '$.preset') FROM main.visitors
                WHERE substr(document, 1, 11) = '{"compact":' AND json_extract(document, '$.preset') IS NOT NULL
                UNION
                SELECT context_preset FROM main.decisions WHERE context_preset IS NOT NULL)
            """)
        let generation = (Int(try connection.state.value(forKey: Self.generationKey) ?? "0") ?? 0) &+ 1
        try connection.state.setValue(String(generation), forKey: Self.generationKey, now: now)
        let (variations, contexts) = try counts()
        try connection.state.setValue(String(variations + contexts), forKey: Self.liveKey, now: now)
        let cache = connection.sharedPartsCache
        cache.forget()
        cache.generation = String(generation)
        return deleted
    }
}

extension Connection {
    /// The shared parts of compact rows, in this connection's transaction.
    package var sharedParts: SharedPartsStore { SharedPartsStore(connection: self) }
}
