import FlagshipStore
import Foundation
import Logging

/// What became of one write of hits and visitor documents: the hits' outcome (how many of the
/// oldest were evicted to stay within the cap) and the documents' error, if any. Written in one
/// transaction, both fail or neither does.
package struct HitsAndVisitorsSaved: Sendable {
    package var hits: Result<Int, any Error>
    package var documents: (any Error)?

    package init(hits: Result<Int, any Error>, documents: (any Error)?) {
        self.hits = hits
        self.documents = documents
    }

    /// One transaction's outcome, for both.
    package init(_ outcome: Result<Int, any Error>) {
        hits = outcome
        if case .failure(let error) = outcome { documents = error } else { documents = nil }
    }
}

/// A hit queue that keeps the visitor cache's documents too: written by the tracking manager's
/// group commits beside the hits, read by visitor lookups, and erased with the visitor's hits
/// when consent is withdrawn. Its own calls are the writer's side of a `HitQueue` (awaited by the
/// writer, one job at a time), but `lookUpVisitor`, which lookups of many visitors make at once.
package protocol VisitorKeepingHitQueue: HitQueue {
    /// Writes hits and the visitors' newest documents.
    func save(_ hits: [CachedHit], visitors: [VisitorRecord]) async -> HitsAndVisitorsSaved
    /// The visitor's stored document, if any: for `buildAsync()`, and for `build()` from a task
    /// on the visitor cache's queue that the synchronous caller waits for.
    func lookUpVisitor(id: String) async throws -> VisitorRecord?
    /// Consent withdrawn: the visitor's document and its hits but its consent hits and `keeping`
    /// (accepted after the withdrawal). Returns how many hits went.
    func erase(visitorId: String, keeping: Set<String>) async throws -> Int
}

/// Makes the queue of an SDK whose hits and visitors live in a store shared by a fleet (the
/// `FlagshipPostgres` product's, `withPostgresStore`) rather than in the default caches.
package protocol SharedStoreProvider: Sendable {
    /// The queue of `envId`'s hits and visitors. `leaseDuration` (seconds) is how long a claim
    /// holds its hits. `local` is what the SDK would use without the provider (this instance's
    /// store), for what cannot reach the shared one. `now` is the SDK's clock, in unix ms.
    func queue(envId: String, leaseDuration: TimeInterval, local: LocalHitsAndVisitors, now: @escaping @Sendable () -> Int64,
               logger: Logger) -> any VisitorKeepingHitQueue
    /// Where the environment's bucketing file is shared, beside this instance's store (`nil`:
    /// nowhere, the shared store cannot be used).
    func bucketingFiles(envId: String, logger: Logger) -> (any SharedBucketingFiles)?
}

/// The bucketing file a fleet shares: the newest download of any instance. Awaited by the
/// bucketing poller's store work (each call may wait for the network; none holds a thread).
package protocol SharedBucketingFiles: Sendable {
    func file() async throws -> BucketingRecord?
    /// Keeps `record` unless a newer download is stored already.
    func save(_ record: BucketingRecord) async throws
    /// Keeps a file the SDK decides on by version (decision provenance), and the newest
    /// `keeping` versions by last use.
    func keep(_ version: BucketingFileVersion, keeping: Int) async throws
}

