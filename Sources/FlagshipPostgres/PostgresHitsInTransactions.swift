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
    /// given with `withPostgresStore`), inside a transaction. The hit is checked as `sendHit`
    /// checks it, before anything is written: an invalid hit, a visitor without consent, panic
    /// mode, an SDK not started or without a PostgreSQL store throw `FlagshipError`, and the
    /// transaction is as it was. So do a connection that holds no transaction
    /// (`FlagshipError.hitNotWritten` with code `notInTransaction`: the hit would commit alone
    /// and be sent even if the app then gave up its order) and one to another database, even one
    /// with a `flagship` schema of its own (code `notTheStore`: no instance would send it). The
    /// database is told by its name and the time its `flagship` schema was first migrated, read once
    /// per connection. The hit is written under a savepoint: a statement of it that fails throws
    /// ``FlagshipPostgresError`` and is rolled back to the savepoint, so the app's transaction
    /// goes on as it was.
    ///
    /// ```swift
    /// try await client.withTransaction(logger: logger) { connection in
    ///     try await connection.query("INSERT INTO shop.orders (id, total) VALUES (\(id), \(total))", logger: logger)
    ///     try await visitor.sendHit(FSTransaction(transactionId: id, affiliation: "checkout"),
    ///                               inTransactionOn: connection, logger: logger)
    /// }
    /// ```
    ///
    /// Round trips: the savepoint and its release, the insert, and, once per connection, the
    /// database's identity (two); once a minute at most, one more measures PostgreSQL's clock
    /// against this instance's (the fleet's rows keep the database's time).
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
        // Admission, as for every hit: refused at once under this instance's backpressure.
        _ = try prepared.tracking.admitInTransaction()
        // Outside a transaction block PostgreSQL refuses a savepoint (25P01): the hit would
        // otherwise commit on its own, whatever the app then does with its rows.
        do {
            try await connection.query("SAVEPOINT flagship_hit", logger: logger)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "25P01" {
            throw FlagshipError.hitNotWritten(FSCacheError(
                code: .notInTransaction, path: nil,
                description: "the connection holds no transaction (BEGIN, or withTransaction): the hit would commit alone, whatever becomes of the app's rows"))
        } catch {
            throw FlagshipPostgresError(error, doing: "writing a hit in the app's transaction")
        }
        // From here, whatever fails goes back to the savepoint: the app's transaction is as it was.
        do {
            let (ours, theirs) = (try await store.identity(logger: logger), try await store.transactionIdentities.identity(of: connection, logger: logger))
            guard ours == theirs else {
                try await connection.query("ROLLBACK TO SAVEPOINT flagship_hit", logger: logger)
                throw FlagshipError.hitNotWritten(FSCacheError(
                    code: .notTheStore, path: nil,
                    description: "the connection reaches \(theirs), not the SDK's store (\(ours)): no instance would send a hit written there"))
            }
            let offset = try await store.transactionClock.offset(on: connection, now: prepared.now, location: store.location, logger: logger)
            try await PostgresHitStore(connection: connection, envId: prepared.envId, logger: logger)
                .write([HitRecord(prepared.hit.shiftingTimes(by: offset))])
            try await connection.query("RELEASE SAVEPOINT flagship_hit", logger: logger)
        } catch let error as FlagshipError {
            throw error
        } catch {
            _ = try? await connection.query("ROLLBACK TO SAVEPOINT flagship_hit", logger: logger)
            throw FlagshipPostgresError(error, doing: "writing a hit in the app's transaction")
        }
    }
}
#endif
