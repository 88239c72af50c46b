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
    private let fileIdentity: StoreFiles.FileIdentity?
    /// The private directory holding the copy an inspection reads, if it reads one.
    private let scratch: URL?
    /// The full check that opening deferred (`Opening.deferredCheck`), running or done.
    private let deferredCheck: DeferredCheck?
    /// Its outcome once known, and who waits to be told it.
    let deferredOutcome = Locked<(outcome: DeferredCheck.Outcome?, handlers: [@Sendable (DeferredCheck.Outcome) -> Void])>((nil, []))
    /// This store's entry in `openHere`, taken out at the first `close()`.
    private let registered: StoreFiles.FileIdentity?
    private let unregistered = Locked(false)
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
    init(database: Database, schemaVersion: Int, opening: Opening, sessionKey: String? = nil,
                 inspection: Bool = false, scratch: URL? = nil) {
        self.database = database
        self.schemaVersion = schemaVersion
        self.opening = opening
        self.sessionKey = sessionKey
        self.scratch = scratch
        fileIdentity = database.path == ":memory:" || inspection ? nil : StoreFiles.FileIdentity(path: database.path)
        registered = database.path == ":memory:" || database.options.immutable ? nil : StoreFiles.FileIdentity(path: database.path)
        if let registered { StoreFiles.openHere.insert(registered) }
        if fileIdentity != nil {
            let path = database.path
            database.onFirstDamage { error in StoreFiles.markDamaged(path: path, error: error) }
        }
        deferredCheck = opening.deferredCheck != nil && fileIdentity != nil
            ? Self.startDeferredCheck(of: database, reportingTo: deferredOutcome) : nil
    }

    // MARK: - Opening (the policy is `StoreOpener`'s)

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
        try StoreOpener.open(at: url, options: options, migrator: migrator, now: now)
    }

    /// A database that lives in memory only: the fallback when no file can be used.
    package static func inMemory(migrator: Migrator = Migrator(), now: @escaping @Sendable () -> Date = Date.init) throws -> FlagshipDatabase {
        try StoreOpener.inMemory(migrator: migrator, now: now)
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
        try StoreOpener.openForInspection(at: url, migrator: migrator)
    }

    // MARK: - Transactions

    /// `read` on the store's read-only connection, beside any write transaction of this process
    /// (`Database.readBesideWrites`): for lookups on the request path, which must not wait for a
    /// group commit.
    package func readBesideWrites<T>(_ body: (Connection) throws -> T) throws -> T {
        try database.readBesideWrites(body)
    }

    /// `readBesideWrites` from async code: on the read connection's own serial queue
    /// (`io.flagship.store.reader`), cancellable (`Database.readBesideWrites`).
    package func readBesideWrites<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await database.readBesideWrites(body)
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

    /// `Database.read` from async code: on the store's own serial queue, cancellable.
    package func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await database.read(body)
    }

    /// `Database.write` from async code: on the store's own serial queue, cancellable.
    @discardableResult
    package func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await database.write(body)
    }

    /// `work` (blocking calls on this store: several transactions, or work around one) on the
    /// store's own queue, after the async calls queued before it, whatever the caller's task becomes.
    package func queued<T: Sendable>(_ work: @escaping @Sendable (FlagshipDatabase) throws -> T) async throws -> T {
        try await database.queued { try work(self) }
    }

    /// The store's own queue as a task executor: for a task whose work blocks on this store, run
    /// in order with its async calls and never on a thread of Swift's cooperative pool.
    package var executor: SerialQueueExecutor { database.executor }

    /// Sets `work` going on the store's own queue, after the calls queued before it, and returns
    /// at once: for a wait bounded by a deadline (`firstOf`), which stops waiting, not the work.
    package func setGoing(_ work: @escaping @Sendable (FlagshipDatabase) -> Void) {
        database.executor.async { work(self) }
    }

    /// `Database.read` from async code, cancellable or not.
    package func read<T: Sendable>(cancellable: Bool, _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await database.read(cancellable: cancellable, body)
    }

    /// `Database.write` from async code, cancellable or not.
    @discardableResult
    package func write<T: Sendable>(cancellable: Bool, _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await database.write(cancellable: cancellable, body)
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

    /// Whether the path still names the file this store opened: `false` once it was deleted,
    /// moved, or replaced by another file (its directory removed, say) while open. Always `true`
    /// in memory. One `stat`: cheap enough to ask before each group commit.
    package var fileIsInPlace: Bool {
        guard let fileIdentity else { return true }
        return StoreFiles.FileIdentity(path: database.path) == fileIdentity
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
        guard let file, let fileIdentity, StoreFiles.FileIdentity(path: file) == fileIdentity else {
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
        if let registered, unregistered.setFirst() { StoreFiles.openHere.remove(registered) }
        if let scratch { try? FileManager.default.removeItem(at: scratch) }
    }

    /// Ends the session as a killed process would: the connection closed without a checkpoint,
    /// the session marker left in the file. For crash tests.
    package func abandon() {
        deferredCheck?.close()
        if let sessionKey { StoreSessions.forget(sessionKey) }
        database.close(checkpoint: false)
        if let registered, unregistered.setFirst() { StoreFiles.openHere.remove(registered) }
    }

    /// A store dropped without `close()` (a default cache handed to a custom manager, say) ends
    /// its session as cleanly as `close()` would.
    deinit {
        close()
    }
}

/// The file mode opening gives a small old file, and what `flagship db prune` gives any.
extension FlagshipDatabase {
    /// Files up to this size made before incremental auto-vacuum are switched to it at open.
    package static let vacuumAtOpenMaximumBytes: Int64 = 32 << 20

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
}