/// A hit queue with the visitor documents of this instance's store: in the transaction of the
/// hits when the queue is that store's `hits` table, else in a transaction of their own, first.
/// Without a store that can be written, documents cannot be kept (the writer keeps them in
/// memory and tries again).
package struct LocalHitsAndVisitors: VisitorKeepingHitQueue {
    package let hits: any HitQueue
    /// The store of the default visitor cache, when there is one to write.
    package let store: FlagshipDatabase?

    init(hits: any HitQueue, store: FlagshipDatabase?) {
        self.hits = hits
        self.store = store
    }

    package func save(_ hits: [CachedHit], visitors records: [VisitorRecord]) async -> HitsAndVisitorsSaved {
        let queue = self.hits
        guard !records.isEmpty else {
            return HitsAndVisitorsSaved(hits: await Self.saved(hits, in: queue), documents: nil)
        }
        guard let store else {
            return HitsAndVisitorsSaved(hits: await Self.saved(hits, in: queue),
                                        documents: FSCacheError(code: .inMemory, path: nil, description: "no local store to keep visitor documents in"))
        }
        let writeDocuments: (Connection) throws -> Void = { try $0.visitors.save(records) }
        if let table = queue as? SQLiteHitQueue, table.isTable(of: store) {
            return HitsAndVisitorsSaved(Result { try table.save(hits, alongside: writeDocuments) })
        }
        var documentsError: (any Error)?
        do {
            guard store.opening.readOnly == nil else {
                throw StoreError.fileSystem(path: store.database.path, reason: "the database file is read, not written")
            }
            try store.database.write(writeDocuments)
        } catch {
            documentsError = error
        }
        return HitsAndVisitorsSaved(hits: await Self.saved(hits, in: queue), documents: documentsError)
    }

    /// `queue.save(hits)`'s outcome (nothing asked of the queue for no hits).
    private static func saved(_ hits: [CachedHit], in queue: any HitQueue) async -> Result<Int, any Error> {
        guard !hits.isEmpty else { return .success(0) }
        do {
            return .success(try await queue.save(hits))
        } catch {
            return .failure(error)
        }
    }

    /// The visitor's stored document, read on the caller's thread (blocking it), beside any write
    /// transaction under way (`FlagshipDatabase.readBesideWrites`), as the default visitor cache
    /// reads: a lookup does not wait for a group commit. What a commit under way writes is not
    /// seen yet; the documents waiting for one are found in memory first
    /// (`PendingVisitorDocuments`).
    package func visitor(id visitorId: String) throws -> VisitorRecord? {
        try store?.readBesideWrites { try $0.visitors.visitor(id: visitorId) }
    }

    /// `visitor(id:)` awaited: the read runs on the read connection's own queue
    /// (`io.flagship.store.reader`): SQLite blocks, and no thread of Swift's pool may.
    package func lookUpVisitor(id visitorId: String) async throws -> VisitorRecord? {
        guard let store else { return nil }
        return try await store.readBesideWrites { try $0.visitors.visitor(id: visitorId) }
    }

    /// One transaction when both are tables of the store; then the traces on disk are erased.
    package func erase(visitorId: String, keeping: Set<String>) async throws -> Int {
        guard let store, store.opening.readOnly == nil else {
            return try await hits.purge(visitorId: visitorId, keeping: keeping)
        }
        if let table = hits as? SQLiteHitQueue, table.isTable(of: store) {
            return try table.purge(visitorId: visitorId, keeping: keeping) { try $0.visitors.delete(visitorId: visitorId) }
        }
        // Written here, on the writer's thread, as the group commits are.
        func deleteDocument() throws {
            try store.write { try $0.visitors.delete(visitorId: visitorId) }
            try store.database.eraseWALHistory()
        }
        try deleteDocument()
        return try await hits.purge(visitorId: visitorId, keeping: keeping)
    }

    /// Documents kept here, newest first, each with the decisions recorded with it: for a shared
    /// store, those it has not got yet (`forget` then deletes both here).
    package func keptVisitors(limit: Int) throws -> [VisitorRecord] {
        try store?.read { db in
            try db.visitors.visitors(limit: limit).map { visitor in
                var record = visitor
                record.decisions = try db.decisions.decisions(visitorId: visitor.visitorId)
                return record
            }
        } ?? []
    }

    /// Deletes the rows of `records` that were not replaced since (a newer document stays), with
    /// their decisions.
    package func forget(_ records: [VisitorRecord]) throws {
        guard let store, !records.isEmpty else { return }
        try store.write { db in
            for record in records {
                if try db.visitors.visitor(id: record.visitorId)?.updatedAt == record.updatedAt {
                    try db.visitors.delete(visitorId: record.visitorId)
                }
            }
        }
    }

    // The hit queue's own calls go to `hits`.
    package func save(_ hits: [CachedHit]) async throws -> Int { try await self.hits.save(hits) }
    package func claim(_ endpoint: HitEndpoint, limit: Int, now: Int64) async throws -> [OutgoingHit] {
        try await hits.claim(endpoint, limit: limit, now: now)
    }
    package func settle(_ settlement: HitSettlement) async throws { try await hits.settle(settlement) }
    package func deleteExpired(createdBefore boundary: Int64) async throws -> Int {
        try await hits.deleteExpired(createdBefore: boundary)
    }
    package func purge(visitorId: String, keeping: Set<String>) async throws -> Int {
        try await hits.purge(visitorId: visitorId, keeping: keeping)
    }
    package func count() async throws -> Int { try await hits.count() }
    package func releaseClaims(_ ids: [String]?) async throws { try await hits.releaseClaims(ids) }
    package func loadCached(now: Int64, found: @escaping @Sendable (_ takeIn: @escaping @Sendable () -> Int) -> Void) {
        hits.loadCached(now: now, found: found)
    }
    package var durability: HitDurability { hits.durability }
    package var ownTable: OwnHitTable? { hits.ownTable }
}
