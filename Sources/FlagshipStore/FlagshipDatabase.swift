import CSQLite
import Foundation

/// An open Flagship store: one SQLite file (or an in-memory database), migrated to the latest
/// schema. Its tables are reached from the connection of a transaction it opens:
/// `try store.read { try $0.visitors.visitor(id: id) }`, `try store.write { try $0.hits.insert(records) }`.
package final class FlagshipDatabase: Sendable {
    package let database: Database
    /// The schema version of the file once opened.
    package let schemaVersion: Int
    /// What opening did: created, upgraded, or replaced a damaged file.
    package let opening: Opening
    /// This session's marker in `sdk_state`, deleted by a clean `close()`.
    private let sessionKey: String?
    /// The device and inode of the file when it was opened (`nil` in memory): an open connection
    /// goes on writing to a file deleted under it, where no later start will find what it writes.
    private let fileIdentity: FileIdentity?
    /// The private directory holding the copy an inspection reads, if it reads one.
    private let scratch: URL?
    /// The full check that opening deferred (`Opening.deferredCheck`), running or done.
    private let deferredCheck: DeferredCheck?
    /// Its outcome once known, and who waits to be told it.
    let deferredOutcome = Locked<(outcome: DeferredCheck.Outcome?, handlers: [@Sendable (DeferredCheck.Outcome) -> Void])>((nil, []))
    /// This store's entry in `openHere`, taken out at the first `close()`.
    private let registered: FileIdentity?
    private let unregistered = OnceFlag()
    /// Visitors looked up and not yet recorded as seen: noted by the visitor cache's lookups,
    /// written by `recordSightings` and by each batch of `pruneVisitors`.
    package let sightings = VisitorSightings()

    package struct Opening: Sendable, Equatable {
        /// The schema version found in the file (0 for a new file).
        package var fromVersion: Int
        /// Where a damaged file was moved, with why it was judged damaged.
        package var movedAside: MovedAside?
        /// Why the whole file was checked (`PRAGMA quick_check`) before use; `nil` when the last
        /// session closed cleanly and the check was skipped, or when the file was too big to
        /// check before use (then `deferredCheck` says why).
        package var fullCheck: String?
        /// Why the whole file is checked after opening, in the background: a check was due (a
        /// crash) and the file is larger than `DatabaseOptions.fullCheckBeforeUseMaximumBytes`.
        /// Before use it got the bounded check (`boundedCheck`). The outcome: `onDeferredCheckEnded`.
        package var deferredCheck: String?
        /// Why the file was opened for reading only: another process held its write lock, or
        /// the file or its directory cannot be written. What it holds is served; nothing is
        /// written to it by this connection.
        package var readOnly: String?
        /// A `-wal` beside the file that is not this file's (garbage, or another database's, by
        /// its header), kept where it was moved instead of being overwritten by SQLite.
        package var walSetAside: MovedAside?
        /// What was copied from the damaged file moved aside (`movedAside`) into the new one,
        /// or why nothing could be.
        package var salvage: Result<Salvage, StoreError>?
        /// Whether opening switched a file made before incremental auto-vacuum to it (`VACUUM`,
        /// for a small file only: see `switchToIncrementalVacuumIfSmall`).
        package var switchedToIncrementalVacuum = false

        package init(fromVersion: Int, movedAside: MovedAside? = nil, walSetAside: MovedAside? = nil,
                     salvage: Result<Salvage, StoreError>? = nil, fullCheck: String? = nil, deferredCheck: String? = nil,
                     readOnly: String? = nil, switchedToIncrementalVacuum: Bool = false) {
            self.deferredCheck = deferredCheck
            self.switchedToIncrementalVacuum = switchedToIncrementalVacuum
            self.fromVersion = fromVersion
            self.salvage = salvage
            self.walSetAside = walSetAside
            self.movedAside = movedAside
            self.fullCheck = fullCheck
            self.readOnly = readOnly
        }
    }

    package struct MovedAside: Sendable, Equatable {
        package let url: URL
        package let reason: String
    }

    /// - Parameter inspection: a store opened to be read (`openForInspection`), which writes
    ///   nothing beside the file either (no damage marker); `scratch` is the private copy it reads,
    ///   removed at close.
    private init(database: Database, schemaVersion: Int, opening: Opening, sessionKey: String? = nil,
                 inspection: Bool = false, scratch: URL? = nil) {
        self.database = database
        self.schemaVersion = schemaVersion
        self.opening = opening
        self.sessionKey = sessionKey
        self.scratch = scratch
        fileIdentity = database.path == ":memory:" || inspection ? nil : FileIdentity(path: database.path)
        registered = database.path == ":memory:" || database.options.immutable ? nil : FileIdentity(path: database.path)
        if let registered { Self.openHere.insert(registered) }
        if fileIdentity != nil {
            let path = database.path
            database.onFirstDamage { error in Self.markDamaged(path: path, error: error) }
        }
        deferredCheck = opening.deferredCheck != nil && fileIdentity != nil
            ? Self.startDeferredCheck(of: database, reportingTo: deferredOutcome) : nil
    }

    // MARK: - Transactions

    /// `read` on the store's read-only connection, beside any write transaction of this process
    /// (`Database.readBesideWrites`): for lookups on the request path, which must not wait for a
    /// group commit.
    package func readBesideWrites<T>(_ body: (Connection) throws -> T) throws -> T {
        try database.readBesideWrites(body)
    }

    /// `Database.read`: `body` runs in one deferred transaction, its reads one snapshot.
    package func read<T>(_ body: (Connection) throws -> T) throws -> T {
        try database.read(body)
    }

    /// `Database.write`: `body` runs in one write transaction, committed whole or not at all.
    @discardableResult
    package func write<T>(_ body: (Connection) throws -> T) throws -> T {
        try database.write(body)
    }

    /// `Database.read` from async code: on the store's own serial queue.
    package func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await database.read(body)
    }

    /// `Database.write` from async code: on the store's own serial queue.
    @discardableResult
    package func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await database.write(body)
    }

    /// Every hit, oldest first, read in pages of `pageSize`, each page in a read transaction of
    /// its own: `body` sees one page at a time, outside any transaction, so memory stays bounded
    /// and no lock is held while it runs.
    package func forEachHitPage(pageSize: Int = 500, _ body: ([HitRecord]) throws -> Void) throws {
        var cursor: HitCursor?
        while true {
            let records = try read { try $0.hits.page(after: cursor, limit: max(1, pageSize)) }
            guard let last = records.last else { return }
            try body(records)
            cursor = HitCursor(after: last)
        }
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
        let url = try followingSymbolicLink(url)
        try refuseUnlessRegularFile(at: url)
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
    private static func cannotWriteReason(_ error: any Error) -> String? {
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
    private static func openReadable(at url: URL, options: DatabaseOptions, migrator: Migrator, reason: String) throws -> FlagshipDatabase {
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
                  !isOpenHere(url) else { throw error }
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
    private static func openWritable(
        at url: URL, options: DatabaseOptions, migrator: Migrator, now: @escaping @Sendable () -> Date, attempt: Int = 1
    ) throws -> FlagshipDatabase {
        let ours = isOpenHere(url)
        // Another application's file, by its header alone, is refused before anything beside it moves.
        if !ours { try refuseIfNotOursByHeader(url) }
        try prepareFile(at: url)
        // The lock is taken on the directory: a descriptor of the database file itself, once
        // closed, would drop every POSIX lock this process holds on it, SQLite's included.
        let descriptor = Foundation.open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if descriptor >= 0 { _ = Foundation.close(descriptor) } }
        if descriptor >= 0 { _ = flock(descriptor, LOCK_SH) }
        let judged = FileIdentity(path: url.path)
        let walSetAside = ours ? nil : try setAsideForeignWAL(of: url, now: now())
        if !ours { try refuseIfNotOurs(url, migrator: migrator) }
        do {
            let store = try openAndMigrate(path: url.path, options: options, migrator: migrator, now: now, walSetAside: walSetAside)
            // Checked once open, so that the full check (due, as the session kept its row) names
            // the damaged page where it can.
            if let damage = damageMarked(at: url) {
                store.abandon()
                throw damage
            }
            return store
        } catch let damage as Damage {
            if descriptor >= 0 { _ = flock(descriptor, LOCK_EX) }
            guard judged == FileIdentity(path: url.path) else {
                // Another process moved this file aside while this one judged it: open what is there now.
                guard attempt < 5 else {
                    throw StoreError.fileSystem(path: url.path, reason: "damaged (\(damage.reason)), and replaced by other processes \(attempt) times while opening")
                }
                if descriptor >= 0 { _ = flock(descriptor, LOCK_UN) }
                return try openWritable(at: url, options: options, migrator: migrator, now: now, attempt: attempt + 1)
            }
            let destination = try moveAside(url, reason: damage.reason, now: now())
            try? FileManager.default.removeItem(atPath: url.path + damageMarkSuffix)
            try prepareFile(at: url)
            return try openAndMigrate(path: url.path, options: options, migrator: migrator, now: now,
                                      movedAside: MovedAside(url: destination, reason: damage.reason), walSetAside: walSetAside)
        }
    }

    /// A database that lives in memory only: the fallback when no file can be used.
    package static func inMemory(migrator: Migrator = Migrator(), now: @escaping @Sendable () -> Date = Date.init) throws -> FlagshipDatabase {
        try openAndMigrate(path: ":memory:", options: DatabaseOptions(), migrator: migrator, now: now)
    }

    /// Opens an existing store for reading only, writing nothing at all: the file is never
    /// changed, and no `-wal`, `-shm` or marker is created beside it, so it works on a read-only
    /// file or in a read-only directory. A file that is not a Flagship database (or is newer than
    /// this build) is refused.
    ///
    /// How it reads depends on what lies beside the file:
    /// - a `-shm`: a process has it open (or died with it open): read through SQLite's locks and
    ///   that shared index, which sees every committed transaction;
    /// - a `-wal` holding transactions, and no `-shm`: no process has it open, and the last one did
    ///   not checkpoint; the file and its `-wal` are copied to a private directory (0700), read
    ///   there, and the copy is removed at close;
    /// - neither: read as immutable (no lock, nothing created).
    package static func openForInspection(at url: URL, migrator: Migrator = Migrator()) throws -> FlagshipDatabase {
        let url = try followingSymbolicLink(url)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw StoreError.fileSystem(path: url.path, reason: "no such file")
        }
        try refuseUnlessRegularFile(at: url)
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
        if !copyingWAL, fileManager.fileExists(atPath: url.path + "-shm") || isOpenHere(url) {
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
    private static func refuseIfNotOurs(_ url: URL, migrator: Migrator) throws {
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
    private static func privateDirectory() throws(StoreError) -> URL {
        var template = Array((NSTemporaryDirectory() + "/flagship-inspect-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        guard let made else {
            throw .fileSystem(path: NSTemporaryDirectory(), reason: "cannot create a private directory: \(String(cString: strerror(errno)))")
        }
        return URL(fileURLWithPath: made, isDirectory: true)
    }

    /// Whether the path still names the file this store opened: `false` once it was deleted,
    /// moved, or replaced by another file (its directory removed, say) while open. Always `true`
    /// in memory. One `stat`: cheap enough to ask before each group commit.
    package var fileIsInPlace: Bool {
        guard let fileIdentity else { return true }
        return FileIdentity(path: database.path) == fileIdentity
    }

    /// Runs `body` on `handle`, a connection another program (an app keeping its own tables in
    /// this file) opened to this file and holds a transaction on: what `body` writes commits or
    /// rolls back with that program's rows. `body` runs in a savepoint, so a failure leaves the
    /// transaction as it was. Refused when no transaction is open on the handle, when it reads
    /// another file, or when it cannot write (`StoreError.foreignConnection`).
    package func writeThrough<T>(_ handle: OpaquePointer, _ body: (Connection) throws -> T) throws -> T {
        let path = database.path
        guard sqlite3_get_autocommit(handle) == 0 else {
            throw StoreError.foreignConnection(path: path, refusal: .notInTransaction)
        }
        let file = sqlite3_db_filename(handle, "main").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        guard let file, let fileIdentity, FileIdentity(path: file) == fileIdentity else {
            throw StoreError.foreignConnection(path: path, refusal: .anotherFile(file))
        }
        guard sqlite3_db_readonly(handle, "main") == 0 else {
            throw StoreError.foreignConnection(path: path, refusal: .readOnly)
        }
        return try Connection.borrowing(handle) { connection in try connection.savepoint(body) }
    }

    /// Whether this store lives in memory only: nothing written to it survives the process.
    package var isInMemory: Bool {
        database.path == ":memory:"
    }

    /// Closes the connection, first marking the session as closed cleanly, unless a statement
    /// met a damaged page: then the marker stays and the next open checks the whole file.
    /// Safe to call more than once.
    package func close() {
        deferredCheck?.close()
        if let sessionKey, !database.hasMetDamage {
            try? database.write { try StoreSessions.end(sessionKey, in: $0) }
        }
        if let sessionKey { StoreSessions.forget(sessionKey) }
        database.close()
        if let registered, unregistered.claim() { Self.openHere.remove(registered) }
        if let scratch { try? FileManager.default.removeItem(at: scratch) }
    }

    /// Ends the session as a killed process would: the connection closed without a checkpoint,
    /// the session marker left in the file. For crash tests.
    package func abandon() {
        deferredCheck?.close()
        if let sessionKey { StoreSessions.forget(sessionKey) }
        database.close(checkpoint: false)
        if let registered, unregistered.claim() { Self.openHere.remove(registered) }
    }

    /// A store dropped without `close()` (a default cache handed to a custom manager, say) ends
    /// its session as cleanly as `close()` would.
    deinit {
        close()
    }

    // MARK: - Opening

    /// The files this process has open through SQLite, by identity, with how many stores each.
    ///
    /// A file open here is read only through SQLite's shared descriptors: any descriptor of our
    /// own on it (an immutable connection's included), once closed, would drop every POSIX lock
    /// this process holds on the file, SQLite's own, and another process could then checkpoint
    /// and delete the WAL under the open store. Such a file needs no probe either: it is ours.
    private static let openHere = OpenFiles()

    private final class OpenFiles: @unchecked Sendable {
        // `@unchecked`: `counts` is only touched under `lock`.
        private let lock = NSLock()
        private var counts: [FileIdentity: Int] = [:]

        func insert(_ file: FileIdentity) { lock.withLock { counts[file, default: 0] += 1 } }
        func remove(_ file: FileIdentity) {
            lock.withLock {
                counts[file, default: 1] -= 1
                if counts[file] == 0 { counts[file] = nil }
            }
        }
        func contains(_ file: FileIdentity?) -> Bool { file.map { file in lock.withLock { counts[file] != nil } } ?? false }
    }

    /// Whether this process has the file at `url` open through SQLite.
    static func isOpenHere(_ url: URL) -> Bool {
        openHere.contains(FileIdentity(path: url.path))
    }

    /// A file as the kernel knows it, whatever its name.
    fileprivate struct FileIdentity: Hashable {
        let device: UInt64
        let inode: UInt64

        init?(path: String) {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }

    }

    /// A file judged damaged: what `open` moves aside.
    struct Damage: Error {
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
        movedAside: MovedAside? = nil, walSetAside: MovedAside? = nil
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
            var deferred: String?
            if let reason = findings?.reasonForFullCheck {
                if fileBytes(path) <= options.fullCheckBeforeUseMaximumBytes {
                    try fullCheck(database)
                } else {
                    try boundedCheck(database)
                    deferred = reason
                }
            }
            try chooseIncrementalVacuumIfNew(database)
            if !inMemory { try enterWAL(database) }
            let outcome = try migrator.migrate(database, now: now)
            let beginSession = {
                try database.write { connection -> String? in
                    try connection.hits.recount()
                    guard let findings else { return nil }
                    try checkSchema(connection, migrated: outcome.fromVersion < outcome.toVersion, now: now().unixMilliseconds)
                    return try StoreSessions.begin(connection, after: findings, checkDeferred: deferred != nil, now: now().unixMilliseconds)
                }
            }
            // A current file can be served read-only: when another process holds the write lock,
            // the session's first write waits a second, not the whole busy timeout, before `open`
            // falls back to reading it.
            let sessionKey = outcome.fromVersion == outcome.toVersion && !inMemory
                ? try database.withBusyTimeout(min(openingLockWaitMilliseconds, options.busyTimeoutMilliseconds), beginSession)
                : try beginSession()
            // What the damaged file still holds goes into the new one (never a reason to fail).
            let salvage = movedAside.map { movedAside in
                Result { () throws(StoreError) -> Salvage in
                    do {
                        return try Salvage.copy(from: movedAside.url, into: database, now: now())
                    } catch let error as StoreError {
                        throw error
                    } catch {
                        throw .fileSystem(path: movedAside.url.path, reason: "\(error)")
                    }
                }
            }
            let switched = !inMemory && switchToIncrementalVacuumIfSmall(database)
            try database.zeroFreedPagesAtErasureOnly()
            // From here on, no commit waits for a checkpoint, and a lookup for no write.
            if !inMemory {
                try database.checkpointInBackground()
                database.openReader()
            }
            return FlagshipDatabase(database: database, schemaVersion: outcome.toVersion,
                                    opening: Opening(fromVersion: outcome.fromVersion, movedAside: movedAside, walSetAside: walSetAside,
                                                     salvage: salvage,
                                                     fullCheck: deferred == nil ? findings?.reasonForFullCheck : nil,
                                                     deferredCheck: deferred,
                                                     switchedToIncrementalVacuum: switched),
                                    sessionKey: sessionKey)
        } catch {
            let damage = error as? Damage ?? Damage(error)
            // A damaged file is moved aside as found: no checkpoint into it, its WAL kept.
            // A refused file is left as found too: no checkpoint of another application's WAL.
            let refused: Bool
            switch error as? StoreError {
            case .notAFlagshipDatabase?, .schemaTooNew?, .migrationHistoryMismatch?: refused = true
            default: refused = false
            }
            database.close(checkpoint: damage == nil && !refused)
            throw damage ?? error
        }
    }

    /// A file without tables yet (new, or emptied) gets incremental auto-vacuum, which SQLite lets
    /// a file choose only before its first table: pages freed by a prune can then be given back
    /// (`returnFreePages`) instead of staying in the file for ever. Two processes creating one
    /// file both ask for it, so whichever creates the tables, the file has it.
    private static func chooseIncrementalVacuumIfNew(_ database: Database) throws {
        try database.withConnection { connection in
            guard try connection.scalar("SELECT count(*) FROM sqlite_master")?.int64 == 0 else { return }
            try connection.query("PRAGMA auto_vacuum = INCREMENTAL")
        }
    }

    /// Files up to this size made before incremental auto-vacuum are switched to it at open.
    package static let vacuumAtOpenMaximumBytes: Int64 = 32 << 20

    /// A file made before incremental auto-vacuum switches to it only through a `VACUUM`, which
    /// rewrites the whole file and holds the write lock meanwhile: not inside a migration's
    /// transaction (SQLite refuses), nor in the background (group commits would wait for it).
    /// It runs here, once, after migrating and before the SDK serves anything, for a file of at
    /// most `vacuumAtOpenMaximumBytes` (a fraction of a second); a larger one keeps its mode, its
    /// freed pages reused by later rows rather than given back, until `flagship db prune` switches
    /// it by hand. Best effort: another process's write lock (waited for 100 ms) or a full disk
    /// leaves the file as it was, to be tried at the next open. Returns whether it switched.
    private static func switchToIncrementalVacuumIfSmall(_ database: Database) -> Bool {
        let size = ((try? FileManager.default.attributesOfItem(atPath: database.path))?[.size] as? NSNumber)?.int64Value ?? .max
        guard size <= vacuumAtOpenMaximumBytes else { return false }
        return (try? database.withBusyTimeout(100) { try switchToIncrementalVacuum(database) }) ?? false
    }

    /// Switches the file to incremental auto-vacuum (a `VACUUM`, the whole file rewritten) unless
    /// it is in it already; the WAL is then checkpointed, so that the file shrinks now. Returns
    /// whether it switched. For `flagship db prune`, which does it whatever the size.
    @discardableResult
    package static func switchToIncrementalVacuum(_ database: Database) throws -> Bool {
        let switched = try database.withConnection { connection -> Bool in
            guard try connection.scalar("PRAGMA auto_vacuum")?.int64 != AutoVacuum.incremental.rawValue else { return false }
            try connection.query("PRAGMA auto_vacuum = INCREMENTAL")
            try connection.query("VACUUM")
            return try connection.scalar("PRAGMA auto_vacuum")?.int64 == AutoVacuum.incremental.rawValue
        }
        if switched {
            _ = try? database.zeroFreedPagesAtErasureOnly()
            _ = try? database.eraseWALHistory()
        }
        return switched
    }

    /// Switches the file to WAL, a mode it keeps: a file already in it is left alone (no write
    /// lock taken). The switch needs the file to itself, and SQLite answers `SQLITE_BUSY` at once,
    /// without its busy handler, when another connection is reading it (several processes opening
    /// one new file together): the switch is tried again, within the busy timeout.
    private static func enterWAL(_ database: Database) throws {
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

    /// Beside the file, `<name>-damaged` says a statement met SQLite's `SQLITE_CORRUPT` in it. A
    /// file of its own, written the moment the damage is met: a row in the damaged file might not
    /// be writable, and `quick_check` does not compare indexes with their tables (what statements
    /// most often trip on), so the next open trusts SQLite's word and moves the file aside.
    private static let damageMarkSuffix = "-damaged"

    private static func markDamaged(path: String, error: SQLiteError) {
        markDamaged(path: path, note: "a statement met a damaged page: \(error.message)")
    }

    static func markDamaged(path: String, note text: String) {
        let note = Data((text + "\n").utf8)
        // Best effort: without it, the session's row left in the file still brings a `quick_check`.
        _ = FileManager.default.createFile(atPath: path + damageMarkSuffix, contents: note, attributes: [.posixPermissions: 0o600])
    }

    /// The damage a session recorded beside the file, if any.
    private static func damageMarked(at url: URL) -> Damage? {
        guard let note = FileManager.default.contents(atPath: url.path + damageMarkSuffix) else { return nil }
        let text = String(decoding: note, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Damage(reason: text.isEmpty ? "a statement met a damaged page" : text)
    }

    /// A store path that is a symbolic link names the file it points to: that file is opened,
    /// checked, and (if damaged) moved aside and replaced, never the link itself, which would
    /// strand the target's hits. A link whose target does not exist is refused rather than
    /// followed: creating the store there would put a file wherever the link points.
    private static func followingSymbolicLink(_ url: URL) throws(StoreError) -> URL {
        var status = stat()
        guard lstat(url.path, &status) == 0, status.st_mode & S_IFMT == S_IFLNK else { return url }
        guard let resolved = realpath(url.path, nil) else {
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) ?? "?"
            throw .fileSystem(path: url.path, reason: "it is a symbolic link to \(target), which does not exist: create the store at the link's target, or give its path")
        }
        defer { free(resolved) }
        return URL(fileURLWithPath: String(cString: resolved))
    }

    /// A FIFO, a directory, a socket or a device at the store path is refused at once: SQLite would
    /// block opening a FIFO (no writer ever comes) or fail later with a vaguer error. The path's
    /// target is judged (`stat` follows a symbolic link); a path that does not exist yet passes.
    private static func refuseUnlessRegularFile(at url: URL) throws(StoreError) {
        var status = stat()
        guard stat(url.path, &status) == 0 else { return }
        let kind: String
        switch status.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: kind = "a directory"
        case S_IFIFO: kind = "a FIFO (named pipe)"
        case S_IFSOCK: kind = "a socket"
        case S_IFCHR: kind = "a character device"
        case S_IFBLK: kind = "a block device"
        default: kind = "not a regular file"
        }
        throw .fileSystem(path: url.path, reason: "it is \(kind), not a store file: give the path of a regular file (or of none yet)")
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
        let destination = freeName(url.path + ".corrupt-", now: now)
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

    /// `<prefix><UTC timestamp>`, or with `-2`, `-3`... when that name is taken.
    private static func freeName(_ prefix: String, now: Date) -> URL {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss.SSS'Z'"
        let stamp = formatter.string(from: now)
        var destination = URL(fileURLWithPath: prefix + stamp)
        var attempt = 1
        while FileManager.default.fileExists(atPath: destination.path) {
            attempt += 1
            destination = URL(fileURLWithPath: prefix + stamp + "-\(attempt)")
        }
        return destination
    }

    /// A `-wal` beside a file no process has open (no `-shm`) that cannot be this file's: too
    /// short for a header, not a WAL header, a header whose checksum fails, or pages of another
    /// size than the file's. SQLite would treat it as empty and overwrite it at the first write,
    /// so it is moved to `<name>-wal.unreadable-<timestamp>`, kept byte for byte, and reported.
    /// (A valid WAL of another database with the same page size cannot be told apart by its header.)
    private static func setAsideForeignWAL(of url: URL, now: Date) throws -> MovedAside? {
        let fileManager = FileManager.default
        let wal = url.path + "-wal"
        // A connection using the WAL maps the -shm before it writes the WAL's header (in one
        // 32-byte write): a -wal without a -shm and with a header is no live connection's.
        guard !fileManager.fileExists(atPath: url.path + "-shm"), let handle = FileHandle(forReadingAtPath: wal) else { return nil }
        let header = (try? handle.read(upToCount: 32)) ?? Data()
        try? handle.close()
        guard !header.isEmpty, let reason = foreignWALReason(header: header, databasePageSize: databasePageSize(url)),
              !fileManager.fileExists(atPath: url.path + "-shm") else { return nil }
        let destination = freeName(wal + ".unreadable-", now: now)
        do {
            try fileManager.moveItem(atPath: wal, toPath: destination.path)
        } catch where !fileManager.fileExists(atPath: wal) {
            // Another process opening the store set it aside first.
            return nil
        } catch {
            throw StoreError.fileSystem(path: wal, reason: "not this store's WAL (\(reason)) and could not be moved aside: \(error.localizedDescription)")
        }
        return MovedAside(url: destination, reason: reason)
    }

    /// Why a WAL header (its first 32 bytes) cannot be the WAL of a file of `databasePageSize`.
    static func foreignWALReason(header: Data, databasePageSize: Int?) -> String? {
        guard header.count >= 32 else { return "it is \(header.count) bytes, shorter than a WAL header" }
        let bytes = [UInt8](header.prefix(32))
        func word(_ offset: Int, bigEndian: Bool = true) -> UInt32 {
            let slice = bytes[offset..<(offset + 4)].map(UInt32.init)
            return bigEndian ? slice[0] << 24 | slice[1] << 16 | slice[2] << 8 | slice[3]
                             : slice[3] << 24 | slice[2] << 16 | slice[1] << 8 | slice[0]
        }
        let magic = word(0)
        guard magic == 0x377F_0682 || magic == 0x377F_0683 else { return "it does not start like a SQLite WAL" }
        // SQLite's checksum over the first 24 bytes, in the byte order the magic names.
        let bigEndian = magic & 1 == 1
        var (s0, s1): (UInt32, UInt32) = (0, 0)
        for offset in stride(from: 0, to: 24, by: 8) {
            s0 = s0 &+ word(offset, bigEndian: bigEndian) &+ s1
            s1 = s1 &+ word(offset + 4, bigEndian: bigEndian) &+ s0
        }
        guard s0 == word(24), s1 == word(28) else { return "its header checksum does not match" }
        let pageSize = Int(word(8))
        if let databasePageSize, pageSize != databasePageSize {
            return "its pages are \(pageSize) bytes, the file's \(databasePageSize): it belongs to another database"
        }
        return nil
    }

    /// Refuses a file whose header names another application (`PRAGMA application_id`, at
    /// offset 68), reading those bytes only.
    private static func refuseIfNotOursByHeader(_ url: URL) throws(StoreError) {
        guard let applicationID = headerValue("PRAGMA application_id", of: url) else { return }
        guard applicationID == 0 || applicationID == Int64(Migrator.applicationID) else {
            throw .notAFlagshipDatabase(path: url.path, reason: "its application_id is \(applicationID), not Flagship's (\(Migrator.applicationID))")
        }
    }

    /// The page size in a database file's header; `nil` for a file that has none.
    private static func databasePageSize(_ url: URL) -> Int? {
        guard (((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0) >= 100 else { return nil }
        return headerValue("PRAGMA page_size", of: url).map(Int.init)
    }

    /// A value of the file's header, read through SQLite as an immutable file (its WAL ignored).
    /// Never through a descriptor of our own: closing any descriptor of a file drops every POSIX
    /// lock this process holds on it, SQLite's included (SQLite's own descriptors are shared and
    /// their closing deferred for this reason).
    private static func headerValue(_ pragma: String, of url: URL) -> Int64? {
        guard FileManager.default.fileExists(atPath: url.path),
              let database = try? Database(path: url.path, options: DatabaseOptions(immutable: true)) else { return nil }
        defer { database.close(checkpoint: false) }
        return (try? database.withConnection { try $0.scalar(pragma) })??.int64
    }
}

/// A flag that can be claimed once, from any thread.
private final class OnceFlag: @unchecked Sendable {
    // `@unchecked`: `claimed` is only touched under `lock`.
    private let lock = NSLock()
    private var claimed = false

    /// `true` the first time only.
    func claim() -> Bool {
        lock.withLock {
            defer { claimed = true }
            return !claimed
        }
    }
}
