#if Postgres
import Flagship
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

extension FlagshipPostgresStore {
    /// Everything the fleet's store holds for one visitor of `envId`, for an access request: its
    /// document, its decisions and its waiting hits, read in one read-only snapshot. What an
    /// instance's local file still holds for it (while PostgreSQL was away) is in that file:
    /// `Flagship.visitorData(visitorId:)` on an instance reads both.
    ///
    /// ```swift
    /// let data = try await store.visitorData(envId: "my-env", visitorId: "alice")
    /// ```
    public func visitorData(envId: String, visitorId: String) async throws(FlagshipPostgresError) -> FSVisitorData {
        FSVisitorData(try await visitorDataRecords(envId: envId, visitorId: visitorId))
    }

    package func visitorDataRecords(envId: String, visitorId: String) async throws(FlagshipPostgresError) -> VisitorDataRecords {
        try await ensurePrepared()
        let (client, logger, executor) = (client, logger, executor)
        do {
            return try await withTaskExecutorPreference(executor) {
                try await client.withConnection { connection in
                    try await connection.query("START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
                    do {
                        let records = try await Self.visitorData(on: connection, envId: envId, visitorId: visitorId, logger: logger)
                        try await connection.query("COMMIT", logger: logger)
                        return records
                    } catch {
                        _ = try? await connection.query("ROLLBACK", logger: logger)
                        throw error
                    }
                }
            }
        } catch {
            throw FlagshipPostgresError(error, doing: "reading what is kept for a visitor")
        }
    }

    /// The visitor's rows, read on `connection` (in the caller's transaction). Also what
    /// `flagship export --db postgres://` reads, in its read-only inspection.
    package static func visitorData(on connection: PostgresConnection, envId: String, visitorId: String,
                                    logger: Logger) async throws -> VisitorDataRecords {
        var records = VisitorDataRecords.nothing(for: visitorId)
        for try await (id, anonymousId, consent, document, updatedAt, lastSeenAt) in try await connection.query("""
            SELECT visitor_id, anonymous_id, consent, document, updated_at, COALESCE(last_seen_at, updated_at)
            FROM flagship.visitors WHERE env_id = \(envId) AND visitor_id = \(visitorId)
            """, logger: logger).decode((String, String?, Bool, String, Int64, Int64).self) {
            records.visitor = VisitorRecord(visitorId: id, anonymousId: anonymousId, consent: consent, document: document, updatedAt: updatedAt)
            records.lastSeenAt = lastSeenAt
        }
        for try await (decidedAt, source, fileVersion, context, assignments) in try await connection.query("""
            SELECT decided_at, source, file_version, context, assignments FROM flagship.decisions
            WHERE env_id = \(envId) AND visitor_id = \(visitorId) ORDER BY decided_at, id
            """, logger: logger).decode((Int64, String, String?, String?, String).self) {
            guard let source = DecisionRecord.Source(rawValue: source),
                  let decisions = try? DecisionRecordStore.records(visitorId: visitorId, decidedAt: decidedAt, source: source,
                                                                   fileVersion: fileVersion, context: context, assignments: assignments)
            else {
                records.unreadableRows += 1
                continue
            }
            records.decisions += decisions
        }
        for try await row in try await connection.query("""
            SELECT \(unescaped: PostgresHitRow.selectList())
            FROM flagship.hits WHERE env_id = \(envId) AND visitor_id = \(visitorId) ORDER BY created_at, id
            """, logger: logger) {
            records.hits.append(try PostgresHitRow.record(row))
        }
        return records
    }
}

extension PostgresStoreProvider: SharedVisitorData {
    func visitorData(envId: String, visitorId: String) async throws -> VisitorDataRecords {
        // A store `prepare()` refused keeps nothing of this instance's.
        guard store.refusal == nil else {
            return VisitorDataRecords.nothing(for: visitorId)
        }
        return try await store.visitorDataRecords(envId: envId, visitorId: visitorId)
    }
}
#endif
