import Foundation

/// Applies the missing migrations of an ordered, append-only list, recording each one.
///
/// The record lives in `schema_migrations(version, name, applied_at)`; `PRAGMA user_version`
/// mirrors the latest version so that `sqlite3 file 'PRAGMA user_version'` answers too.
/// Each step runs in its own transaction, and the version is read again inside it, so two
/// processes opening one new file at once apply every step exactly once.
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
        return Int(try connection.scalar("SELECT max(version) FROM schema_migrations")?.int64 ?? 0)
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
        var current = start
        for migration in migrations where migration.version > current && migration.version <= target {
            current = try database.write { connection in
                let applied = try Self.appliedVersion(connection)
                try refuseNewer(applied, database: database)
                // Steps another process applied before this call applied any are not ours to report.
                if current == start { start = applied }
                // Another process may have applied this step while we waited for the lock.
                guard applied < migration.version else { return applied }
                try connection.executeScript(Self.bookkeepingTable)
                try connection.executeScript(migration.sql)
                try connection.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    [.integer(Int64(migration.version)), .text(migration.name), .integer(now().unixMilliseconds)]
                )
                // Pragmas take no bound parameters; both values are integers of ours.
                try connection.execute("PRAGMA user_version = \(migration.version)")
                try connection.execute("PRAGMA application_id = \(Self.applicationID)")
                return migration.version
            }
        }
        return Outcome(fromVersion: start, toVersion: current)
    }

    private func refuseNewer(_ version: Int, database: Database) throws(StoreError) {
        guard version > latestVersion else { return }
        throw .schemaTooNew(path: database.path, databaseVersion: version, latestKnownVersion: latestVersion)
    }

    private static let bookkeepingTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version    INTEGER NOT NULL PRIMARY KEY,
            name       TEXT    NOT NULL,
            applied_at INTEGER NOT NULL  -- unix ms
        );
        """
}

extension Date {
    package var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    package init(unixMilliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(unixMilliseconds) / 1000)
    }
}
