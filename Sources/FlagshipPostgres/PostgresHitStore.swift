#if Postgres
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// The `flagship.hits` table of one environment, through one connection: what the SQLite
/// `HitRecordStore` does, for a fleet. Several instances claim from the same table at once:
/// a claim takes the oldest rows nobody holds (`FOR UPDATE SKIP LOCKED`, so concurrent claims
/// never wait for each other nor take the same row) and leases them; a lease that lapses (its
/// instance died mid-send) gives the rows to whoever claims next.
///
/// No method opens a transaction: each runs in the caller's, if it holds one, so that several
/// compose into one commit.
///
/// ```swift
/// try await connection.withTransaction(logger: logger) { connection in
///     let hits = PostgresHitStore(connection: connection, envId: "env", logger: logger)
///     let page = try await hits.claim(.events, owner: me, now: now, leaseUntil: now + 60_000, limit: 100)
///     try await hits.settle(done: delivered, failed: failed, owner: me, nextAttemptAt: retryAt)
/// }
/// ```
struct PostgresHitStore {
    let connection: PostgresConnection
    let envId: String
    let logger: Logger

    /// Inserts the rows in one statement (arrays unnested server-side); a row whose id is
    /// already there is left as it is (a retried insert is harmless). Returns how many were new.
    @discardableResult
    func insert(_ records: [HitRecord]) async throws -> Int {
        guard !records.isEmpty else { return 0 }
        var counting = insertion(records)
        counting.sql += " RETURNING 1"
        return try await connection.query(counting, logger: logger).collect().count
    }

    /// As `insert(_:)`, without counting: what a group commit needs, one round trip.
    func write(_ records: [HitRecord]) async throws {
        guard !records.isEmpty else { return }
        try await connection.query(insertion(records), logger: logger)
    }

    /// The hits' insert, an activate's provenance with it (no version travels as "", no time as -1).
    private func insertion(_ records: [HitRecord]) -> PostgresQuery {
        """
        INSERT INTO flagship.hits (env_id, id, visitor_id, type, is_consent, document, created_at, file_version, decided_at)
        SELECT \(envId), i, v, t, c, d, a, NULLIF(f, ''), NULLIF(w, -1)
        FROM unnest(\(records.map(\.id))::text[], \(records.map(\.visitorId))::text[],
                    \(records.map(\.type))::text[], \(records.map(\.isConsent))::bool[],
                    \(records.map(\.document))::text[], \(records.map(\.createdAt))::bigint[],
                    \(records.map { $0.fileVersion ?? "" })::text[], \(records.map { $0.decidedAt ?? -1 })::bigint[])
             AS h(i, v, t, c, d, a, f, w)
        ON CONFLICT (env_id, id) DO NOTHING
        """
    }

    /// Leases up to `limit` of the endpoint's oldest rows that nobody holds and whose backoff
    /// has ended (or, `throughBackoff`, whatever their backoff: a replay sends now), to `owner`
    /// until `leaseUntil`; returns them oldest first. The rows are chosen
    /// once, in a materialized CTE: as a subquery in FROM, a nested-loop plan may scan it again
    /// per row, and each rescan skips the rows this statement already locked and takes the next
    /// ones, claiming more than `limit` (seen once the table had more columns).
    func claim(_ endpoint: HitEndpoint, owner: String, now: Int64, leaseUntil: Int64, limit: Int,
               throughBackoff: Bool = false) async throws -> [HitRecord] {
        let activate = endpoint == .activate
        var claimed: [HitRecord] = []
        let rows = try await connection.query("""
            WITH free AS MATERIALIZED (
                SELECT id FROM flagship.hits
                WHERE env_id = \(envId) AND (type = 'ACTIVATE') = \(activate)
                  AND (lease_until IS NULL OR lease_until <= \(now))
                  AND (\(throughBackoff) OR next_attempt_at IS NULL OR next_attempt_at <= \(now))
                ORDER BY created_at, id
                LIMIT \(max(0, limit))
                FOR UPDATE SKIP LOCKED)
            UPDATE flagship.hits h SET lease_owner = \(owner), lease_until = \(leaseUntil)
            FROM free
            WHERE h.env_id = \(envId) AND h.id = free.id
            RETURNING \(unescaped: PostgresHitRow.selectList(of: "h"))
            """, logger: logger)
        for try await row in rows {
            claimed.append(try PostgresHitRow.record(row))
        }
        // RETURNING gives no order: put the claim back in sending order.
        return claimed.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    /// Keeps rows that cannot be sent (a document that is not a hit cache document: edited, or
    /// written by another program) out of every claim, as the SQLite store does: a lease that
    /// never lapses (`HitRecordStore.deadLetterUntil`) whose owner says why. Never sent, never
    /// silently lost: listed by `flagship hits`, counted by `db inspect`, deleted by expiry.
    @discardableResult
    func setAside(ids: [String], reason: String) async throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try await connection.query("""
            UPDATE flagship.hits SET lease_owner = \("dead letter: " + reason), lease_until = \(HitRecordStore.deadLetterUntil)
            WHERE env_id = \(envId) AND id = ANY(\(ids)::text[])
            RETURNING 1
            """, logger: logger).collect().count
    }

