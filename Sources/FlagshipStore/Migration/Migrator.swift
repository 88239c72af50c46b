import Foundation

/// Applies the missing migrations of an ordered, append-only list, recording each one.
///
/// The record lives in `schema_migrations(version, name, applied_at, checksum)`; `PRAGMA
/// user_version` mirrors the latest version so that `sqlite3 file 'PRAGMA user_version'` answers
/// too. Each step runs in its own transaction, and the version is read again inside it, so two
/// processes opening one new file at once apply every step exactly once.
///
/// The list is append-only: a file whose record names another step for a version, or a step
/// whose SQL has changed since, is refused (`StoreError.migrationHistoryMismatch`), since later
/// steps would build on a schema other than the one `Migrations/` describes.
package struct Migrator: Sendable {
    package let migrations: [Migration]

    /// Marks a file as a Flagship store, for `PRAGMA application_id` ("FSdk").
    package static let applicationID: Int32 = 0x4653_646B

    package init(migrations: [Migration] = Migration.embedded) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    package var latestVersion: Int { migrations.last?.version ?? 0 }

    /// What a call to `migrate` did.
    package struct Outcome: Sendable, Equatable {
        package let fromVersion: Int
        package let toVersion: Int
        package var applied: [Int] { fromVersion < toVersion ? Array(fromVersion + 1...toVersion) : [] }
    }

    /// The highest version recorded in the file, 0 for a file without `schema_migrations`.
    package static func appliedVersion(_ connection: Connection) throws(StoreError) -> Int {
        guard try connection.tableExists("schema_migrations") else { return 0 }
        return Int(try connection.scalar("SELECT max(version) FROM main.schema_migrations")?.int64 ?? 0)
    }

    /// Brings the schema to `targetVersion` (default: the latest), refusing a file that is newer.
    package func migrate(
        _ database: Database,
        upTo targetVersion: Int? = nil,
        now: @Sendable () -> Date = Date.init
    ) throws -> Outcome {
        let target = targetVersion ?? latestVersion
        var start = try database.withConnection { try Self.appliedVersion($0) }
        try refuseNewer(start, database: database)
        try database.withConnection { try checkHistory($0, path: database.path) }
        var current = start
        for migration in migrations where migration.version > current && migration.version <= target {
            current = try database.write { connection in
                let applied = try Self.appliedVersion(connection)
                try refuseNewer(applied, database: database)
                // Another process, maybe another build, may have written steps since the check above.
                try checkHistory(connection, path: database.path)
                // Steps another process applied before this call applied any are not ours to report.
                if current == start { start = applied }
                // Another process may have applied this step while we waited for the lock.
                guard applied < migration.version else { return applied }
                try connection.executeScript(Self.bookkeepingTable)
                if try !Self.recordsChecksums(connection) {
                    // A file from before checksums: its earlier steps keep none, since what SQL
                    // an older build ran for them is unknown; they are compared by name only.
                    try connection.execute("ALTER TABLE main.schema_migrations ADD COLUMN checksum TEXT")
                }
                try connection.executeScript(migration.sql)
                try connection.execute(
                    "INSERT INTO main.schema_migrations (version, name, applied_at, checksum) VALUES (?, ?, ?, ?)",
                    [.integer(Int64(migration.version)), .text(migration.name), .integer(now().unixMilliseconds),
                     .text(migration.checksum)]
                )
                // Pragmas take no bound parameters; both values are integers of ours.
                try connection.execute("PRAGMA user_version = \(migration.version)")
                try connection.execute("PRAGMA application_id = \(Self.applicationID)")
                return migration.version
            }
        }
        return Outcome(fromVersion: start, toVersion: current)
    }

    /// Refuses a file whose record of a step differs from this migrator's step of that version:
    /// another name, or (when the record has one) another checksum. Read only: the file is left
    /// as it was. Versions this migrator does not list are `refuseNewer`'s concern.
    package func checkHistory(_ connection: Connection, path: String) throws(StoreError) {
        guard try connection.tableExists("schema_migrations") else { return }
        let checksum = try Self.recordsChecksums(connection) ? "checksum" : "NULL"
        for row in try connection.query("SELECT version, name, \(checksum) FROM main.schema_migrations ORDER BY version") {
            guard let version = row[0].int64.map(Int.init),
                  let embedded = migrations.first(where: { $0.version == version })
            else { continue }
            let applied = MigrationRecord(name: row[1].text ?? "", checksum: row[2].text)
            guard applied.name == embedded.name, applied.checksum == nil || applied.checksum == embedded.checksum else {
                throw .migrationHistoryMismatch(path: path, version: version, applied: applied, embedded: embedded.record)
            }
        }
    }

    /// Whether `schema_migrations` has its `checksum` column: files written before it have not.
    private static func recordsChecksums(_ connection: Connection) throws(StoreError) -> Bool {
        try connection.scalar(
            "SELECT count(*) FROM pragma_table_info('schema_migrations') WHERE name = 'checksum'"
        )?.int64 ?? 0 > 0
    }

    private func refuseNewer(_ version: Int, database: Database) throws(StoreError) {
        guard version > latestVersion else { return }
        throw .schemaTooNew(path: database.path, databaseVersion: version, latestKnownVersion: latestVersion)
    }

    private static let bookkeepingTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version    INTEGER NOT NULL PRIMARY KEY,
            name       TEXT    NOT NULL,
            applied_at INTEGER NOT NULL, -- unix ms
            checksum   TEXT              -- Migration.checksum of the SQL applied; NULL: recorded before checksums
        );
        """
}

extension Date {
    package var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    package init(unixMilliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(unixMilliseconds) / 1000)
    }
}
