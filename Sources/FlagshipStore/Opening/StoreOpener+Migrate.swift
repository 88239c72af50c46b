import CSQLite
import Foundation

/// Opening one SQLite file as a store: checked before use as the last session left it, switched
/// to WAL, migrated, its session begun, and what a damaged predecessor held salvaged into it.
extension StoreOpener {
    /// - Parameter movedAside: the damaged file this one replaces, to report in `opening`.
    static func openAndMigrate(
        path: String, options: DatabaseOptions, migrator: Migrator, now: @escaping @Sendable () -> Date,
        movedAside: MovedAside? = nil, walSetAside: MovedAside? = nil
    ) throws -> FlagshipDatabase {
        let database: Database
        do {
            database = try Database(path: path, options: options)
        } catch {
            throw Damage(error) ?? error
        }
        do {
            let inMemory = path == ":memory:"
            let check = try checkBeforeUse(database, path: path, options: options, migrator: migrator)
            try chooseIncrementalVacuumIfNew(database)
            if !inMemory { try enterWAL(database) }
            let outcome = try migrator.migrate(database, now: now)
            let sessionKey = try beginSession(of: database, check: check, migrated: outcome, options: options, now: now)
            // What the damaged file still holds goes into the new one (never a reason to fail).
            let salvage = movedAside.map { salvaged(from: $0, into: database, now: now()) }
            let switched = !inMemory && switchToIncrementalVacuumIfSmall(database)
            try database.zeroFreedPagesAtErasureOnly()
            // From here on, no commit waits for a checkpoint, and a lookup for no write.
            if !inMemory {
                try database.checkpointInBackground()
                database.openReader()
            }
            let opening = Opening(fromVersion: outcome.fromVersion, movedAside: movedAside, walSetAside: walSetAside,
                                  salvage: salvage, fullCheck: check.deferred == nil ? check.findings?.reasonForFullCheck : nil,
                                  deferredCheck: check.deferred, switchedToIncrementalVacuum: switched)
            return FlagshipDatabase(database: database, schemaVersion: outcome.toVersion, opening: opening, sessionKey: sessionKey)
        } catch {
            throw closeUnchanged(database, after: error)
        }
    }

    /// What the checks before use found: the last session's findings (`nil` in memory), and why
    /// the full check was deferred to the background (the file too big to check before use).
    struct CheckBeforeUse {
        let findings: StoreSessions.Findings?
        let deferred: String?
    }

    /// Refuses a file that is not ours, and checks one the last session did not close cleanly:
    /// whole when it is small enough (`fullCheckBeforeUseMaximumBytes`), else bounded now and
    /// whole in the background. Read in one snapshot, before the switch to WAL (the first
    /// write): a file that is not ours stays as it was, and one another process is creating is
    /// not mistaken for it.
    private static func checkBeforeUse(_ database: Database, path: String, options: DatabaseOptions,
                                       migrator: Migrator) throws -> CheckBeforeUse {
        if let damage = try cutShort(path: path, database: database) { throw damage }
        let findings = try database.read { connection in
            try refuseUnlessOurs(connection, path: path, migrator: migrator)
            return path == ":memory:" ? nil : try StoreSessions.inspect(connection)
        }
        guard let reason = findings?.reasonForFullCheck else { return CheckBeforeUse(findings: findings, deferred: nil) }
        if FlagshipDatabase.fileBytes(path) <= options.fullCheckBeforeUseMaximumBytes {
            try FlagshipDatabase.fullCheck(database)
            return CheckBeforeUse(findings: findings, deferred: nil)
        }
        try FlagshipDatabase.boundedCheck(database)
        return CheckBeforeUse(findings: findings, deferred: reason)
    }

    /// The session's first write: the hit count taken again, the schema's hash checked (or
    /// recorded after a migration), and the session's marker; returns the marker's key (`nil`
    /// in memory). A current file can be served read-only: when another process holds the write
    /// lock, this write waits a second, not the whole busy timeout, before `open` falls back to
    /// reading it.
    private static func beginSession(of database: Database, check: CheckBeforeUse, migrated outcome: Migrator.Outcome,
                                     options: DatabaseOptions, now: @escaping @Sendable () -> Date) throws -> String? {
        let begin = {
            try database.write { connection -> String? in
                try connection.hits.recount()
                guard let findings = check.findings else { return nil }
                try checkSchema(connection, migrated: outcome.fromVersion < outcome.toVersion, now: now().unixMilliseconds)
                return try StoreSessions.begin(connection, after: findings, checkDeferred: check.deferred != nil,
                                               now: now().unixMilliseconds)
            }
        }
        guard outcome.fromVersion == outcome.toVersion, check.findings != nil else { return try begin() }
        return try database.withBusyTimeout(min(openingLockWaitMilliseconds, options.busyTimeoutMilliseconds), begin)
    }

    /// What the damaged file moved aside still holds, copied into the new one; its failure is
    /// reported, never thrown.
    private static func salvaged(from movedAside: MovedAside, into database: Database, now: Date) -> Result<Salvage, StoreError> {
        Result { () throws(StoreError) -> Salvage in
            do {
                return try Salvage.copy(from: movedAside.url, into: database, now: now)
            } catch let error as StoreError {
                throw error
            } catch {
                throw .fileSystem(path: movedAside.url.path, reason: "\(error)")
            }
        }
    }

