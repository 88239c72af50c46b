#if Postgres
import Flagship
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// A look into a PostgreSQL store that never writes, for `flagship db inspect`, `visitors`,
/// `hits` and `replay`:
/// - a connection of its own, not the pool's (the pool retries refused credentials for as long
///   as it runs, where this says why at once), given `timeout` to connect;
/// - every read in one `REPEATABLE READ, READ ONLY` transaction, rolled back at the end: the
///   counts come from one snapshot, and the server refuses any write in it;
/// - the schema checked first, without migrating: a database without our `flagship` schema,
///   with another application's, or with a newer version is refused (nothing is created).
///
/// ```swift
/// let hits = try await PostgresInspection.read(location) { try await $0.hitCount(envId: "env") }
/// ```
package struct PostgresInspection: Sendable {
    /// The `flagship` schema as found: its version and history.
    package struct Schema: Sendable, Equatable {
        package var version: Int
        /// The newest version this build knows.
        package var latestKnown: Int
        package var migrations: [AppliedMigration]
        /// Why the SDK would refuse this history although this build can read it (a step
        /// recorded under another name or checksum); `nil` when it is this build's.
        package var historyProblem: String?
    }

    /// One row of `flagship.schema_migrations`.
    package struct AppliedMigration: Sendable, Equatable {
        package var version: Int
        package var name: String
        package var checksum: String
        /// Unix milliseconds.
        package var appliedAt: Int64
    }

    /// What one environment's rows hold, in counts.
    package struct EnvironmentSummary: Sendable, Equatable {
        package var envId: String
        package var visitorCount = 0
        package var hitCount = 0
        package var hitCountByType: [String: Int] = [:]
        /// Hits an instance holds a live lease on: being sent right now.
        package var claimedHitCount = 0
        /// Hits set aside as dead letters: never sent (`flagship hits` says why).
        package var deadLetterCount = 0
        /// Hits that failed and wait for their next try (`next_attempt_at` ahead).
        package var backingOffHitCount = 0
        /// Unix milliseconds.
        package var oldestHitCreatedAt: Int64?
        package var bucketing: BucketingRecord?

        package init(envId: String) {
            self.envId = envId
        }
    }

    /// The schema found, checked: read-only queries run on it.
    package let schema: Schema
    private let connection: PostgresConnection
    private let logger: Logger

    /// Connects to `location` (within `timeout`), opens the snapshot, checks the schema, runs
    /// `body`, and always rolls back and closes. Throws `FlagshipPostgresError` for a server that
    /// cannot be reached or refuses the credentials, a database without our schema, another
    /// application's schema, or a newer schema; `body`'s errors as they are.
    package static func read<T: Sendable>(
        _ location: FlagshipPostgresStore.Location,
        timeout: Duration = .seconds(5),
        logger: Logger = Logger(label: "io.flagship.postgres.inspection"),
        _ body: @escaping @Sendable (PostgresInspection) async throws -> T
    ) async throws -> T {
        let connection = try await connect(location, timeout: timeout, logger: logger)
        do {
            try await query(connection, "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
            let inspection = PostgresInspection(schema: try await checkedSchema(connection, location: location, logger: logger),
                                                connection: connection, logger: logger)
            let value = try await body(inspection)
            _ = try? await connection.query("ROLLBACK", logger: logger)
            try? await connection.close()
            return value
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            try? await connection.close()
            throw error
        }
    }

    private init(schema: Schema, connection: PostgresConnection, logger: Logger) {
        self.schema = schema
        self.connection = connection
        self.logger = logger
    }

    // MARK: Reading

    /// The environments that have any row (visitors, hits, bucketing file or SDK state), sorted.
    package func environments() async throws(FlagshipPostgresError) -> [String] {
        try await rows("listing the environments") { connection, logger in
            try await connection.query("""
                SELECT env_id FROM flagship.visitors UNION SELECT env_id FROM flagship.hits
                UNION SELECT env_id FROM flagship.bucketing UNION SELECT env_id FROM flagship.sdk_state
                ORDER BY 1
                """, logger: logger).collect().map { try $0.decode(String.self) }
        }
    }

    /// Each of `envIds` in counts, in that order (an environment without rows has zero counts).
    /// `now` (unix ms) tells live leases and pending retries from lapsed ones.
    package func summaries(envIds: [String], now: Int64) async throws(FlagshipPostgresError) -> [EnvironmentSummary] {
        try await rows("counting the rows") { connection, logger in
            var summaries = Dictionary(uniqueKeysWithValues: envIds.map { ($0, EnvironmentSummary(envId: $0)) })
            for try await (envId, count) in try await connection.query("""
                SELECT env_id, count(*) FROM flagship.visitors WHERE env_id = ANY(\(envIds)::text[]) GROUP BY env_id
                """, logger: logger).decode((String, Int64).self) {
                summaries[envId]?.visitorCount = Int(count)
            }
            for try await (envId, type, count, claimed, dead, backingOff, oldest) in try await connection.query("""
                SELECT env_id, type, count(*),
                       count(*) FILTER (WHERE lease_until > \(now) AND lease_until <> \(HitRecordStore.deadLetterUntil)),
                       count(*) FILTER (WHERE lease_until = \(HitRecordStore.deadLetterUntil)),
                       count(*) FILTER (WHERE next_attempt_at > \(now)), min(created_at)
                FROM flagship.hits WHERE env_id = ANY(\(envIds)::text[]) GROUP BY env_id, type
                """, logger: logger).decode((String, String, Int64, Int64, Int64, Int64, Int64).self) {
                guard var summary = summaries[envId] else { continue }
                summary.hitCount += Int(count)
                summary.hitCountByType[type] = Int(count)
                summary.claimedHitCount += Int(claimed)
                summary.deadLetterCount += Int(dead)
                summary.backingOffHitCount += Int(backingOff)
                summary.oldestHitCreatedAt = min(summary.oldestHitCreatedAt ?? oldest, oldest)
                summaries[envId] = summary
            }
            for try await (envId, document, lastModified, downloadedAt) in try await connection.query("""
                SELECT env_id, document, last_modified, downloaded_at FROM flagship.bucketing WHERE env_id = ANY(\(envIds)::text[])
                """, logger: logger).decode((String, String, String?, Int64).self) {
                summaries[envId]?.bucketing = BucketingRecord(envId: envId, document: document, lastModified: lastModified,
                                                              downloadedAt: downloadedAt)
            }
            return envIds.compactMap { summaries[$0] }
        }
    }

    /// Up to `limit` of the environment's visitors, most recently seen first (as the SQLite store lists them), by the index retention keeps.
    package func visitors(envId: String, limit: Int) async throws(FlagshipPostgresError) -> [(record: VisitorRecord, lastSeenAt: Int64)] {
        try await rows("reading the visitors") { connection, logger in
            var visitors: [(record: VisitorRecord, lastSeenAt: Int64)] = []
            for try await (id, anonymousId, consent, document, updatedAt, lastSeenAt) in try await connection.query("""
                SELECT visitor_id, anonymous_id, consent, document, updated_at, COALESCE(last_seen_at, updated_at) FROM flagship.visitors
                WHERE env_id = \(envId) ORDER BY COALESCE(last_seen_at, updated_at) DESC, visitor_id DESC LIMIT \(max(0, limit))
                """, logger: logger).decode((String, String?, Bool, String, Int64, Int64).self) {
                visitors.append((VisitorRecord(visitorId: id, anonymousId: anonymousId, consent: consent, document: document,
                                               updatedAt: updatedAt), lastSeenAt))
            }
            return visitors
        }
    }

    /// Up to `limit` of the environment's hits, oldest first (the order in which they are
    /// claimed), leases included.
    package func hits(envId: String, limit: Int) async throws(FlagshipPostgresError) -> [HitRecord] {
        let columns = PostgresHitRow.selectList(withProvenance: schema.version >= Self.provenanceVersion)
        return try await rows("reading the hits") { connection, logger in
            var hits: [HitRecord] = []
            for try await row in try await connection.query("""
                SELECT \(unescaped: columns)
                FROM flagship.hits WHERE env_id = \(envId) ORDER BY created_at, id LIMIT \(Int64(max(0, limit)))
                """, logger: logger) {
                hits.append(try PostgresHitRow.record(row))
            }
            return hits
        }
    }

    /// The environment's recorded decisions (one visitor's, or all), in the order they were
    /// recorded; none before schema version 3, which brought them.
    package func decisions(envId: String, visitorId: String?) async throws(FlagshipPostgresError) -> [DecisionRecord] {
        guard schema.version >= Self.provenanceVersion else { return [] }
        return try await rows("reading the decisions") { connection, logger in
            var decisions: [DecisionRecord] = []
            let query: PostgresQuery = visitorId.map { visitorId in
                """
                SELECT visitor_id, decided_at, source, file_version, context, assignments
                FROM flagship.decisions WHERE env_id = \(envId) AND visitor_id = \(visitorId) ORDER BY decided_at, id
                """
            } ?? """
                SELECT visitor_id, decided_at, source, file_version, context, assignments
                FROM flagship.decisions WHERE env_id = \(envId) ORDER BY id
                """
            for try await (visitorId, decidedAt, source, fileVersion, context, assignments)
                in try await connection.query(query, logger: logger).decode((String, Int64, String, String?, String?, String).self) {
                guard let source = DecisionRecord.Source(rawValue: source) else {
                    throw FlagshipPostgresError(StoreError.unexpectedValue(column: "decisions.source", found: source), doing: "reading the decisions")
                }
                decisions += try DecisionRecordStore.records(visitorId: visitorId, decidedAt: decidedAt, source: source,
                                                             fileVersion: fileVersion, context: context, assignments: assignments)
            }
            return decisions
        }
    }

    /// Everything the environment holds for one visitor (`flagship export`).
    package func visitorData(envId: String, visitorId: String) async throws(FlagshipPostgresError) -> VisitorDataRecords {
        try await rows("reading what is kept for a visitor") { connection, logger in
            try await FlagshipPostgresStore.visitorData(on: connection, envId: envId, visitorId: visitorId, logger: logger)
        }
    }

    /// The environment's kept bucketing file versions, most recently used first.
    package func bucketingFileVersions(envId: String) async throws(FlagshipPostgresError) -> [BucketingFileVersion] {
        guard schema.version >= Self.provenanceVersion else { return [] }
        return try await rows("reading the bucketing file versions") { connection, logger in
            var versions: [BucketingFileVersion] = []
            for try await (version, document, origin, firstUsedAt, lastUsedAt) in try await connection.query("""
                SELECT version, document, origin, first_used_at, last_used_at FROM flagship.bucketing_files
                WHERE env_id = \(envId) ORDER BY last_used_at DESC, version
                """, logger: logger).decode((String, String, String, Int64, Int64).self) {
                versions.append(BucketingFileVersion(version: version, envId: envId, document: document,
                                                     origin: BucketingFileVersion.Origin(rawValue: origin) ?? .download,
                                                     firstUsedAt: firstUsedAt, lastUsedAt: lastUsedAt))
            }
            return versions
        }
    }

    /// The schema version that brought decision provenance.
    private static let provenanceVersion = 3

    /// How many hits of the environment wait.
    package func hitCount(envId: String) async throws(FlagshipPostgresError) -> Int {
        try await rows("counting the hits") { connection, logger in
            let rows = try await connection.query("SELECT count(*) FROM flagship.hits WHERE env_id = \(envId)", logger: logger)
                .collect()
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
    }

    /// How many of the environment's hits are dead letters (never sent).
    package func deadLetterCount(envId: String) async throws(FlagshipPostgresError) -> Int {
        try await rows("counting the dead letters") { connection, logger in
            let rows = try await connection.query("""
                SELECT count(*) FROM flagship.hits WHERE env_id = \(envId) AND lease_until = \(HitRecordStore.deadLetterUntil)
                """, logger: logger).collect()
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
    }

    private func rows<T>(_ what: String, _ work: (PostgresConnection, Logger) async throws -> T) async throws(FlagshipPostgresError) -> T {
        do {
            return try await work(connection, logger)
        } catch {
            throw FlagshipPostgresError(error, doing: what)
        }
    }

    // MARK: Opening

    /// A connection of its own within `timeout`. A connection attempt that does not answer its
    /// cancellation is left to end by itself (its connect timeout), not waited for.
    private static func connect(_ location: FlagshipPostgresStore.Location, timeout: Duration,
                                logger: Logger) async throws(FlagshipPostgresError) -> PostgresConnection {
        var configuration = PostgresConnection.Configuration(host: location.host, port: location.port, username: location.username,
                                                             password: location.password, database: location.database,
                                                             tls: try location.security.connectionTLS())
        configuration.options.connectTimeout = .milliseconds(Int64(timeout.inSeconds * 1000))
        let settings = configuration
        let clock = SystemClock()
        let deadline = clock.now().addingTimeInterval(timeout.inSeconds)
        let result = await firstOf(deadline: deadline, clock: clock) {
            (finish: @escaping @Sendable (Result<PostgresConnection, any Error>) -> Void) in
            Task {
                do {
                    finish(.success(try await PostgresConnection.connect(configuration: settings, id: 0, logger: logger)))
                } catch {
                    finish(.failure(error))
                }
            }
        }
        switch result {
        case .success(let connection)?:
            return connection
        case .failure(let error as PSQLError)? where error.code == .authMechanismRequiresPassword:
            throw FlagshipPostgresError(code: .authenticationFailed, description: "connecting to \(location): the server asks for "
                + "a password and none was given (put it in PGPASSWORD, or in the URL)")
        case .failure(let error)?:
            let reason = FlagshipPostgresError(error, doing: "connecting to \(location)")
            guard location.password == nil, reason.code == .authenticationFailed else { throw reason }
            throw FlagshipPostgresError(code: reason.code, sqlState: reason.sqlState,
                                        description: reason.description + " (no password was given: put it in PGPASSWORD, or in the URL)")
        case nil:
            throw FlagshipPostgresError(code: .unreachable, description: "connecting to \(location): no answer within \(timeout): "
                + "check the host, the port and that the server runs")
        }
    }

    /// The schema's marker and history, read without a write; refuses what is not a store this
    /// build can read.
    private static func checkedSchema(_ connection: PostgresConnection, location: FlagshipPostgresStore.Location,
                                      logger: Logger) async throws -> Schema {
        let comment = try await PostgresMigrator.schemaComment(connection, logger: logger)
        let noStore = FlagshipPostgresError(code: .databaseMissing, description: "\(location) holds no Flagship store (no schema "
            + "\"flagship\"): nothing was read or written (the SDK creates the store when it starts with it, "
            + "FlagshipPostgresStore.prepare())")
        switch comment {
        case PostgresMigrator.marker?:
            break
        case let other?:
            throw FlagshipPostgresError(code: .foreignSchema, description: "the schema \"flagship\" of \(location) is not this SDK's "
                + "(its comment is \(other.isEmpty ? "empty" : "'\(other)'")): it was not read")
        case nil:
            throw noStore
        }
        var migrations: [AppliedMigration] = []
        for try await (version, name, checksum, appliedAt) in try await connection.query("""
            SELECT version, name, checksum, (extract(epoch FROM applied_at) * 1000)::bigint
            FROM flagship.schema_migrations ORDER BY version
            """, logger: logger).decode((Int32, String, String, Int64).self) {
            migrations.append(AppliedMigration(version: Int(version), name: name, checksum: checksum, appliedAt: appliedAt))
        }
        let known = PostgresMigrator()
        let version = migrations.last?.version ?? 0
        guard version > 0 else { throw noStore }
        guard version <= known.latestVersion else {
            throw FlagshipPostgresError(code: .schemaTooNew, description: "the PostgreSQL store at \(location) has schema version "
                + "\(version), newer than version \(known.latestVersion), the latest this build knows: it was not read "
                + "(upgrade flagship to read it)")
        }
        let recorded = Dictionary(migrations.map { ($0.version, MigrationRecord(name: $0.name, checksum: $0.checksum)) }) { first, _ in first }
        let mismatch = known.migrations.first { $0.version <= version && recorded[$0.version] != $0.record }
        let historyProblem = mismatch.map { step in
            let found = recorded[step.version].map { "'\($0.name)' with checksum \($0.checksum ?? "none")" } ?? "nothing"
            return "the store records \(found) as schema step \(step.version), where this build has '\(step.name)' "
                + "with checksum \(step.checksum)"
        }
        return Schema(version: version, latestKnown: known.latestVersion, migrations: migrations, historyProblem: historyProblem)
    }

    private static func query(_ connection: PostgresConnection, _ sql: PostgresQuery, logger: Logger) async throws {
        do {
            try await connection.query(sql, logger: logger)
        } catch {
            throw FlagshipPostgresError(error, doing: "reading \(sql.sql)")
        }
    }
}
#endif
