import CSQLite
import Foundation

/// An open Flagship store: one SQLite file (or an in-memory database), migrated to the latest
/// schema, and the record stores over its tables.
package final class FlagshipDatabase: Sendable {
    package let database: Database
    /// The schema version of the file once opened.
    package let schemaVersion: Int
    /// What opening did: created, upgraded, or replaced a damaged file.
    package let opening: Opening

    package let visitors: VisitorRecordStore
    package let hits: HitRecordStore
    package let bucketing: BucketingRecordStore
    package let state: StateRecordStore
    /// This session's marker in `sdk_state`, deleted by a clean `close()`.
    private let sessionKey: String?

    package struct Opening: Sendable, Equatable {
        /// The schema version found in the file (0 for a new file).
        package var fromVersion: Int
        /// Where a damaged file was moved, with why it was judged damaged.
        package var movedAside: MovedAside?
        /// Why the whole file was checked (`PRAGMA quick_check`) before use; `nil` when the last
        /// session closed cleanly and the check was skipped.
        package var fullCheck: String?

        package init(fromVersion: Int, movedAside: MovedAside? = nil, fullCheck: String? = nil) {
            self.fromVersion = fromVersion
            self.movedAside = movedAside
            self.fullCheck = fullCheck
        }
    }

    package struct MovedAside: Sendable, Equatable {
        package let url: URL
        package let reason: String
    }

    private init(database: Database, schemaVersion: Int, opening: Opening, sessionKey: String? = nil) {
        self.database = database
        self.schemaVersion = schemaVersion
        self.opening = opening
        self.sessionKey = sessionKey
        visitors = VisitorRecordStore(database: database)
        hits = HitRecordStore(database: database)
        bucketing = BucketingRecordStore(database: database)
        state = StateRecordStore(database: database)
    }

    /// Opens (creating it if needed) the database at `url` and applies the missing migrations.
    ///
    /// The directory is created 0700 and the file 0600: visitor data is personal data.
    /// A file that is not a database, was cut short, or fails `PRAGMA quick_check` is moved aside
    /// to `<name>.corrupt-<timestamp>` (never deleted) and replaced by a fresh one. The full check
    /// reads every page, so it runs only when the last session did not close cleanly (or met a
    /// damaged page), never at every start: see `StoreSessions`. A file whose schema is newer
    /// than this build throws `StoreError.schemaTooNew` and is left untouched.
    package static func open(
        at url: URL,
        options: DatabaseOptions = DatabaseOptions(),
        migrator: Migrator = Migrator(),
        now: @escaping @Sendable () -> Date = Date.init
    ) throws -> FlagshipDatabase {
        try prepareFile(at: url)
        do {
            return try openAndMigrate(path: url.path, options: options, migrator: migrator, now: now)
        } catch let damage as Damage {
            let destination = try moveAside(url, reason: damage.reason, now: now())
            try prepareFile(at: url)
            return try openAndMigrate(path: url.path, options: options, migrator: migrator, now: now,
                                      movedAside: MovedAside(url: destination, reason: damage.reason))
        }
    }

    /// A database that lives in memory only: the fallback when no file can be used.
    package static func inMemory(migrator: Migrator = Migrator(), now: @escaping @Sendable () -> Date = Date.init) throws -> FlagshipDatabase {
        try openAndMigrate(path: ":memory:", options: DatabaseOptions(), migrator: migrator, now: now)
    }

    /// Opens an existing store for reading only: nothing in the file is ever changed, and a file
    /// that is not a Flagship database (or is newer than this build) is refused.
    package static func openForInspection(at url: URL, migrator: Migrator = Migrator()) throws -> FlagshipDatabase {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError.fileSystem(path: url.path, reason: "no such file")
        }
        let database: Database
        do {
            database = try Database(path: url.path, options: DatabaseOptions(readOnly: true))
        } catch {
            throw Damage(error).map { StoreError.notAFlagshipDatabase(path: url.path, reason: $0.reason) } ?? error
        }
        do {
            let version = try database.withConnection { connection -> Int in
                guard try connection.tableExists("schema_migrations") else {
                    throw StoreError.notAFlagshipDatabase(path: url.path, reason: "it has no schema_migrations table")
                }
                return try Migrator.appliedVersion(connection)
            }
            guard version <= migrator.latestVersion else {
                throw StoreError.schemaTooNew(path: url.path, databaseVersion: version, latestKnownVersion: migrator.latestVersion)
            }
            return FlagshipDatabase(database: database, schemaVersion: version, opening: Opening(fromVersion: version, movedAside: nil))
        } catch {
            database.close()
            throw Damage(error).map { StoreError.notAFlagshipDatabase(path: url.path, reason: $0.reason) } ?? error
        }
    }

    /// Closes the connection, first marking the session as closed cleanly, unless a statement
    /// met a damaged page: then the marker stays and the next open checks the whole file.
    /// Safe to call more than once.
    package func close() {
        if let sessionKey, !database.hasMetDamage {
            try? database.write { try StoreSessions.end(sessionKey, in: $0) }
        }
        if let sessionKey { StoreSessions.forget(sessionKey) }
        database.close()
    }

    /// Ends the session as a killed process would: the connection closed without a checkpoint,
    /// the session marker left in the file. For crash tests.
    package func abandon() {
        if let sessionKey { StoreSessions.forget(sessionKey) }
        database.close(checkpoint: false)
    }

    /// A store dropped without `close()` (a default cache handed to a custom manager, say) ends
    /// its session as cleanly as `close()` would.
    deinit {
        close()
    }

    // MARK: - Opening

    /// A file judged damaged: what `open` moves aside.
    private struct Damage: Error {
        let reason: String

        init(reason: String) {
            self.reason = reason
        }

        /// The damage an error reveals, if it is SQLite saying the file is not a database or is corrupt.
        init?(_ error: any Error) {
            guard case .sqlite(let sqliteError)? = error as? StoreError, sqliteError.meansFileIsDamaged else { return nil }
            reason = sqliteError.message
        }
    }

    /// - Parameter movedAside: the damaged file this one replaces, to report in `opening`.
    private static func openAndMigrate(
        path: String, options: DatabaseOptions, migrator: Migrator, now: @escaping @Sendable () -> Date,
        movedAside: MovedAside? = nil
    ) throws -> FlagshipDatabase {
        let database: Database
        do {
            database = try Database(path: path, options: options)
        } catch {
            throw Damage(error) ?? error
        }
        do {
            if let damage = try cutShort(path: path, database: database) { throw damage }
            let inMemory = path == ":memory:"
            // Checked in one snapshot, before the switch to WAL (the first write): a file that is
            // not ours stays as it was, and one another process is creating is not mistaken for it.
            let findings = try database.read { connection in
                try refuseUnlessOurs(connection, path: path, migrator: migrator)
                return inMemory ? nil : try StoreSessions.inspect(connection)
            }
            if findings?.reasonForFullCheck != nil {
                let check = try database.withConnection { try $0.query("PRAGMA quick_check").compactMap { $0[0].text } }
                guard check == ["ok"] else {
                    throw Damage(reason: "quick_check: " + check.prefix(3).joined(separator: "; "))
                }
            }
            try database.withConnection { try $0.query("PRAGMA journal_mode = WAL") }
            let outcome = try migrator.migrate(database, now: now)
            let sessionKey = try database.write { connection -> String? in
                try HitRecordStore(database: database).recount(in: connection)
                guard let findings else { return nil }
                return try StoreSessions.begin(connection, after: findings, now: now().unixMilliseconds)
            }
            return FlagshipDatabase(database: database, schemaVersion: outcome.toVersion,
                                    opening: Opening(fromVersion: outcome.fromVersion, movedAside: movedAside,
                                                     fullCheck: findings?.reasonForFullCheck),
                                    sessionKey: sessionKey)
        } catch {
            let damage = Damage(error)
            // A damaged file is moved aside as found: no checkpoint into it, its WAL kept.
            database.close(checkpoint: damage == nil)
            throw damage ?? error
        }
    }

    /// Refuses another application's database, and one written by a newer version of the SDK.
    private static func refuseUnlessOurs(_ connection: Connection, path: String, migrator: Migrator) throws(StoreError) {
        let applicationID = try connection.scalar("PRAGMA application_id")?.int64 ?? 0
        guard applicationID == 0 || applicationID == Int64(Migrator.applicationID) else {
            throw .notAFlagshipDatabase(path: path, reason: "its application_id is \(applicationID), not Flagship's (\(Migrator.applicationID))")
        }
        guard try connection.tableExists("schema_migrations") else {
            let others = try connection.query(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name LIMIT 3"
            ).compactMap { $0[0].text }
            guard others.isEmpty else {
                throw .notAFlagshipDatabase(path: path, reason: "it holds other tables (\(others.joined(separator: ", "))) and no schema_migrations table")
            }
            return
        }
        let version = try Migrator.appliedVersion(connection)
        guard version <= migrator.latestVersion else {
            throw .schemaTooNew(path: path, databaseVersion: version, latestKnownVersion: migrator.latestVersion)
        }
        try migrator.checkHistory(connection, path: path)
    }

    /// SQLite writes whole pages, so a file whose length is not a whole number of pages was cut
    /// short inside its last page, which `quick_check` can miss (it does not compare indexes with
    /// their tables). SQLite itself reads a 1-byte file as an empty one.
    private static func cutShort(path: String, database: Database) throws -> Damage? {
        guard path != ":memory:",
              let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value,
              size > 1,
              let pageSize = try database.withConnection({ try $0.scalar("PRAGMA page_size")?.int64 }),
              pageSize > 0, size % pageSize != 0
        else { return nil }
        return Damage(reason: "the file is \(size) bytes, not a whole number of \(pageSize)-byte pages: it was cut short")
    }

    /// Creates the directory (0700) and an empty file (0600) when they do not exist yet.
    private static func prepareFile(at url: URL) throws {
        let directory = url.deletingLastPathComponent()
        let fileManager = FileManager.default
        if !fileManager.fileExists(atPath: directory.path) {
            do {
                try fileManager.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreError.fileSystem(path: directory.path, reason: "cannot create the directory: \(error.localizedDescription)")
            }
        }
        // O_EXCL: never truncate or re-mode a file that appeared meanwhile.
        let descriptor = Foundation.open(url.path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            _ = Foundation.close(descriptor)
        } else if errno != EEXIST {
            throw StoreError.fileSystem(path: url.path, reason: "cannot create the file: \(String(cString: strerror(errno)))")
        }
    }

    /// Moves a damaged file, and its `-wal` and `-shm` companions, to `<name>.corrupt-<timestamp>`.
    private static func moveAside(_ url: URL, reason: String, now: Date) throws -> URL {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss.SSS'Z'"
        let stamp = formatter.string(from: now)
        var destination = URL(fileURLWithPath: url.path + ".corrupt-" + stamp)
        var attempt = 1
        while FileManager.default.fileExists(atPath: destination.path) {
            attempt += 1
            destination = URL(fileURLWithPath: url.path + ".corrupt-" + stamp + "-\(attempt)")
        }
        do {
            try FileManager.default.moveItem(at: url, to: destination)
            for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                try FileManager.default.moveItem(atPath: url.path + suffix, toPath: destination.path + suffix)
            }
        } catch {
            throw StoreError.fileSystem(path: url.path, reason: "damaged (\(reason)) and could not be moved aside: \(error.localizedDescription)")
        }
        return destination
    }
}
