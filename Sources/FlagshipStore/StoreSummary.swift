/// What a store holds, in counts and times, without any document: what `flagship db inspect` shows.
///
/// Without `full`, every figure is read from a kept counter, a bounded table (the hits, within the
/// cache's cap) or an index's end, so it costs the same at any size; with it, the visitors are
/// counted too and the decisions are read whole (their assignments, visitors and unreadable rows).
///
/// Read through the record stores in the caller's read transaction, so from a single snapshot: a
/// file that another process is writing meanwhile gives counts that agree with each other. The
/// hit total is the sum of the counts by type.
package struct StoreSummary: Sendable, Equatable {
    package let schemaVersion: Int
    /// As kept (`visitors_total`); with `full`, counted.
    package let visitorCount: Int
    /// With `full`: the number `visitors_total` keeps, beside the count (they differ only when
    /// something wrote the table around its triggers); `nil` otherwise.
    package let keptVisitorCount: Int?
    package let hitCount: Int
    /// Hits by wire type (`EVENT`, `ACTIVATE`...); types without hits are absent.
    package let hitCountByType: [String: Int]
    /// Hits the SDK can never send exactly (bytes that are not UTF-8, a document that is not a
    /// hit cache document): kept out of every send, counted in `hitCount`, until they expire.
    package let deadLetterCount: Int
    /// Unix milliseconds when the oldest hit was created, `nil` when there is none.
    package let oldestHitCreatedAt: Int64?
    /// One summary per stored bucketing file, by env id.
    package let bucketing: [BucketingRecordStore.Summary]
    /// Assignments recorded with their provenance (`decisions`), and the visitors they are of:
    /// `nil` without `full` (each row's JSON is read).
    package let decisionCount: Int?
    package let decidedVisitorCount: Int?
    /// `decisions` rows no reader can take (`assignments` is not a JSON array): skipped by `why`.
    /// `nil` without `full`.
    package let unreadableDecisionRows: Int?
    /// Bucketing file versions kept for replaying them (`bucketing_files`).
    package let fileVersionCount: Int

    /// - Parameter db: the connection of a read transaction of `database`.
    package init(of database: FlagshipDatabase, in db: Connection, full: Bool = true) throws {
        schemaVersion = database.schemaVersion
        visitorCount = full ? try db.visitors.countRows() : try db.visitors.count()
        keptVisitorCount = full ? try db.visitors.count() : nil
        hitCountByType = try db.hits.countByType()
        hitCount = hitCountByType.values.reduce(0, +)
        deadLetterCount = try db.hits.deadLetterCount()
        oldestHitCreatedAt = try db.hits.oldestCreatedAt()
        bucketing = try db.bucketing.summaries()
        decisionCount = full ? try db.decisions.count() : nil
        decidedVisitorCount = full ? try db.decisions.visitorCount() : nil
        unreadableDecisionRows = full ? try db.decisions.unreadableCount() : nil
        fileVersionCount = try db.bucketingFiles.count()
    }
}
