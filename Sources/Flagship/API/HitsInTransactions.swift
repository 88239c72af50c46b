import FlagshipStore
import Foundation

extension FSVisitor {
    /// Writes a hit into the SDK's SQLite store through the app's own connection to that file,
    /// inside the transaction the app holds on it: the hit commits with the app's rows, or rolls
    /// back with them. An order and its `FSTransaction` hit become one fact.
    ///
    /// `connection` is a `sqlite3 *` the app opened on the SDK's store file (its path is
    /// `FSConfigBuilder.withCacheFile`'s, or `flagship-<env id>.sqlite` in the cache directory), with a
    /// busy timeout and a transaction begun (`BEGIN IMMEDIATE`). Any SQLite library that gives
    /// its handle works (`sqlite3_open_v2` itself, GRDB's `sqliteConnection`, SQLite.swift's
    /// `handle`). The app's tables live in the same file beside the SDK's.
    ///
    /// The hit is checked as `sendHit` checks it, before anything is written: an invalid hit, a
    /// visitor without consent, panic mode or an SDK not started throw, and the transaction is
    /// as it was. So do a connection that holds no transaction, reads another file or cannot
    /// write (``FlagshipError/hitNotWritten(_:)``, codes `notInTransaction`, `notTheStore`,
    /// `readOnly`), and a write SQLite refuses (`locked`, `diskFull`...). The SDK's
    /// sender finds a committed hit at its next batch interval (or at the next start, after a
    /// crash) and delivers it once; a rolled-back one never existed.
    ///
    /// Admission is the rule of every hit (see Hits and delivery): while the events endpoint
    /// answers, a backlog at half the cap refuses the hit with ``FlagshipError/overloaded(backlog:waited:)``
    /// at once, nothing written (the app's write lock is not held to wait for room), and no hit
    /// already taken is evicted for it; while sends fail (an outage), the cap evicts the oldest
    /// unsent hits, as for the SDK's own writes.
    ///
    /// It runs on the caller's thread, as the app's own statements on that connection do: it
    /// takes none of the SDK's locks and waits on no I/O but that connection's.
    ///
    /// ```swift
    /// try execute(db, "BEGIN IMMEDIATE")
    /// try execute(db, "INSERT INTO orders (id, total) VALUES ('o-1', 42.5)")
    /// try visitor.sendHit(FSTransaction(transactionId: "o-1", affiliation: "checkout"), inTransactionOn: db)
    /// try execute(db, "COMMIT")
    /// ```
    public func sendHit<T: FSTrackingProtocol>(_ event: T, inTransactionOn connection: OpaquePointer) throws(FlagshipError) {
        let prepared = try hitForTransaction(event)
        guard let queue = prepared.queue as? SQLiteHitQueue, prepared.sharedStore == nil else {
            let reason = prepared.sharedStore != nil
                ? "the SDK keeps its hits in a shared store (PostgreSQL): write the hit in a transaction of that database"
                : "the SDK keeps no store file (an in-memory store, or the app's own hit cache)"
            throw .hitNotWritten(FSCacheError(code: .notTheStore, path: nil, description: reason))
        }
        try prepared.tracking.admitInTransaction { evictAtCap, refuseFrom throws(FlagshipError) in
            do throws(SQLiteHitQueue.TransactionalWrite) {
                let evicted = try queue.write(prepared.hit, inTransactionOn: connection, evictAtCap: evictAtCap, refuseFrom: refuseFrom)
                // Aged from now if it commits; an entry of a rolled-back one is forgotten in time.
                prepared.tracking.ages.noteAccepted(prepared.hit.id)
                if evicted > 0 { logger.warning("Hit cache full while hits cannot be sent: a hit written in the app's transaction evicts the \(evicted) oldest unsent hit(s) if that transaction commits") }
            } catch {
                switch error {
                case .refused: throw .overloaded(backlog: refuseFrom ?? 0, waited: 0)
                case .failed(let error): throw .hitNotWritten(error)
                }
            }
        }
    }
}

/// A hit checked and made for a visitor, to be written in the app's own transaction, with where
/// the SDK keeps its hits.
package struct HitForTransaction: Sendable {
    package let hit: OutgoingHit
    let queue: any HitQueue
    package let envId: String
    package let sharedStore: (any SharedStoreProvider)?
    /// The SDK's clock (unix ms), which dated the hit.
    package let now: @Sendable () -> Int64
    /// Its admission: backpressure and the cap, as for every hit.
    package let tracking: TrackingManager
}
