#if Postgres
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// `flagship.visitors` of one environment through one connection: the visitor cache documents,
/// with the assignment history that keeps a visitor's variation on every instance. Runs in the
/// caller's transaction, if it holds one.
struct PostgresVisitorStore {
    let connection: PostgresConnection
    let envId: String
    let logger: Logger

    /// Writes the documents in one statement; a visitor's newer document replaces its row, an
    /// older one (an instance that was slower to write) does not.
    func save(_ records: [VisitorRecord]) async throws {
        guard !records.isEmpty else { return }
        try await save(records, withHits: [])
    }

    /// The documents and `hits` in one statement (a data-modifying `WITH`): one round trip, one
    /// transaction, what a group commit of the SDK carries.
    func save(_ records: [VisitorRecord], withHits hits: [HitRecord]) async throws {
        // One row per visitor in a statement (ON CONFLICT may not touch a row twice): the newest.
        // postgres-nio binds no array of optionals: no anonymous id travels as "" (never an id).
        let newest = Dictionary(records.map { ($0.visitorId, $0) }) { $0.updatedAt > $1.updatedAt ? $0 : $1 }.values
        // Every record's decisions (each an assignment made once), a row per fetch, as in SQLite.
        // Optional text travels as "".
        let fetches = DecisionRecordStore.fetches(records.flatMap(\.decisions))
        let firsts = fetches.map { $0[$0.startIndex] }
        try await connection.query("""
            WITH decided AS (
                INSERT INTO flagship.decisions (env_id, visitor_id, decided_at, source, file_version, context, assignments)
                SELECT \(envId), v, t, s, NULLIF(f, ''), NULLIF(x, ''), a
                FROM unnest(\(firsts.map(\.visitorId))::text[], \(firsts.map(\.decidedAt))::bigint[],
                            \(firsts.map(\.source.rawValue))::text[], \(firsts.map { $0.fileVersion ?? "" })::text[],
                            \(firsts.map { $0.context ?? "" })::text[], \(fetches.map(DecisionRecordStore.assignmentsJSON))::text[])
                     AS d(v, t, s, f, x, a)
            ), saved AS (
                INSERT INTO flagship.visitors (env_id, visitor_id, anonymous_id, consent, document, updated_at, last_seen_at)
                SELECT \(envId), v, NULLIF(a, ''), c, d, u, u
                FROM unnest(\(newest.map(\.visitorId))::text[], \(newest.map { $0.anonymousId ?? "" })::text[],
                            \(newest.map(\.consent))::bool[], \(newest.map(\.document))::text[],
                            \(newest.map(\.updatedAt))::bigint[]) AS t(v, a, c, d, u)
                ON CONFLICT (env_id, visitor_id) DO UPDATE
                SET anonymous_id = excluded.anonymous_id, consent = excluded.consent,
                    document = excluded.document, updated_at = excluded.updated_at,
                    last_seen_at = GREATEST(COALESCE(flagship.visitors.last_seen_at, flagship.visitors.updated_at), excluded.last_seen_at)
                WHERE flagship.visitors.updated_at <= excluded.updated_at
            )
            INSERT INTO flagship.hits (env_id, id, visitor_id, type, is_consent, document, created_at, file_version, decided_at)
            SELECT \(envId), i, v, t, c, d, a, NULLIF(f, ''), NULLIF(w, -1)
            FROM unnest(\(hits.map(\.id))::text[], \(hits.map(\.visitorId))::text[],
                        \(hits.map(\.type))::text[], \(hits.map(\.isConsent))::bool[],
                        \(hits.map(\.document))::text[], \(hits.map(\.createdAt))::bigint[],
                        \(hits.map { $0.fileVersion ?? "" })::text[], \(hits.map { $0.decidedAt ?? -1 })::bigint[])
                 AS h(i, v, t, c, d, a, f, w)
            ON CONFLICT (env_id, id) DO NOTHING
            """, logger: logger)
    }

