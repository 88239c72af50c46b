#if Postgres
import Dispatch
import Flagship
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// The SDK's hit queue on PostgreSQL: the hits of every instance of a fleet in one table, claimed
/// with leases (`PostgresHitStore`), so that any live instance sends what a dead one acknowledged.
///
/// The tracking manager awaits every call (the writer's, one job at a time; the sender's), and no
/// thread waits for PostgreSQL's answer: the call runs on a connection of the pool, on the
/// store's event loops. Each call is bounded by `callTimeout`: past it, the call fails (the server is
/// away or the pool has no connection) and the tracking manager does what it does when the disk
/// fails: a hit it could not write waits in memory and is sent from there.
struct PostgresHitQueue: VisitorKeepingHitQueue, BoundedPostgresCalls {
    let store: FlagshipPostgresStore
    let envId: String
    let owner: String
    let leaseMilliseconds: Int64
    /// Claims take hits under backoff too (`FlagshipPostgresStore.claimsThroughBackoff`).
    var claimsThroughBackoff = false
    let logger: Logger
    /// The SDK's clock (unix ms): a lookup records when the visitor was seen.
    let now: @Sendable () -> Int64
    /// PostgreSQL's clock against the SDK's: every time in the fleet's rows is the database's.
    let clock = DatabaseClockOffset()

    /// The offset from the SDK's time to the database's, on `connection` (measured when stale).
    private func offset(on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        try await clock.offset(on: connection, now: now, location: store.location, logger: logger)
    }

    func save(_ cached: [CachedHit]) async throws -> Int {
        try await save(cached, visitors: []).hits.get()
    }

    /// Hits and visitor documents in one statement: one round trip for a group commit, awaited.
    func save(_ cached: [CachedHit], visitors: [VisitorRecord]) async -> HitsAndVisitorsSaved {
        guard !cached.isEmpty || !visitors.isEmpty else { return HitsAndVisitorsSaved(.success(0)) }
        let hits = cached.map(\.hit)
        let writtenAt = now()
        let checksCap = !hits.isEmpty && store.capCheckIsDue(envId: envId, now: writtenAt)
        let capacity = store.maximumHits
        do {
            return HitsAndVisitorsSaved(.success(try await awaited(visitors.isEmpty ? "writing hits" : "writing hits and visitors") {
                [self] connection, envId, logger in
                let offset = try await offset(on: connection, logger: logger)
                // In the database's time, the document's `time` too (a claim reads the two as one).
                let records = hits.map { HitRecord($0.shiftingTimes(by: offset)) }
                let visitors = visitors.map { $0.shiftingTimes(by: offset) }
                if visitors.isEmpty {
                    try await PostgresHitStore(connection: connection, envId: envId, logger: logger).write(records)
                } else {
                    try await PostgresVisitorStore(connection: connection, envId: envId, logger: logger).save(visitors, withHits: records)
                }
                guard checksCap else { return 0 }
                // The hits are committed: an eviction that fails is said, not the write's failure.
                do {
                    return try await connection.withTransaction(logger: logger) { connection in
                        try await PostgresHitStore(connection: connection, envId: envId, logger: logger)
                            .evictOldest(beyond: capacity, now: writtenAt.shifted(by: offset))
                    }
                } catch {
                    logger.warning("The fleet's hits table is above its cap of \(capacity) hits, and its oldest could not be evicted: \(FlagshipPostgresError(error, doing: "evicting hits"))")
                    return 0
                }
            }))
        } catch {
            return HitsAndVisitorsSaved(.failure(error))
        }
    }

    /// Not bounded here: the SDK abandons a lookup at its own timeout.
    func lookUpVisitor(id visitorId: String) async throws -> VisitorRecord? {
        let (store, envId, logger, seenAt) = (store, envId, logger, now())
        return try await withTaskExecutorPreference(store.executor) { [self] in
            try await store.ensurePrepared()
            return try await store.client.withConnection { connection in
                let offset = try await offset(on: connection, logger: logger)
                return try await PostgresVisitorStore(connection: connection, envId: envId, logger: logger)
                    .visitor(id: visitorId, seenAt: seenAt.shifted(by: offset))?.shiftingTimes(by: -offset)
            }
        }
    }

