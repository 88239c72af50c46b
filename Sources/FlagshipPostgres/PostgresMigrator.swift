#if Postgres
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// Brings the `flagship` schema of a PostgreSQL database to this build's version, with the
/// promises of the SQLite migrator:
/// - append-only, named, checksummed steps (`Migrations/PostgreSQL/NNNN_name.sql`); a schema that
///   records a step under another name or checksum, or a newer version, is refused untouched;
/// - several instances starting at once are serialized: the whole migration is one transaction
///   that first takes a transaction-level advisory lock, so one migrates and the others then find
///   the schema current (PostgreSQL's DDL is transactional: a failed step leaves nothing behind);
/// - never a database that is not ours: the schema is ours only when its comment says so; a
///   `flagship` schema without it is another application's, and a database holding other tables
///   gets our schema only when the configuration says it may be shared.
struct PostgresMigrator {
    /// The comment that marks the `flagship` schema as this SDK's.
    static let marker = "flagship-swift-linux store"
    /// Sets it (`COMMENT` takes no bound parameter, so the text is written out; a test checks
    /// that the comment read back is `marker`).
    private static let markSchema: PostgresQuery = "COMMENT ON SCHEMA flagship IS 'flagship-swift-linux store'"
    /// The advisory lock every migrator takes (a constant of ours: "FLAGSHIP" in ASCII).
    static let lockKey: Int64 = 0x464C_4147_5348_4950
    let migrations: [Migration]
    var latestVersion: Int { migrations.last?.version ?? 0 }

    init(migrations: [Migration] = Migration.postgres) {
        self.migrations = migrations
    }

    /// What `migrate` found and did.
    struct Outcome: Sendable, Equatable {
        var fromVersion: Int
        var toVersion: Int
    }

    /// Migrates in one transaction on `connection`.
    func migrate(_ connection: PostgresConnection, sharesDatabase: Bool, logger: Logger) async throws(FlagshipPostgresError) -> Outcome {
        do {
            return try await connection.withTransaction(logger: logger) { connection in
                try await migrate(on: connection, sharesDatabase: sharesDatabase, logger: logger)
            }
        } catch {
            throw FlagshipPostgresError(error, doing: "migrating the PostgreSQL store")
        }
    }

    /// The comment of the schema `flagship` (`marker` when it is ours), `""` when it has none;
    /// `nil` when the database has no such schema.
    static func schemaComment(_ connection: PostgresConnection, logger: Logger) async throws -> String? {
        try await connection.query(
            "SELECT COALESCE(obj_description(oid, 'pg_namespace'), '') FROM pg_namespace WHERE nspname = 'flagship'",
            logger: logger
        ).collect().first.map { try $0.decode(String.self) }
    }

    /// Takes the lock, makes sure the schema is ours (creating it when there is none), checks the
    /// steps it records against this build's, then applies the ones it lacks.
    private func migrate(on connection: PostgresConnection, sharesDatabase: Bool, logger: Logger) async throws -> Outcome {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: logger)
        switch try await Self.schemaComment(connection, logger: logger) {
        case Self.marker?:
            break
        case let other?:
            throw FlagshipPostgresError(code: .foreignSchema, description: "the database's schema \"flagship\" is not this SDK's "
                + "(its comment is \(other.isEmpty ? "empty" : "'\(other)'")): it was left untouched. Use another database, or drop that schema")
        case nil:
            try await Self.createSchema(on: connection, sharesDatabase: sharesDatabase, logger: logger)
        }
        let applied = try await Self.appliedSteps(on: connection, logger: logger)
        let fromVersion = applied.keys.max() ?? 0
        try checkHistory(applied, fromVersion: fromVersion)
        for migration in migrations where migration.version > fromVersion {
            try await Self.apply(migration, on: connection, logger: logger)
        }
        return Outcome(fromVersion: fromVersion, toVersion: max(fromVersion, latestVersion))
    }

    /// Creates the marked schema and its table of steps, when the database holds no other
    /// application's tables or may be shared.
    private static func createSchema(on connection: PostgresConnection, sharesDatabase: Bool, logger: Logger) async throws {
        let tables = try await connection.query("""
            SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
              AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
            """, logger: logger).collect().first.map { try $0.decode(Int64.self) } ?? 0
        guard tables == 0 || sharesDatabase else {
            throw FlagshipPostgresError(code: .sharedDatabase, description: "the database holds \(tables) table(s) or view(s) of another "
                + "application, so nothing was written to it: give Flagship a database of its own, or say it may share this one (sharesDatabase)")
        }
        try await connection.query("CREATE SCHEMA flagship", logger: logger)
        try await connection.query(markSchema, logger: logger)
        try await connection.query("""
            CREATE TABLE flagship.schema_migrations (
                version    integer     NOT NULL PRIMARY KEY,
                name       text        NOT NULL,
                checksum   text        NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: logger)
    }

    /// The steps the schema records as applied, by version.
    private static func appliedSteps(on connection: PostgresConnection, logger: Logger) async throws -> [Int: MigrationRecord] {
        var applied: [Int: MigrationRecord] = [:]
        for try await (version, name, checksum) in try await connection.query(
            "SELECT version, name, checksum FROM flagship.schema_migrations ORDER BY version", logger: logger
        ).decode((Int, String, String).self) {
            applied[version] = MigrationRecord(name: name, checksum: checksum)
        }
        return applied
    }

    /// Refuses a schema newer than this build, or one whose steps up to `fromVersion` are not this
    /// build's (by name and checksum).
    private func checkHistory(_ applied: [Int: MigrationRecord], fromVersion: Int) throws(FlagshipPostgresError) {
        guard fromVersion <= latestVersion else {
            throw FlagshipPostgresError(code: .schemaTooNew, description: "the PostgreSQL store has schema version \(fromVersion), newer than "
                + "version \(latestVersion), the latest this build knows: it was left untouched (upgrade the SDK to use it)")
        }
        for migration in migrations where migration.version <= fromVersion {
            guard let record = applied[migration.version], record == migration.record else {
                let found = applied[migration.version].map { "'\($0.name)' with checksum \($0.checksum ?? "none")" } ?? "nothing"
                throw FlagshipPostgresError(code: .migrationHistoryMismatch, description: "the PostgreSQL store records \(found) as schema "
                    + "step \(migration.version), where this build has '\(migration.name)' with checksum \(migration.checksum): steps are "
                    + "append-only, so the schema was left untouched")
            }
        }
    }

    /// Runs one step's statements and records it.
    private static func apply(_ migration: Migration, on connection: PostgresConnection, logger: Logger) async throws {
        for statement in SQLScript.statements(migration.sql) {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
        try await connection.query("""
            INSERT INTO flagship.schema_migrations (version, name, checksum)
            VALUES (\(migration.version), \(migration.name), \(migration.checksum))
            """, logger: logger)
    }
}
#endif
