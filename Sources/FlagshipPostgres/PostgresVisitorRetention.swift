#if Postgres
import Flagship
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

extension FlagshipPostgresStore {
    /// The first key of the advisory lock a prune holds (the second is the environment's
    /// `hashtext`): "FSPR" in ASCII, apart from the migrator's.
    static let pruneLockClass: Int32 = 0x4653_5052

    /// The SDK's visitor retention on the fleet's store: deletes the environment's visitors not
    /// seen since `boundary` (unix ms), then the least recently seen beyond `maxVisitors`, each
    /// with its decisions, `batchSize` per statement (each its own transaction). One instance
    /// of the fleet prunes an environment at a time: the prune holds a session advisory lock
    /// (`pg_try_advisory_lock`) and returns `nil` at once when another instance holds it (the
    /// lock goes with its connection if that instance dies). `shouldContinue` is asked between
    /// batches. `transactions` counts the batches; `pagesReturned` is PostgreSQL's autovacuum's.
    /// `boundaryTakenAt`: the instance's time `boundary` was reckoned from, when it is not the
    /// database's; the boundary is then moved into the database's time (the rows' own).
    package func pruneVisitors(
        envId: String, notSeenSince boundary: Int64?, keepingAtMost maxVisitors: Int?, boundaryTakenAt: Int64? = nil,
        batchSize: Int = FlagshipDatabase.pruneBatchSize, shouldContinue: @escaping @Sendable () -> Bool = { true }
    ) async throws(FlagshipPostgresError) -> VisitorPrune? {
        try await ensurePrepared()
        let (client, logger, executor, location) = (client, logger, executor, self.location)
        let batch = max(1, batchSize)
        do {
            return try await withTaskExecutorPreference(executor) {
                try await client.withConnection { connection -> VisitorPrune? in
                    let locked = try await connection.query(
                        "SELECT pg_try_advisory_lock(\(Self.pruneLockClass), hashtext(\(envId)))", logger: logger
                    ).collect().first?.decode(Bool.self) ?? false
                    guard locked else { return nil }
                    var boundary = boundary
                    if let takenAt = boundaryTakenAt, let given = boundary {
                        let offset = try await DatabaseClockOffset().offset(on: connection, now: { takenAt }, location: location, logger: logger)
                        boundary = given.shifted(by: offset)
                    }
                    let visitors = PostgresVisitorStore(connection: connection, envId: envId, logger: logger)
                    do {
                        let prune = try await Self.prune(visitors, boundary: boundary, maxVisitors: maxVisitors, batch: batch,
                                                         shouldContinue: shouldContinue)
                        try await connection.query("SELECT pg_advisory_unlock(\(Self.pruneLockClass), hashtext(\(envId)))", logger: logger)
                        return prune
                    } catch {
                        // The connection goes back to the pool: its lock must not stay with it.
                        _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.pruneLockClass), hashtext(\(envId)))", logger: logger)
                        throw error
                    }
                }
            }
        } catch {
            throw FlagshipPostgresError(error, doing: "pruning the visitors not seen for the retention period")
        }
    }

    private static func prune(_ visitors: PostgresVisitorStore, boundary: Int64?, maxVisitors: Int?, batch: Int,
                              shouldContinue: @Sendable () -> Bool) async throws -> VisitorPrune {
        var prune = VisitorPrune()
        if let boundary {
            while shouldContinue(), !Task.isCancelled,
                  prune.add(try await visitors.deleteLeastRecentlySeen(notSeenSince: boundary, limit: batch), expired: true, batchSize: batch) {}
        }
        if let maxVisitors {
            while shouldContinue(), !Task.isCancelled,
                  prune.add(try await visitors.deleteLeastRecentlySeen(beyond: maxVisitors, limit: batch), expired: false, batchSize: batch) {}
        }
        return prune
    }
}

extension PostgresStoreProvider: SharedVisitorRetention {
    func pruneVisitors(envId: String, notSeenSince boundary: Int64?, keepingAtMost maxVisitors: Int?, now: Int64,
                       shouldContinue: @escaping @Sendable () -> Bool) async throws -> VisitorPrune? {
        // A store `prepare()` refused keeps nothing of this instance's: there is nothing to prune.
        guard store.refusal == nil else { return VisitorPrune() }
        return try await store.pruneVisitors(envId: envId, notSeenSince: boundary, keepingAtMost: maxVisitors, boundaryTakenAt: now,
                                             shouldContinue: shouldContinue)
    }
}
#endif