    func erase(visitorId: String, keeping: Set<String>) async throws -> Int {
        try await awaited("erasing a visitor", erasing(visitorId, keeping: keeping, writtenUpTo: nil))
    }

    /// As `erase(visitorId:keeping:)`, sparing what was written after `writtenUpTo` (unix ms), and
    /// awaited: a withdrawal PostgreSQL missed, carried out by the sender once it answers again.
    func erase(visitorId: String, keeping: Set<String>, writtenUpTo: Int64) async throws -> Int {
        try await awaited("erasing a visitor", erasing(visitorId, keeping: keeping, writtenUpTo: writtenUpTo))
    }

    private func erasing(_ visitorId: String, keeping: Set<String>, writtenUpTo: Int64?)
        -> @Sendable (PostgresConnection, String, Logger) async throws -> Int {
        { [self] connection, envId, logger in
            let offset = try await offset(on: connection, logger: logger)
            return try await PostgresVisitorStore(connection: connection, envId: envId, logger: logger)
                .erase(visitorId: visitorId, keepingHits: keeping, writtenUpTo: writtenUpTo?.shifted(by: offset))
        }
    }

    /// Awaited, as `settle`: no thread waits for the round trip.
    func claim(_ endpoint: HitEndpoint, limit: Int, now: Int64) async throws -> [OutgoingHit] {
        let (owner, until, throughBackoff) = (owner, now.shifted(by: leaseMilliseconds), claimsThroughBackoff)
        let records = try await awaited("claiming hits") { [self] connection, envId, logger in
            let offset = try await offset(on: connection, logger: logger)
            let records = try await PostgresHitStore(connection: connection, envId: envId, logger: logger)
                .claim(endpoint, owner: owner, now: now.shifted(by: offset), leaseUntil: until.shifted(by: offset), limit: limit,
                       throughBackoff: throughBackoff)
            return (records, offset)
        }
        var unreadable: [String] = []
        let hits = records.0.compactMap { record -> OutgoingHit? in
            let hit: OutgoingHit
            if let written = OutgoingHit(record: record) {
                hit = written
            } else if let document = try? HitCacheDocument(FSJSONValue(parsing: Data(record.document.utf8))) {
                // Not a document this SDK wrote: read as a hit cache document, created when the row says.
                hit = OutgoingHit(id: record.id, document: document).created(at: record.createdAt)
            } else {
                unreadable.append(record.id)
                return nil
            }
            // Back in the SDK's time: the base of its qt is its age as the database has it.
            return hit.shiftingTimes(by: -records.1)
        }
        await setAside(unreadable)
        return hits
    }

    /// Rows a claim could not read as hits become dead letters, one by one (the readable rows of
    /// the claim are sent as usual): no instance claims them again. One error line each time
    /// some are set aside; if that fails, they stay leased and the next claim after the lease
    /// tries again.
    private func setAside(_ ids: [String]) async {
        guard !ids.isEmpty else { return }
        let reason = "not a hit cache document: it cannot be sent as it was written"
        do {
            try await awaited("setting unreadable hits aside") { connection, envId, logger in
                try await PostgresHitStore(connection: connection, envId: envId, logger: logger).setAside(ids: ids, reason: reason)
            }
            logger.error("\(ids.count) hit(s) in the PostgreSQL store are not hit cache documents: set aside as dead letters, never sent (`flagship hits` lists them, expiry deletes them)")
        } catch {
            logger.error("\(ids.count) hit(s) in the PostgreSQL store are not hit cache documents and could not be set aside (\(error)): left leased")
        }
    }

    func settle(_ settlement: HitSettlement) async throws {
        guard !settlement.isEmpty else { return }
        let owner = owner
        try await awaited("recording what was sent") { [self] connection, envId, logger in
            let offset = try await offset(on: connection, logger: logger)
            return try await PostgresHitStore(connection: connection, envId: envId, logger: logger)
                .settle(done: settlement.delivered + settlement.rejected, failed: settlement.failed, owner: owner,
                        nextAttemptAt: settlement.nextAttemptAt?.shifted(by: offset))
        }
    }

