import Dispatch
import Flagship
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// The SDK's hit queue on PostgreSQL: the hits of every instance of a fleet in one table, claimed
/// with leases (`PostgresHitStore`), so that any live instance sends what a dead one acknowledged.
///
/// The tracking manager calls a hit queue from its own serial dispatch queue, never from a
/// thread of Swift's cooperative pool, and each call waits for its result there, as it waits for
/// SQLite's disk. Each call is bounded by `callTimeout`: past it, the call fails (the server is
/// away or the pool has no connection) and the tracking manager does what it does when the disk
/// fails: a hit it could not write waits in memory and is sent from there.
struct PostgresHitQueue: HitQueue {
    let client: PostgresClient
    let envId: String
    let owner: String
    let leaseMilliseconds: Int64
    let callTimeout: Duration
    let location: String
    let logger: Logger

    func save(_ cached: [CachedHit]) throws -> Int {
        let records = cached.map { cached in
            HitRecord(id: cached.hit.id, visitorId: cached.hit.visitorId, type: cached.hit.type,
                      isConsent: cached.hit.isConsentHit, document: cached.document, createdAt: cached.hit.createdAt)
        }
        try call("writing hits") { connection, envId, logger in
            try await PostgresHitStore(connection: connection, envId: envId, logger: logger).insert(records)
        }
        // The fleet's table has no cap of its own yet: nothing is evicted.
        return 0
    }

    func claim(_ endpoint: HitEndpoint, limit: Int, now: Int64) throws -> [OutgoingHit] {
        let (owner, until) = (owner, now.addingReportingOverflow(leaseMilliseconds))
        let records = try call("claiming hits") { connection, envId, logger in
            try await PostgresHitStore(connection: connection, envId: envId, logger: logger)
                .claim(endpoint, owner: owner, now: now, leaseUntil: until.overflow ? .max : until.partialValue, limit: limit)
        }
        return records.compactMap { record in
            if let hit = OutgoingHit(record: record) { return hit }
            // Not a document this SDK wrote: read it as a hit cache document, or leave it leased
            // (another instance takes it after the lease, and says the same).
            guard let document = try? HitCacheDocument(JSONValue(json: Data(record.document.utf8))) else {
                logger.error("A hit in the PostgreSQL store is not a hit cache document: it is left in place")
                return nil
            }
            return OutgoingHit(id: record.id, document: document)
        }
    }

    func settle(_ settlement: HitSettlement) throws {
        guard !settlement.isEmpty else { return }
        let owner = owner
        try call("recording what was sent") { connection, envId, logger in
            try await connection.withTransaction(logger: logger) { connection in
                let hits = PostgresHitStore(connection: connection, envId: envId, logger: logger)
                try await hits.delete(ids: settlement.delivered + settlement.rejected, owner: owner)
                try await hits.recordFailedAttempt(ids: settlement.failed, owner: owner, nextAttemptAt: settlement.nextAttemptAt)
            }
        }
    }

    func deleteExpired(createdBefore boundary: Int64) throws -> Int {
        try call("deleting expired hits") { connection, envId, logger in
            try await PostgresHitStore(connection: connection, envId: envId, logger: logger).deleteHits(createdBefore: boundary)
        }
    }

    func purge(visitorId: String, keeping: Set<String>) throws -> Int {
        try call("erasing a visitor's hits") { connection, envId, logger in
            try await PostgresHitStore(connection: connection, envId: envId, logger: logger).deleteHits(visitorId: visitorId, keeping: keeping)
        }
    }

    func count() throws -> Int {
        try call("counting hits") { connection, envId, logger in
            try await PostgresHitStore(connection: connection, envId: envId, logger: logger).count()
        }
    }

    func releaseClaims() throws {
        let owner = owner
        try call("releasing claims") { connection, envId, logger in
            try await PostgresHitStore(connection: connection, envId: envId, logger: logger).releaseClaims(owner: owner)
        }
    }

    /// Runs `work` on a connection of the pool and waits for it on this (dispatch) thread, for
    /// `callTimeout` at most. Past it the work is cancelled and left to end by itself: a call
    /// that waits for a lost connection may not answer its cancellation at once, and nothing
    /// here waits for it (its late outcome is dropped; a late insert makes a hit wait in both
    /// stores, sent twice at worst, never lost).
    @discardableResult
    private func call<T: Sendable>(
        _ what: String, _ work: @escaping @Sendable (PostgresConnection, String, Logger) async throws -> T
    ) throws(FSCacheError) -> T {
        let (client, envId, logger) = (client, envId, logger)
        let outcome = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task {
            let result: Result<T, any Error>
            do {
                result = .success(try await client.withConnection { try await work($0, envId, logger) })
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        // The tracking store's serial queue: a dispatch thread, not one of the cooperative pool.
        guard done.wait(timeout: .now() + FlagshipPostgresStore.seconds(callTimeout)) == .success, let result = outcome.withLock({ $0 }) else {
            task.cancel()
            throw FSCacheError(code: .unreachable, path: nil, description: "\(what): no answer from \(location) within \(callTimeout)")
        }
        switch result {
        case .success(let value):
            return value
        case .failure(let error):
            let reason = FlagshipPostgresError(error, doing: what)
            throw FSCacheError(code: reason.code == .unreachable ? .unreachable : .other, path: nil, description: reason.description)
        }
    }
}

/// Gives the SDK its hit queue on the store.
struct PostgresHitQueueProvider: HitQueueProvider {
    let store: FlagshipPostgresStore

    func hitQueue(envId: String, leaseDuration: TimeInterval, local: any HitQueue, now: @escaping @Sendable () -> Int64,
                  logger: Logger) -> any HitQueue {
        let shared = PostgresHitQueue(client: store.client, envId: envId, owner: store.instanceName,
                                      leaseMilliseconds: Int64((leaseDuration * 1000).rounded()), callTimeout: store.callTimeout,
                                      location: store.location, logger: logger)
        return SpillingHitQueue(primary: shared, spill: local, retryAfter: store.retryAfter, logger: logger, now: now)
    }
}

extension FSConfigBuilder {
    /// Keeps the SDK's hits in `store`, a PostgreSQL database shared by every instance: an
    /// acknowledged hit (`try await sendHit`) is committed there, and any live instance sends it.
    /// Call `store.prepare()` first, so that a database that is not ours is refused at start.
    @discardableResult
    public func withPostgresStore(_ store: FlagshipPostgresStore) -> FSConfigBuilder {
        withHitQueueProvider(PostgresHitQueueProvider(store: store))
    }
}
