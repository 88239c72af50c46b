#if Postgres
import Flagship
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// A visitor's hits written in the app's own PostgreSQL transaction.
extension FSVisitor {
    /// Writes a hit into the fleet's `flagship.hits` table through the app's own connection,
    /// inside the transaction the app holds on it (`withTransaction`): the hit commits with the
    /// app's rows, or rolls back with them. An order and its `FSTransaction` hit become one fact:
    /// a rolled-back order reports nothing, a committed one reaches Flagship even if this process
    /// dies the next instant, since any instance of the fleet sends it.
    ///
    /// The connection must be to the database of the SDK's store (``FlagshipPostgresStore``,
    /// given with `withPostgresStore`). The hit is checked as `sendHit` checks it, before
    /// anything is written: an invalid hit, a visitor without consent, panic mode, an SDK not
    /// started or without a PostgreSQL store throw `FlagshipError`, and the
    /// transaction is as it was. A statement that fails throws ``FlagshipPostgresError``: as any
    /// failed statement, it aborts the transaction, which `withTransaction` then rolls back.
    ///
    /// ```swift
    /// try await client.withTransaction(logger: logger) { connection in
    ///     try await connection.query("INSERT INTO shop.orders (id, total) VALUES (\(id), \(total))", logger: logger)
    ///     try await visitor.sendHit(FSTransaction(transactionId: id, affiliation: "checkout"),
    ///                               inTransactionOn: connection, logger: logger)
    /// }
    /// ```
    ///
    /// One more round trip, once a minute at most, measures PostgreSQL's clock against this
    /// instance's (the fleet's rows keep the database's time).
    public func sendHit<T: FSTrackingProtocol>(_ event: T, inTransactionOn connection: PostgresConnection, logger: Logger) async throws {
        let prepared = try hitForTransaction(event)
        guard let provider = prepared.sharedStore as? PostgresStoreProvider else {
            throw FlagshipError.hitNotWritten(FSCacheError(
                code: .notTheStore, path: nil,
                description: "the SDK keeps its hits in no PostgreSQL store (FSConfigBuilder.withPostgresStore): no instance would send a hit written there"))
        }
        let store = provider.store
        if let refusal = store.refusal {
            throw FlagshipError.hitNotWritten(FSCacheError(
                code: .notTheStore, path: nil,
                description: "the SDK does not use its PostgreSQL store (\(refusal)): no instance would send a hit written there"))
        }
        do {
            let offset = try await store.transactionClock.offset(on: connection, now: prepared.now, location: store.location, logger: logger)
            try await PostgresHitStore(connection: connection, envId: prepared.envId, logger: logger)
                .write([HitRecord(databaseTime: prepared.hit, offset: offset)])
        } catch {
            throw FlagshipPostgresError(error, doing: "writing a hit in the app's transaction")
        }
    }
}
#endif