    /// What became of a page `owner` sent, in one statement: `done` (delivered, or refused for
    /// good) deleted, `failed` counted and released, none claimed again by any instance before
    /// `nextAttemptAt` (the fleet backs off together). Only rows `owner` still holds change: a
    /// row whose lease lapsed and that another instance claimed is that instance's to settle.
    /// Returns how many were deleted.
    @discardableResult
    func settle(done: [String], failed: [String] = [], owner: String, nextAttemptAt: Int64? = nil) async throws -> Int {
        guard !done.isEmpty || !failed.isEmpty else { return 0 }
        return try await connection.query("""
            WITH failed AS (
                UPDATE flagship.hits
                SET attempts = attempts + 1, next_attempt_at = \(nextAttemptAt), lease_owner = NULL, lease_until = NULL
                WHERE env_id = \(envId) AND id = ANY(\(failed)::text[]) AND lease_owner = \(owner)
            )
            DELETE FROM flagship.hits
            WHERE env_id = \(envId) AND id = ANY(\(done)::text[]) AND lease_owner = \(owner)
            RETURNING 1
            """, logger: logger).collect().count
    }

    /// Ends `owner`'s leases without counting an attempt (a sender that stopped before sending).
    @discardableResult
    func releaseClaims(owner: String, ids: [String]? = nil) async throws -> Int {
        guard let ids else {
            return try await connection.query("""
                UPDATE flagship.hits SET lease_owner = NULL, lease_until = NULL
                WHERE env_id = \(envId) AND lease_owner = \(owner)
                RETURNING 1
                """, logger: logger).collect().count
        }
        return try await connection.query("""
            UPDATE flagship.hits SET lease_owner = NULL, lease_until = NULL
            WHERE env_id = \(envId) AND lease_owner = \(owner) AND id = ANY(\(ids)::text[])
            RETURNING 1
            """, logger: logger).collect().count
    }

    /// Deletes the hits created before `boundary` (unix ms): expiry. Returns how many.
    @discardableResult
    func deleteHits(createdBefore boundary: Int64) async throws -> Int {
        try await connection.query("""
            DELETE FROM flagship.hits WHERE env_id = \(envId) AND created_at < \(boundary) RETURNING 1
            """, logger: logger).collect().count
    }

    /// Consent withdrawn: a visitor's hits but its consent hits and `keeping` (accepted after
    /// the withdrawal). Returns how many went.
    @discardableResult
    func deleteHits(visitorId: String, keeping: Set<String>) async throws -> Int {
        try await connection.query("""
            DELETE FROM flagship.hits
            WHERE env_id = \(envId) AND visitor_id = \(visitorId) AND NOT is_consent AND NOT (id = ANY(\(Array(keeping))::text[]))
            RETURNING 1
            """, logger: logger).collect().count
    }

    /// How many hits of the environment wait.
    /// The environment's rows, counted up to `limit` (at most `limit`): a check against a cap
    /// reads no more of a long table than the cap.
    func count(upTo limit: Int) async throws -> Int {
        let rows = try await connection.query("""
            SELECT count(*) FROM (SELECT 1 FROM flagship.hits WHERE env_id = \(envId) LIMIT \(max(0, limit))) AS up_to_the_limit
            """, logger: logger).collect()
        return Int(try rows.first?.decode(Int64.self) ?? 0)
    }

    /// The first key of the transaction advisory lock an eviction holds (the second is the
    /// environment's `hashtext`): "FSHC" in ASCII, apart from the prune's and the migrator's.
    static let capLockClass: Int32 = 0x4653_4843

    /// Deletes the environment's oldest rows (by `created_at`, then id) so that at most
    /// `capacity` remain, and returns exactly how many went. A row leased at `now` (in flight at
    /// an instance) is never deleted, nor a row another transaction holds, so the table may stay
    /// above `capacity` by those. One instance evicts an environment at a time: run it in a
    /// transaction; when another holds the environment's eviction lock, this returns 0 at once
    /// (that one removes the excess).
    func evictOldest(beyond capacity: Int, now: Int64) async throws -> Int {
        let capacity = max(0, capacity)
        guard try await count(upTo: capacity + 1) > capacity else { return 0 }
        let locked = try await connection.query(
            "SELECT pg_try_advisory_xact_lock(\(Self.capLockClass), hashtext(\(envId)))", logger: logger
        ).collect().first?.decode(Bool.self) ?? false
        guard locked else { return 0 }
        let total = try await count()
        guard total > capacity else { return 0 }
        return try await connection.query("""
            WITH doomed AS MATERIALIZED (
                SELECT id FROM flagship.hits
                WHERE env_id = \(envId) AND (lease_until IS NULL OR lease_until <= \(now))
                ORDER BY created_at, id
                LIMIT \(total - capacity)
                FOR UPDATE SKIP LOCKED)
            DELETE FROM flagship.hits h USING doomed
            WHERE h.env_id = \(envId) AND h.id = doomed.id
            RETURNING 1
            """, logger: logger).collect().count
    }

    func count() async throws -> Int {
        let rows = try await connection.query("SELECT count(*) FROM flagship.hits WHERE env_id = \(envId)", logger: logger).collect()
        return Int(try rows.first?.decode(Int64.self) ?? 0)
    }
}
#endif
