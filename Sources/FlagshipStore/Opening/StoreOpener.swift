import CSQLite
import Foundation

/// The opening policy of a store, apart from the transaction facade it returns
/// (`FlagshipDatabase`): which file is opened (links followed, odd kinds and other applications'
/// files refused), how processes opening one file agree, when a damaged file is moved aside and
/// replaced, and when a store that cannot be written now is served read-only instead.
enum StoreOpener {
    typealias Opening = FlagshipDatabase.Opening
    typealias MovedAside = FlagshipDatabase.MovedAside

    /// `FlagshipDatabase.open`: see there.
    static func open(
        at url: URL,
        options: DatabaseOptions = DatabaseOptions(),
        migrator: Migrator = Migrator(),
        now: @escaping @Sendable () -> Date = Date.init
    ) throws -> FlagshipDatabase {
        let url = try StoreFiles.followingSymbolicLink(url)
        try StoreFiles.refuseUnlessRegularFile(at: url)
        do {
            return try openWritable(at: url, options: options, migrator: migrator, now: now)
        } catch {
            // A current store that cannot be written now (locked, read-only) still serves what it has.
            guard let reason = cannotWriteReason(error),
                  let store = try? openReadable(at: url, options: options, migrator: migrator, reason: reason)
            else { throw error }
            return store
        }
    }

    /// How long opening a current store waits for another process's write lock before it
    /// reads the file instead.
    package static let openingLockWaitMilliseconds: Int32 = 1_000

    /// Why `error` means the file cannot be written now (rather than that it is not ours or damaged).
    static func cannotWriteReason(_ error: any Error) -> String? {
        switch error as? StoreError {
        case .sqlite(let sqliteError)?:
            switch sqliteError.code {
            case SQLITE_BUSY: return "another process holds its write lock"
            case SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_IOERR:
                return "it cannot be written (\(sqliteError.message))"
            default: return nil
            }
        case .fileSystem(_, let reason)?:
            return "it cannot be written (\(reason))"
        default:
            return nil
        }
    }

    /// Opens a store for reading only, through SQLite's locks (another process may be writing
    /// it): only a Flagship store at this build's latest schema, whose steps are this build's.
    static func openReadable(at url: URL, options: DatabaseOptions, migrator: Migrator, reason: String) throws -> FlagshipDatabase {
        guard FileManager.default.fileExists(atPath: url.path) else { throw StoreError.fileSystem(path: url.path, reason: "no such file") }
        var readOptions = options
        readOptions.readOnly = true
        let database: Database
        do {
            database = try Database(path: url.path, options: readOptions)
        } catch {
            // A WAL file in a directory where no `-shm` can be made (mounted read-only, say) opens
            // only as immutable; with no `-wal` beside it and none creatable, no process writes it.
            let fileManager = FileManager.default
            guard !fileManager.fileExists(atPath: url.path + "-wal"), !fileManager.fileExists(atPath: url.path + "-shm"),
                  !StoreFiles.isOpenHere(url) else { throw error }
            readOptions.immutable = true
            database = try Database(path: url.path, options: readOptions)
        }
        do {
            try database.read { connection in
                try refuseUnlessOurs(connection, path: url.path, migrator: migrator)
                guard try connection.tableExists("schema_migrations"),
                      try Migrator.appliedVersion(connection) == migrator.latestVersion else {
                    throw StoreError.fileSystem(path: url.path, reason: "its schema is not current, and it cannot be migrated now")
                }
            }
        } catch {
            database.close(checkpoint: false)
            throw error
        }
        return FlagshipDatabase(database: database, schemaVersion: migrator.latestVersion,
                                opening: Opening(fromVersion: migrator.latestVersion, readOnly: reason))
    }