    /// The visitor's row. `seenAt` (unix ms): a lookup, which records itself as the visitor's
    /// last sighting when the row's is older than `VisitorSightings.defaultResolutionMilliseconds`,
    /// in the same statement (one round trip; a write at most once an hour per visitor), so that
    /// a returning visitor whose document does not change is not pruned.
    func visitor(id visitorId: String, seenAt now: Int64? = nil) async throws -> VisitorRecord? {
        let rows: PostgresRowSequence
        if let now {
            rows = try await connection.query("""
                WITH seen AS (
                    UPDATE flagship.visitors SET last_seen_at = \(now)
                    WHERE env_id = \(envId) AND visitor_id = \(visitorId)
                      AND COALESCE(last_seen_at, updated_at) <= \(now - VisitorSightings.defaultResolutionMilliseconds)
                )
                SELECT visitor_id, anonymous_id, consent, document, updated_at FROM flagship.visitors
                WHERE env_id = \(envId) AND visitor_id = \(visitorId)
                """, logger: logger)
        } else {
            rows = try await connection.query("""
                SELECT visitor_id, anonymous_id, consent, document, updated_at FROM flagship.visitors
                WHERE env_id = \(envId) AND visitor_id = \(visitorId)
                """, logger: logger)
        }
        for try await (id, anonymousId, consent, document, updatedAt) in rows.decode((String, String?, Bool, String, Int64).self) {
            return VisitorRecord(visitorId: id, anonymousId: anonymousId, consent: consent, document: document, updatedAt: updatedAt)
        }
        return nil
    }

    // MARK: Retention

    /// Deletes, least recently seen first, at most `limit` visitors not seen since `boundary`
    /// (unix ms), with their decisions, in one statement (one transaction).
    func deleteLeastRecentlySeen(notSeenSince boundary: Int64, limit: Int) async throws -> VisitorsDeleted {
        try await deleteLeastRecentlySeen(notSeenSince: boundary, beyond: nil, limit: limit)
    }

    /// Deletes, least recently seen first, at most `limit` of the environment's visitors beyond
    /// the newest `keeping`, with their decisions.
    func deleteLeastRecentlySeen(beyond keeping: Int, limit: Int) async throws -> VisitorsDeleted {
        try await deleteLeastRecentlySeen(notSeenSince: .max, beyond: keeping, limit: limit)
    }

    /// One batch of a prune: the least recently seen visitors last seen before `boundary`, at
    /// most `limit` and, with `keeping`, no more than are beyond it (the environment's count is
    /// read only then), deleted with their decisions. Rows another transaction holds (a group
    /// commit writing that visitor) are skipped, left for the next prune.
    private func deleteLeastRecentlySeen(notSeenSince boundary: Int64, beyond keeping: Int?, limit: Int) async throws -> VisitorsDeleted {
        let rows = try await connection.query("""
            WITH chosen AS (
                SELECT visitor_id FROM flagship.visitors
                WHERE env_id = \(envId) AND COALESCE(last_seen_at, updated_at) < \(boundary)
                ORDER BY COALESCE(last_seen_at, updated_at)
                LIMIT CASE WHEN \(keeping ?? -1) < 0 THEN \(max(0, limit))
                           ELSE GREATEST(0, LEAST(\(max(0, limit)),
                                                  (SELECT count(*) FROM flagship.visitors WHERE env_id = \(envId)) - \(keeping ?? 0)))
                      END
                FOR UPDATE SKIP LOCKED
            ), forgotten AS (
                DELETE FROM flagship.decisions d USING chosen c
                WHERE d.env_id = \(envId) AND d.visitor_id = c.visitor_id RETURNING 1
            ), gone AS (
                DELETE FROM flagship.visitors v USING chosen c
                WHERE v.env_id = \(envId) AND v.visitor_id = c.visitor_id RETURNING 1
            )
            SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM forgotten)
            """, logger: logger)
        for try await (visitors, decisions) in rows.decode((Int64, Int64).self) {
            return VisitorsDeleted(visitors: Int(visitors), decisionRows: Int(decisions))
        }
        return VisitorsDeleted()
    }

