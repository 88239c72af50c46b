/// What a store holds, in counts and times, without any document: what `flagship db inspect` shows.
///
/// Read through the record stores in the caller's read transaction, so from a single snapshot: a
/// file that another process is writing meanwhile gives counts that agree with each other. The
/// hit total is the sum of the counts by type.
package struct StoreSummary: Sendable, Equatable {
    package let schemaVersion: Int
    package let visitorCount: Int
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
    /// Assignments recorded with their provenance (`decisions`), and the visitors they are of.
    package let decisionCount: Int
    package let decidedVisitorCount: Int
    /// `decisions` rows no reader can take (`assignments` is not a JSON array): skipped by `why`.
    package let unreadableDecisionRows: Int
    /// Bucketing file versions kept for replaying them (`bucketing_files`).
    package let fileVersionCount: Int

    /// - Parameter db: the connection of a read transaction of `database`.
    package init(of database: FlagshipDatabase, in db: Connection) throws {
        schemaVersion = database.schemaVersion
        visitorCount = try db.visitors.count()
        hitCountByType = try db.hits.countByType()
        hitCount = hitCountByType.values.reduce(0, +)
        deadLetterCount = try db.hits.deadLetterCount()
        oldestHitCreatedAt = try db.hits.oldestCreatedAt()
        bucketing = try db.bucketing.summaries()
        decisionCount = try db.decisions.count()
        decidedVisitorCount = try db.decisions.visitorCount()
        unreadableDecisionRows = try db.decisions.unreadableCount()
        fileVersionCount = try db.bucketingFiles.count()
    }
}