    /// `open`, writable: creates, migrates, moves a damaged file aside.
    ///
    /// Processes opening one file agree through `flock` on its directory (apart from SQLite's
    /// own `fcntl` locks): each holds a shared lock while it opens and judges the file, and
    /// one that finds it damaged takes the lock exclusively to move it aside. One process moves a
    /// damaged file aside; the others wait, see that the path names another file, and open that one,
    /// never moving aside the fresh store the first made, nor reading files being renamed.
    static func openWritable(
        at url: URL, options: DatabaseOptions, migrator: Migrator, now: @escaping @Sendable () -> Date, attempt: Int = 1
    ) throws -> FlagshipDatabase {
        let ours = StoreFiles.isOpenHere(url)
        // Another application's file, by its header alone, is refused before anything beside it moves.
        if !ours { try StoreFiles.refuseIfNotOursByHeader(url) }
        try StoreFiles.prepareFile(at: url)
        // The lock is taken on the directory: a descriptor of the database file itself, once
        // closed, would drop every POSIX lock this process holds on it, SQLite's included.
        let descriptor = Foundation.open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if descriptor >= 0 { _ = Foundation.close(descriptor) } }
        if descriptor >= 0 { _ = flock(descriptor, LOCK_SH) }
        let judged = StoreFiles.FileIdentity(path: url.path)
        let walSetAside = ours ? nil : try StoreFiles.setAsideForeignWAL(of: url, now: now())
        if !ours { try refuseIfNotOurs(url, migrator: migrator) }
        // The mark as it was before this open: the full check this open defers may mark the file
        // itself while the open ends, and what it finds is for the next start to act on.
        let marked = StoreFiles.damageMarked(at: url)
        do {
            let store = try openAndMigrate(path: url.path, options: options, migrator: migrator, now: now, walSetAside: walSetAside)
            // Acted on once open, so that the full check (due, as the session kept its row) names
            // the damaged page where it can.
            if let damage = marked {
                store.abandon()
                throw damage
            }
            return store
        } catch let damage as Damage {
            if descriptor >= 0 { _ = flock(descriptor, LOCK_EX) }
            guard judged == StoreFiles.FileIdentity(path: url.path) else {
                // Another process moved this file aside while this one judged it: open what is there now.
                guard attempt < 5 else {
                    throw StoreError.fileSystem(path: url.path, reason: "damaged (\(damage.reason)), and replaced by other processes \(attempt) times while opening")
                }
                if descriptor >= 0 { _ = flock(descriptor, LOCK_UN) }
                return try openWritable(at: url, options: options, migrator: migrator, now: now, attempt: attempt + 1)
            }
            let destination = try StoreFiles.moveAside(url, reason: damage.reason, now: now())
            try? FileManager.default.removeItem(atPath: url.path + StoreFiles.damageMarkSuffix)
            try StoreFiles.prepareFile(at: url)
            return try openAndMigrate(path: url.path, options: options, migrator: migrator, now: now,
                                      movedAside: MovedAside(url: destination, reason: damage.reason), walSetAside: walSetAside)
        }
    }

    /// `FlagshipDatabase.inMemory`: see there.
    static func inMemory(migrator: Migrator = Migrator(), now: @escaping @Sendable () -> Date = Date.init) throws -> FlagshipDatabase {
        try openAndMigrate(path: ":memory:", options: DatabaseOptions(), migrator: migrator, now: now)
    }

    /// `FlagshipDatabase.openForInspection`: see there.
    static func openForInspection(at url: URL, migrator: Migrator = Migrator()) throws -> FlagshipDatabase {
        let url = try StoreFiles.followingSymbolicLink(url)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError.fileSystem(path: url.path, reason: "no such file")
        }
        try StoreFiles.refuseUnlessRegularFile(at: url)
        let database: Database
        let scratch: URL?
        do {
            (database, scratch) = try readingWithoutWriting(url)
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
            return FlagshipDatabase(database: database, schemaVersion: version, opening: Opening(fromVersion: version, movedAside: nil),
                                    inspection: true, scratch: scratch)
        } catch {
            database.close(checkpoint: false)
            if let scratch { try? FileManager.default.removeItem(at: scratch) }
            throw Damage(error).map { StoreError.notAFlagshipDatabase(path: url.path, reason: $0.reason) } ?? error
        }
    }

    /// A read-only connection to `url` that writes nothing in or beside the file (see
    /// `openForInspection`), and the private directory of the copy it reads, if any.
    /// `copyingWAL`: a `-wal` holding transactions is read from a private copy even when a
    /// `-shm` lies beside it (a file moved aside: that `-shm` is a dead process's).
    static func readingWithoutWriting(_ url: URL, copyingWAL: Bool = false) throws -> (Database, scratch: URL?) {
        let fileManager = FileManager.default
        let walBytes = (try? fileManager.attributesOfItem(atPath: url.path + "-wal"))?[.size] as? NSNumber
        var scratch: URL?
        let path: String
        let options: DatabaseOptions
        if !copyingWAL, fileManager.fileExists(atPath: url.path + "-shm") || StoreFiles.isOpenHere(url) {
            (path, options) = (url.path, DatabaseOptions(readOnly: true))
        } else if let walBytes, walBytes.int64Value > 0 {
            let directory = try privateDirectory()
            scratch = directory
            let copy = directory.appendingPathComponent(url.lastPathComponent)
            do {
                try fileManager.copyItem(atPath: url.path, toPath: copy.path)
                try fileManager.copyItem(atPath: url.path + "-wal", toPath: copy.path + "-wal")
            } catch {
                try? fileManager.removeItem(at: directory)
                throw StoreError.fileSystem(path: url.path, reason: "cannot copy it and its -wal to read them: \(error.localizedDescription)")
            }
            (path, options) = (copy.path, DatabaseOptions(readOnly: true))
        } else {
            (path, options) = (url.path, DatabaseOptions(immutable: true))
        }
        do {
            return (try Database(path: path, options: options), scratch)
        } catch {
            if let scratch { try? fileManager.removeItem(at: scratch) }
            throw error
        }
    }

    /// Decides, before anything is written, whether an existing file is one `open` may write:
    /// another application's database, a newer store, or one whose steps are not this build's is
    /// refused here, left byte for byte with its `-wal` and `-shm` (a read-write connection would
    /// checkpoint the other application's last transactions into its file, and make a `-shm`).
    /// A file SQLite cannot read passes: `open` judges it damaged and moves it aside whole.
    static func refuseIfNotOurs(_ url: URL, migrator: Migrator) throws {
        let size = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
        guard size > 0, let (database, scratch) = try? readingWithoutWriting(url) else { return }
        defer {
            database.close(checkpoint: false)
            if let scratch { try? FileManager.default.removeItem(at: scratch) }
        }
        do {
            try database.read { try refuseUnlessOurs($0, path: url.path, migrator: migrator) }
        } catch let error as StoreError {
            switch error {
            case .notAFlagshipDatabase, .schemaTooNew, .migrationHistoryMismatch: throw error
            default: return
            }
        }
    }

    /// A new directory only this user can enter, in the temporary directory.
    static func privateDirectory() throws(StoreError) -> URL {
        var template = Array((NSTemporaryDirectory() + "/flagship-inspect-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        guard let made else {
            throw .fileSystem(path: NSTemporaryDirectory(), reason: "cannot create a private directory: \(String(cString: strerror(errno)))")
        }
        return URL(fileURLWithPath: made, isDirectory: true)
    }
}
