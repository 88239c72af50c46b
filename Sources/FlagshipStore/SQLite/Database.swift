import CSQLite
import Foundation

/// The serialising owner of one SQLite connection: safe to share between threads and tasks.
///
/// Every access goes through `read` or `write`, which hold a lock for the length of the closure
/// and nothing else: no network, no callback into SDK users. The lock is not reentrant: a closure
/// that calls back into the same `Database` gets `StoreError.reentrantAccess` at once instead of
/// a deadlock. To make several operations one transaction, run them on the `Connection` the closure
/// receives (its record stores, `db.hits`, `db.visitors`..., open none of their own), or nest them
/// in `Connection.savepoint`.
///
/// ```swift
/// let count = try database.read { try $0.scalar("SELECT count(*) FROM main.hits")?.int64 }
/// ```
package final class Database: @unchecked Sendable {
    /// `":memory:"` for an in-memory database.
    package let path: String
    package let options: DatabaseOptions
    // NSLock rather than Synchronization.Mutex: the thread sanitizer sees it.
    private let lock = NSLock()
    private var connection: Connection?
    /// The thread inside `withConnection`, if any: read and written under `holderLock`, so that a
    /// nested call is told apart from another thread waiting its turn.
    private let holderLock = NSLock()
    private var holder: pthread_t?
    /// Whether SQLite has said, since opening, that the file is corrupt (under `holderLock`).
    private var damageMet = false
    /// Told the first time a statement finds the file damaged (under `holderLock`).
    private var damageHandlers: [@Sendable (SQLiteError) -> Void] = []
    /// Kept alive while SQLite's trace hook points at it (under `lock`).
    private var tracer: StatementTracer?
    /// A read-only connection for reads that must not wait behind a write transaction, once
    /// `openReader()` opened it; under its own lock, never under `lock`.
    private let reader = Locked<ReaderConnection?>(nil)
    /// Runs the WAL's checkpoints off the committing thread, once `checkpointInBackground()` set
    /// it up; under its own lock, so that a damaged read on the reader can stop it too.
    let checkpointer = Locked<BackgroundCheckpointer?>(nil)
    /// The store's own serial queue as a task executor: where the async forms of `read` and
    /// `write` run (`Database+Async.swift`), and the tasks that block on this store (the SDK's
    /// writer, its group commits).
    package let executor = SerialQueueExecutor(StoreThreads.queue("io.flagship.store.database"))
    /// The store's own serial queue (`executor`'s).
    var queue: DispatchQueue { executor.queue }
    /// The read connection's serial queue: where the awaited reads beside the writes run
    /// (`readBesideWrites` from async code), one after the other, as the connection allows.
    let readerExecutor = SerialQueueExecutor(StoreThreads.queue("io.flagship.store.reader"))
    /// What a cancelled async call's statements are interrupted through.
    let interrupter = StatementInterrupter()
    /// The same, for the awaited reads beside the writes (`readerExecutor`).
    let readerInterrupter = StatementInterrupter()

    package init(path: String, options: DatabaseOptions = DatabaseOptions()) throws(StoreError) {
        self.path = path
        self.options = options
        var handle: OpaquePointer?
        var flags = (options.readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        var name = path
        if options.immutable {
            flags |= SQLITE_OPEN_URI
            name = Self.immutableURI(path)
        }
        let code = sqlite3_open_v2(name, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let error = SQLiteError(code: code, handle: handle, sql: nil)
            sqlite3_close_v2(handle)
            throw .sqlite(error)
        }
        let connection = Connection(handle: handle)
        do {
            try Self.configure(connection, options: options)
        } catch {
            // The file may be damaged: leave it and its WAL exactly as found.
            connection.close(checkpoint: false)
            throw error
        }
        self.connection = connection
    }

    /// `file:<path>?mode=ro&immutable=1`, the path percent-encoded as SQLite's URIs want.
    private static func immutableURI(_ path: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        let encoded = path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
        return "file:\(encoded)?mode=ro&immutable=1"
    }

    private static func configure(_ connection: Connection, options: DatabaseOptions) throws(StoreError) {
        sqlite3_busy_timeout(connection.handle, options.busyTimeoutMilliseconds)
        sqlite3_extended_result_codes(connection.handle, 1)
        // The first statement to touch the file: a file that is not a database fails here.
        try connection.query("PRAGMA foreign_keys = ON")
        if options.readOnly {
            try connection.query("PRAGMA query_only = ON")
            _ = try connection.scalar("SELECT count(*) FROM sqlite_master")
        } else {
            try connection.query("PRAGMA synchronous = \(options.synchronous.rawValue)")
            // Deleted rows are overwritten with zeros, not just unlinked: a visitor erased
            // (consent withdrawn) leaves no bytes behind in free space. See `eraseWALHistory()`;
            // a file in incremental auto-vacuum zeroes freed pages only at an erasure
            // (`zeroFreedPagesAtErasureOnly()`).
            try connection.query("PRAGMA secure_delete = ON")
            // Statement journals (a multi-row DELETE's undo) stay in memory instead of spilling
            // to a file in /var/tmp: one write per row fewer.
            try connection.query("PRAGMA temp_store = MEMORY")
            // Negative: KiB rather than pages. Memory is taken as pages are used, up to this.
            try connection.query("PRAGMA cache_size = -\(max(64, options.writerCacheKibibytes))")
        }
    }

    /// Runs `body` with the connection, serialised with every other access, in a deferred
    /// transaction so that several statements see one snapshot.
    package func read<T>(_ body: (Connection) throws -> T) throws -> T {
        try withConnection { try $0.transaction(immediate: false, body) }
    }

    /// Runs `body` in one write transaction: all of it is committed, or none of it.
    ///
    /// A write that found the file locked for the whole busy timeout (another process holding a
    /// write transaction) shortens the wait of the writes after it to `contendedBusyTimeout`, until
    /// one commits: a store locked for minutes costs one full wait, not one per statement, and a
    /// caller that keeps what it could not write (the tracking manager) stays responsive.
    @discardableResult
    package func write<T>(_ body: (Connection) throws -> T) throws -> T {
        try withConnection { connection in
            do {
                let result = try connection.transaction(immediate: true, body)
                if contended {
                    contended = false
                    sqlite3_busy_timeout(connection.handle, options.busyTimeoutMilliseconds)
                }
                return result
            } catch StoreError.sqlite(let error) where error.code == SQLITE_BUSY {
                if !contended {
                    contended = true
                    sqlite3_busy_timeout(connection.handle, min(Self.contendedBusyTimeout, options.busyTimeoutMilliseconds))
                }
                throw StoreError.sqlite(error)
            }
        }
    }

    /// Runs `body` with writes waiting at most `milliseconds` for the lock (the configured busy
    /// timeout is back afterwards): for a write that may be skipped when the file is busy.
    package func withBusyTimeout<T>(_ milliseconds: Int32, _ body: () throws -> T) throws -> T {
        try withConnection { sqlite3_busy_timeout($0.handle, milliseconds) }
        defer {
            _ = try? withConnection { connection in
                sqlite3_busy_timeout(connection.handle, contended ? min(Self.contendedBusyTimeout, options.busyTimeoutMilliseconds)
                                                                  : options.busyTimeoutMilliseconds)
            }
        }
        return try body()
    }

    /// Tells `handler` the text of every statement this connection runs, `BEGIN` and `COMMIT`
    /// included, through SQLite's trace hook (`sqlite3_trace_v2`); `nil` removes the hook. For
    /// tests that check which transactions a piece of work opens.
    package func traceStatements(_ handler: (@Sendable (String) -> Void)?) throws {
        try withConnection { connection in
            tracer = handler.map(StatementTracer.init)
            guard let tracer else {
                sqlite3_trace_v2(connection.handle, 0, nil, nil)
                return
            }
            // The text SQLite passes with each event: a statement's SQL as prepared, or, for each
            // trigger it fires, "-- TRIGGER <name>" (`sqlite3_sql` would name the outer statement
            // again for every trigger step).
            sqlite3_trace_v2(connection.handle, UInt32(SQLITE_TRACE_STMT), { _, context, _, text in
                guard let context, let text else { return 0 }
                Unmanaged<StatementTracer>.fromOpaque(context).takeUnretainedValue()
                    .handler(String(cString: text.assumingMemoryBound(to: CChar.self)))
                return 0
            }, Unmanaged.passUnretained(tracer).toOpaque())
        }
    }

    /// How long a write waits for the lock after one found it held for the whole busy timeout.
    package static let contendedBusyTimeout: Int32 = 200

    /// Accesses that found the connection held by another thread and waited for it, since
    /// opening (under `holderLock`).
    private var waitsForConnection = 0

    /// How many accesses of this process have waited for the connection so far: background work
    /// in batches compares it before and after a batch to learn whether it kept a caller waiting
    /// (`FlagshipDatabase.Pacing`).
    package var connectionWaits: Int {
        holderLock.withLock { waitsForConnection }
    }

    /// Whether the last write found the file locked (read and written under `lock`).
    private var contended = false

    /// Whether the last write found the file locked for the whole busy timeout, so that writes
    /// now wait `contendedBusyTimeout` at most.
    package var isContended: Bool {
        (try? withConnection { _ in contended }) ?? false
    }

    /// Runs `body` with the connection and no transaction around it (pragmas, migrations that
    /// manage their own transactions).
    @discardableResult
    package func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        let me = pthread_self()
        let nested = holderLock.withLock { holder.map { pthread_equal($0, me) != 0 } ?? false }
        guard !nested else { throw StoreError.reentrantAccess(path: path) }
        if !lock.try() {
            holderLock.withLock { waitsForConnection &+= 1 }
            lock.lock()
        }
        holderLock.withLock { holder = me }
        defer {
            holderLock.withLock { holder = nil }
            lock.unlock()
        }
        guard let connection else { throw StoreError.closed }
        do {
            return try body(connection)
        } catch {
            reportDamage(in: error)
            throw error
        }
    }

    /// An error saying the file is damaged: no checkpoint copies anything into it any more (it is
    /// moved aside as found), and the damage handlers are told, the first time.
    private func reportDamage(in error: any Error) {
        guard case .sqlite(let sqliteError)? = error as? StoreError, sqliteError.meansFileIsDamaged else { return }
        checkpointer.withLock { $0 }?.stop()
        let handlers = holderLock.withLock { () -> [@Sendable (SQLiteError) -> Void] in
            defer { damageMet = true }
            return damageMet ? [] : damageHandlers
        }
        for handler in handlers { handler(sqliteError) }
    }

    /// Checkpoints the write-ahead log and truncates it to zero bytes. Call it after deleting
    /// personal data: with `secure_delete` the database file keeps no trace of deleted rows, but
    /// the WAL still holds the page images written before the deletion until it is truncated.
    /// Returns `false` when another connection's read in progress (another process's, after
    /// waiting the busy timeout) kept the WAL from being emptied: the old pages then stay in it
    /// until a later checkpoint, at the latest when the last connection to the file closes.
    /// Another checkpoint under way (the background checkpointer's, or another process's) is
    /// waited for, up to the busy timeout, as a read is.
    ///
    /// In `secure_delete = FAST` (`zeroFreedPagesAtErasureOnly()`), rows deleted earlier may have
    /// left whole pages on the free list unzeroed: those pages are given back first
    /// (`PRAGMA incremental_vacuum`, every free page filled by a page moved from the file's end,
    /// which the checkpoint then cuts off), so the file keeps no free page at all.
    @discardableResult
    package func eraseWALHistory() throws -> Bool {
        try withConnection { connection in
            if try connection.scalar("PRAGMA secure_delete")?.int64 == 2,
               try connection.scalar("PRAGMA freelist_count")?.int64 ?? 0 > 0 {
                try connection.query("PRAGMA incremental_vacuum")
            }
            return try connection.checkpointTruncatingWAL(waitingUpTo: self.options.busyTimeoutMilliseconds)
        }
    }

    /// Deleted content is still overwritten inside the pages a deletion writes anyway, but a page
    /// freed whole goes to the free list as it is, not written again full of zeros
    /// (`secure_delete = FAST`): in the soak, the zeroed pages were a fifth of what the SQLite
    /// file took in per visitor, for hits delivered and deleted. The erasure of a visitor gives the
    /// free pages back instead (`eraseWALHistory()`), which needs incremental auto-vacuum: a file
    /// without it keeps `secure_delete = ON`. Returns whether the switch was made.
    @discardableResult
    package func zeroFreedPagesAtErasureOnly() throws -> Bool {
        guard !options.readOnly else { return false }
        return try withConnection { connection in
            guard try connection.scalar("PRAGMA auto_vacuum")?.int64 == 2 else {
                try connection.query("PRAGMA secure_delete = ON")
                return false
            }
            try connection.query("PRAGMA secure_delete = FAST")
            return true
        }
    }

    /// Moves the WAL's checkpoints off the thread that commits: once a commit leaves the WAL past
    /// `pages` pages, a connection of its own checkpoints it on its own queue
    /// (`BackgroundCheckpointer`), instead of the commit itself doing so, as SQLite's automatic
    /// checkpoint does. For a writable file in WAL mode; elsewhere it does nothing.
    package func checkpointInBackground(afterPages pages: Int32 = 1_000) throws {
        guard !options.readOnly, path != ":memory:" else { return }
        try withConnection { connection in
            guard self.checkpointer.withLock({ $0 == nil }) else { return }
            let checkpointer = BackgroundCheckpointer(path: path, synchronous: options.synchronous, threshold: max(1, pages))
            self.checkpointer.withLock { $0 = checkpointer }
            // The hook replaces SQLite's automatic checkpoint, which is one too.
            sqlite3_wal_hook(connection.handle, { context, writer, _, pages in
                guard let context else { return SQLITE_OK }
                Unmanaged<BackgroundCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(walPages: pages, writer: writer)
                return SQLITE_OK
            }, Unmanaged.passUnretained(checkpointer).toOpaque())
        }
    }

    /// Opens a second, read-only connection to the file, for `readBesideWrites`: in WAL mode a
    /// reader runs beside the writer, on the last committed state. For a writable file in WAL
    /// mode; elsewhere (and when the connection cannot be had) reads keep using the one connection.
    package func openReader() {
        guard !options.readOnly, path != ":memory:", reader.withLock({ $0 == nil }) else { return }
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
            sqlite3_close_v2(handle)
            return
        }
        sqlite3_busy_timeout(handle, options.busyTimeoutMilliseconds)
        let connection = Connection(handle: handle)
        reader.withLock { $0 = ReaderConnection(connection) }
    }

    /// `read` on the read-only connection (`openReader()`), so that it never waits for a write
    /// transaction of this process (a group commit, a settle round): it reads what was committed
    /// when it began. Without that connection, it is `read`.
    package func readBesideWrites<T>(_ body: (Connection) throws -> T) throws -> T {
        guard let reader = reader.withLock({ $0 }) else { return try read(body) }
        do {
            return try reader.read(body)
        } catch {
            reportDamage(in: error)
            throw error
        }
    }

    /// How many checkpoints ran off the committing thread so far: for tests.
    package var backgroundCheckpoints: Int {
        checkpointer.withLock { $0 }?.checkpoints ?? 0
    }

    /// Calls `handler` (on the thread of the statement, which must not use this database) the
    /// first time a statement finds the file damaged: once per connection, to log it once.
    package func onFirstDamage(_ handler: @escaping @Sendable (SQLiteError) -> Void) {
        holderLock.withLock { damageHandlers.append(handler) }
    }

    /// Whether a statement has found the file damaged since it was opened: the next open must
    /// then check the whole file.
    package var hasMetDamage: Bool {
        holderLock.withLock { damageMet }
    }

    /// Finalizes every statement and closes the connection. Safe to call more than once.
    package func close(checkpoint: Bool = true) {
        let me = pthread_self()
        // Closing from inside a closure would wait for itself: refuse it quietly.
        guard !holderLock.withLock({ holder.map { pthread_equal($0, me) != 0 } ?? false }) else { return }
        lock.lock()
        defer { lock.unlock() }
        // Closed first, without a checkpoint: the writer's connection, the last one, decides.
        reader.withLock { reader in
            reader?.close()
            reader = nil
        }
        let checkpointer = self.checkpointer.withLock { checkpointer in
            defer { checkpointer = nil }
            return checkpointer
        }
        checkpointer?.close()
        if let connection { sqlite3_wal_hook(connection.handle, nil, nil) }
        connection?.close(checkpoint: checkpoint)
        connection = nil
    }

    deinit {
        reader.withLock { $0?.close() }
        checkpointer.withLock { $0 }?.close()
        connection?.close()
    }
}

/// What SQLite's trace hook calls back into (`Database.traceStatements`).
private final class StatementTracer: Sendable {
    let handler: @Sendable (String) -> Void

    init(_ handler: @escaping @Sendable (String) -> Void) {
        self.handler = handler
    }
}