    /// Closes a database whose opening failed, and returns what to throw. A damaged file is moved
    /// aside as found: no checkpoint into it, its WAL kept. A refused file is left as found too:
    /// no checkpoint of another application's WAL.
    private static func closeUnchanged(_ database: Database, after error: any Error) -> any Error {
        let damage = error as? Damage ?? Damage(error)
        let refused: Bool
        switch error as? StoreError {
        case .notAFlagshipDatabase?, .schemaTooNew?, .migrationHistoryMismatch?: refused = true
        default: refused = false
        }
        database.close(checkpoint: damage == nil && !refused)
        return damage ?? error
    }

    /// A file without tables yet (new, or emptied) gets incremental auto-vacuum, which SQLite lets
    /// a file choose only before its first table: pages freed by a prune can then be given back
    /// (`returnFreePages`) instead of staying in the file for ever. Two processes creating one
    /// file both ask for it, so whichever creates the tables, the file has it.
    static func chooseIncrementalVacuumIfNew(_ database: Database) throws {
        try database.withConnection { connection in
            guard try connection.scalar("SELECT count(*) FROM sqlite_master")?.int64 == 0 else { return }
            try connection.query("PRAGMA auto_vacuum = INCREMENTAL")
        }
    }

    /// A file made before incremental auto-vacuum switches to it only through a `VACUUM`, which
    /// rewrites the whole file and holds the write lock meanwhile: not inside a migration's
    /// transaction (SQLite refuses), nor in the background (group commits would wait for it).
    /// It runs here, once, after migrating and before the SDK serves anything, for a file of at
    /// most `vacuumAtOpenMaximumBytes` (a fraction of a second); a larger one keeps its mode, its
    /// freed pages reused by later rows rather than given back, until `flagship db prune` switches
    /// it by hand. Best effort: another process's write lock (waited for 100 ms) or a full disk
    /// leaves the file as it was, to be tried at the next open. Returns whether it switched.
    static func switchToIncrementalVacuumIfSmall(_ database: Database) -> Bool {
        let size = ((try? FileManager.default.attributesOfItem(atPath: database.path))?[.size] as? NSNumber)?.int64Value ?? .max
        guard size <= FlagshipDatabase.vacuumAtOpenMaximumBytes else { return false }
        return (try? database.withBusyTimeout(100) { try FlagshipDatabase.switchToIncrementalVacuum(database) }) ?? false
    }

    /// Switches the file to WAL, a mode it keeps: a file already in it is left alone (no write
    /// lock taken). The switch needs the file to itself, and SQLite answers `SQLITE_BUSY` at once,
    /// without its busy handler, when another connection is reading it (several processes opening
    /// one new file together): the switch is tried again, within the busy timeout.
    static func enterWAL(_ database: Database) throws {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(database.options.busyTimeoutMilliseconds) * 1_000_000
        var pause: UInt32 = 1_000
        while true {
            do {
                try database.withConnection { connection in
                    guard try connection.scalar("PRAGMA journal_mode")?.text?.lowercased() != "wal" else { return }
                    try connection.query("PRAGMA journal_mode = WAL")
                }
                return
            } catch StoreError.sqlite(let error) where error.code == SQLITE_BUSY && DispatchTime.now().uptimeNanoseconds < deadline {
                usleep(pause)
                pause = min(pause * 2, 50_000)
            }
        }
    }

    /// The schema SQLite reads from `sqlite_master` must be the one the migrations wrote: a byte
    /// changed in a `CREATE` statement's text can leave it valid SQL that names another column,
    /// and every statement using that column then fails with a plain `SQLITE_ERROR`, never
    /// `SQLITE_CORRUPT`. After each migration the names of the schema's objects and an FNV-1a hash
    /// of their definitions are recorded; each open hashes those objects again. Objects a person
    /// added later (a view made in the `sqlite3` shell, say) are not the SDK's and are left out.
    private static func checkSchema(_ connection: Connection, migrated: Bool, now: Int64) throws {
        let key = "store.schema_hash"
        if !migrated, let recorded = try connection.scalar("SELECT value FROM main.sdk_state WHERE key = ?", [.text(key)])?.text {
            var lines = recorded.split(separator: "\n").map(String.init)
            let expected = lines.isEmpty ? "" : lines.removeFirst()
            let found = try schemaHash(connection, objects: lines)
            guard found == expected else {
                throw Damage(reason: "the schema in sqlite_master is not the one the migrations wrote (hash \(found), recorded \(expected))")
            }
            return
        }
        let objects = try connection.query("SELECT name FROM sqlite_master ORDER BY name").compactMap { $0[0].text }
        let value = ([try schemaHash(connection, objects: objects)] + objects).joined(separator: "\n")
        try connection.state.setValue(value, forKey: key, now: now)
    }

    /// FNV-1a 64 of the definitions of `objects`, in that order (a missing one counts as such).
    private static func schemaHash(_ connection: Connection, objects: [String]) throws -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for name in objects {
            let row = try connection.query("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master WHERE name = ?", [.text(name)]).first
            let definition = row.map { row in (0..<4).map { row[$0].text ?? "" }.joined(separator: "\u{1F}") } ?? "missing \(name)"
            for byte in (definition + "\u{1E}").utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        }
        return String(hash, radix: 16)
    }

    /// Refuses another application's database, and one written by a newer version of the SDK.
    static func refuseUnlessOurs(_ connection: Connection, path: String, migrator: Migrator) throws(StoreError) {
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
}