    /// Consent withdrawn: the visitor's row and its waiting hits, its consent hits and `keeping`
    /// (hits being sent right now) excepted, go in one statement, so that no instance ever sees
    /// one without the other. Returns the hits deleted.
    @discardableResult
    ///
    /// `writtenUpTo` (unix ms): an erasure carried out late (PostgreSQL was away when consent was
    /// withdrawn) spares what was written after the withdrawal: a newer document, later
    /// decisions and hits (consent given again meanwhile).
    func erase(visitorId: String, keepingHits keeping: Set<String> = [], writtenUpTo: Int64? = nil) async throws -> Int {
        let limit = writtenUpTo ?? .max
        let rows = try await connection.query("""
            WITH gone AS (DELETE FROM flagship.visitors WHERE env_id = \(envId) AND visitor_id = \(visitorId) AND updated_at <= \(limit)),
                 forgotten AS (DELETE FROM flagship.decisions WHERE env_id = \(envId) AND visitor_id = \(visitorId) AND decided_at <= \(limit))
            DELETE FROM flagship.hits
            WHERE env_id = \(envId) AND visitor_id = \(visitorId) AND NOT is_consent AND NOT (id = ANY(\(Array(keeping))::text[]))
              AND created_at <= \(limit)
            RETURNING 1
            """, logger: logger).collect()
        return rows.count
    }
}

/// `flagship.bucketing`: the environment's last bucketing file, byte for byte, shared by the fleet.
struct PostgresBucketingStore {
    let connection: PostgresConnection
    let logger: Logger

    /// Keeps `record` unless a newer download is stored already.
    func save(_ record: BucketingRecord) async throws {
        try await connection.query("""
            INSERT INTO flagship.bucketing (env_id, document, last_modified, downloaded_at)
            VALUES (\(record.envId), \(record.document), \(record.lastModified), \(record.downloadedAt))
            ON CONFLICT (env_id) DO UPDATE
            SET document = excluded.document, last_modified = excluded.last_modified, downloaded_at = excluded.downloaded_at
            WHERE flagship.bucketing.downloaded_at <= excluded.downloaded_at
            """, logger: logger)
    }

    /// Records that `version` is in use (decision provenance), then deletes the environment's
    /// versions beyond the newest `keeping` by last use, in one statement.
    func keep(_ version: BucketingFileVersion, keeping: Int) async throws {
        try await connection.query("""
            WITH used AS (
                INSERT INTO flagship.bucketing_files (env_id, version, document, origin, first_used_at, last_used_at)
                VALUES (\(version.envId), \(version.version), \(version.document), \(version.origin.rawValue),
                        \(version.firstUsedAt), \(version.lastUsedAt))
                ON CONFLICT (env_id, version) DO UPDATE
                SET last_used_at = greatest(flagship.bucketing_files.last_used_at, excluded.last_used_at)
                RETURNING version, last_used_at
            )
            DELETE FROM flagship.bucketing_files
            WHERE env_id = \(version.envId) AND version NOT IN (SELECT version FROM used) AND version NOT IN (
                SELECT version FROM flagship.bucketing_files WHERE env_id = \(version.envId)
                ORDER BY last_used_at DESC, version LIMIT \(max(1, keeping) - 1))
            """, logger: logger)
    }

    func file(envId: String) async throws -> BucketingRecord? {
        let rows = try await connection.query("""
            SELECT document, last_modified, downloaded_at FROM flagship.bucketing WHERE env_id = \(envId)
            """, logger: logger)
        for try await (document, lastModified, downloadedAt) in rows.decode((String, String?, Int64).self) {
            return BucketingRecord(envId: envId, document: document, lastModified: lastModified, downloadedAt: downloadedAt)
        }
        return nil
    }
}
#endif