    func deleteExpired(createdBefore boundary: Int64) async throws -> Int {
        try await awaited("deleting expired hits") { [self] connection, envId, logger in
            let offset = try await offset(on: connection, logger: logger)
            return try await PostgresHitStore(connection: connection, envId: envId, logger: logger)
                .deleteHits(createdBefore: boundary.shifted(by: offset))
        }
    }

    func purge(visitorId: String, keeping: Set<String>) async throws -> Int {
        try await awaited("erasing a visitor's hits") { connection, envId, logger in
            try await PostgresHitStore(connection: connection, envId: envId, logger: logger).deleteHits(visitorId: visitorId, keeping: keeping)
        }
    }

    func count() async throws -> Int {
        try await awaited("counting hits") { connection, envId, logger in
            try await PostgresHitStore(connection: connection, envId: envId, logger: logger).count()
        }
    }

    func releaseClaims(_ ids: [String]?) async throws {
        let owner = owner
        try await awaited("releasing claims") { connection, envId, logger in
            try await PostgresHitStore(connection: connection, envId: envId, logger: logger).releaseClaims(owner: owner, ids: ids)
        }
    }

    /// Nothing to read at start: the fleet's claims find what earlier runs left, and a dead
    /// instance's claims lapse with their lease (no host can tell another host's process died).
    func loadCached(now: Int64, found: @escaping @Sendable (_ takeIn: @escaping @Sendable () -> Int) -> Void) {}

    /// What PostgreSQL committed is the fleet's, whatever becomes of this process.
    var durability: HitDurability { .durable }

    /// Other instances write and claim the same rows: every claim looks.
    var ownTable: OwnHitTable? { nil }
}

/// Gives the SDK its queue of hits and visitors, and its bucketing file, on the store.
struct PostgresStoreProvider: SharedStoreProvider {
    let store: FlagshipPostgresStore

    /// A store `prepare()` refused (a wrong password, another application's database, a newer
    /// schema) is not used at all: the SDK runs on its local store, and says why once.
    func queue(envId: String, leaseDuration: TimeInterval, local: LocalHitsAndVisitors, now: @escaping @Sendable () -> Int64,
               logger: Logger) -> any VisitorKeepingHitQueue {
        if let reason = store.refusal {
            logger.error("The PostgreSQL store is not used (\(reason)): hits, visitors and the bucketing file stay in this instance's local store")
            return local
        }
        let shared = PostgresHitQueue(store: store, envId: envId, owner: store.instanceName,
                                      leaseMilliseconds: Int64(((store.leaseDuration ?? leaseDuration) * 1000).rounded()),
                                      claimsThroughBackoff: store.claimsThroughBackoff, logger: logger, now: now)
        return SpillingHitQueue(primary: shared, spill: local, retryAfter: store.retryAfter, logger: logger, now: now)
    }

    func bucketingFiles(envId: String, logger: Logger) -> (any SharedBucketingFiles)? {
        guard store.refusal == nil else { return nil }
        return PostgresBucketingFiles(store: store, envId: envId, logger: logger)
    }
}

/// The PostgreSQL store, as a setting of the SDK's configuration.
extension FSConfigBuilder {
    /// Keeps the SDK's hits, visitors and bucketing file in `store`, a PostgreSQL database shared
    /// by every instance: an acknowledged hit (`try await sendHit`) is committed there, and any
    /// live instance sends it; a visitor keeps its variations on every instance. While the
    /// database cannot be reached, this instance's local store takes its place, and what it took
    /// goes to PostgreSQL once it is back.
    /// Call `store.prepare()` first, so that a database that is not ours is refused at start.
    @discardableResult
    public func withPostgresStore(_ store: FlagshipPostgresStore) -> FSConfigBuilder {
        withSharedStore(PostgresStoreProvider(store: store))
    }
}
#endif
