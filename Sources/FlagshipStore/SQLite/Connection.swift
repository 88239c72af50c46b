import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// A SQLite connection, handed out by `Database` for the length of one closure.
///
/// It is deliberately not `Sendable`: only `Database` may hold it, so every use is serialised.
/// Data always travels as bound `SQLiteValue`s; SQL text is constant.
package final class Connection {
    let handle: OpaquePointer
    private var statements: [String: Statement] = [:]
    /// The ids of shared parts this connection wrote or found (`db.sharedParts`).
    let sharedPartsCache = SharedPartsCache()

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    /// Runs `body` on a connection another program opened (an app's own, to the SDK's file), in
    /// whatever transaction that program holds: the statements `body` prepares are finalized
    /// before this returns, so that the program can close its connection; the handle stays open.
    package static func borrowing<T>(_ handle: OpaquePointer, _ body: (Connection) throws -> T) throws -> T {
        let borrowed = Connection(handle: handle)
        defer {
            for statement in borrowed.statements.values { statement.finalize() }
            borrowed.statements.removeAll()
        }
        return try body(borrowed)
    }

    /// Runs one statement and returns its rows. The prepared statement is cached for reuse.
    @discardableResult
    package func query(_ sql: String, _ arguments: [SQLiteValue] = []) throws(StoreError) -> [Row] {
        try statement(for: sql).run(arguments)
    }

    /// Runs one statement that changes rows and returns how many it changed.
    @discardableResult
    package func execute(_ sql: String, _ arguments: [SQLiteValue] = []) throws(StoreError) -> Int {
        try query(sql, arguments)
        return Int(sqlite3_changes64(handle))
    }

    /// Runs one statement once per argument list, looking it up once: for writing many rows in
    /// the caller's transaction. Returns how many rows the runs changed in all.
    @discardableResult
    package func executeMany(_ sql: String, _ argumentLists: [[SQLiteValue]]) throws(StoreError) -> Int {
        let statement = try statement(for: sql)
        var changed = 0
        for arguments in argumentLists {
            _ = try statement.run(arguments)
            changed += Int(sqlite3_changes64(handle))
        }
        return changed
    }

    /// The first column of the first row, or `nil` when there is no row.
    package func scalar(_ sql: String, _ arguments: [SQLiteValue] = []) throws(StoreError) -> SQLiteValue? {
        try query(sql, arguments).first?[0]
    }

    /// The size in bytes of a text or blob value, from its row's header, without reading the
    /// value (`length(CAST(x AS BLOB))` reads all of it, through every overflow page).
    package func byteCount(of column: String, in table: String, rowid: Int64, schema: String = "main") throws(StoreError) -> Int {
        try withBlob(column, in: table, rowid: rowid, schema: schema) { blob in Int(sqlite3_blob_bytes(blob)) }
    }

    /// A text or blob value's bytes, read once into the array returned (a column read makes
    /// SQLite copy a value over its overflow pages into a buffer of its own first: for a value of
    /// megabytes, twice the memory at the peak).
    ///
    /// A value of more than `smallCacheReadBytes` is read with the page cache held at
    /// `smallCacheReadPages` pages, then given its size back. This SQLite reads every overflow
    /// page through its page cache (it is built without `SQLITE_DIRECT_OVERFLOW_READ`), so with
    /// the writer's cache of 16 MiB a 30 MB value took 16 MiB of fresh cache pages (allocated,
    /// faulted in, kept) only to copy each page once, and pushed every other page out of the
    /// cache anyway. Held small, the read reuses the same few pages.
    package func bytes(of column: String, in table: String, rowid: Int64, schema: String = "main") throws(StoreError) -> [UInt8] {
        try withBlob(column, in: table, rowid: rowid, schema: schema) { (blob) throws(StoreError) in
            let count = Int(sqlite3_blob_bytes(blob))
            let restoreCache = count > Self.smallCacheReadBytes ? try holdCacheSmall() : nil
            defer { if let restoreCache { restoreCache() } }
            var code = SQLITE_OK
            let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                Self.adviseHugePages(buffer)
                code = count == 0 ? SQLITE_OK : sqlite3_blob_read(blob, buffer.baseAddress, Int32(count), 0)
                initialized = code == SQLITE_OK ? count : 0
            }
            guard code == SQLITE_OK else {
                throw .sqlite(SQLiteError(code: code, handle: handle, sql: "sqlite3_blob_read(\(schema).\(table).\(column), \(rowid))"))
            }
            return bytes
        }
    }

    /// The size of a value above which `bytes(of:in:rowid:schema:)` reads with a small cache.
    package static let smallCacheReadBytes = 1 << 20
    /// The page cache's size during such a read, in pages.
    package static let smallCacheReadPages = 16

    /// Sets the page cache to `smallCacheReadPages` pages; returns what sets it back.
    private func holdCacheSmall() throws(StoreError) -> () -> Void {
        guard let before = try scalar("PRAGMA cache_size")?.int64 else { return {} }
        try query("PRAGMA cache_size = \(Self.smallCacheReadPages)")
        return { [self] in
            // Setting a size cannot fail once the statement is prepared; should it, the cache
            // stays small: slower, not wrong.
            _ = try? query("PRAGMA cache_size = \(before)")
        }
    }

    /// Asks the kernel for huge pages (2 MiB) under the untouched memory a long value is read
    /// into: 15 page faults for 30 MB instead of 7,300, which were most of the time a start took
    /// to read the compiled bucketing file. Only the whole 2 MiB blocks inside the buffer are
    /// advised; where transparent huge pages are off, nothing changes.
    private static func adviseHugePages(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        let hugePage = 2 << 20
        guard buffer.count >= 2 * hugePage, let base = buffer.baseAddress else { return }
        let start = (Int(bitPattern: base) + hugePage - 1) & ~(hugePage - 1)
        let end = (Int(bitPattern: base) + buffer.count) & ~(hugePage - 1)
        guard end > start, let address = UnsafeMutableRawPointer(bitPattern: start) else { return }
        _ = madvise(address, end - start, MADV_HUGEPAGE)
    }

    /// `body` with the value of `column` in row `rowid` opened read-only for incremental I/O.
    private func withBlob<T>(_ column: String, in table: String, rowid: Int64, schema: String,
                             _ body: (OpaquePointer?) throws(StoreError) -> T) throws(StoreError) -> T {
        var blob: OpaquePointer?
        let code = sqlite3_blob_open(handle, schema, table, column, rowid, 0, &blob)
        defer { sqlite3_blob_close(blob) }
        guard code == SQLITE_OK else {
            throw .sqlite(SQLiteError(code: code, handle: handle, sql: "sqlite3_blob_open(\(schema).\(table).\(column), \(rowid))"))
        }
        return try body(blob)
    }

    /// Runs a script of several statements with no parameters (a migration), without caching them.
    package func executeScript(_ sql: String) throws(StoreError) {
        var remaining = Array(sql.utf8CString)
        try remaining.withUnsafeMutableBufferPointer { (buffer) throws(StoreError) in
            guard var cursor = UnsafePointer(buffer.baseAddress) else { return }
            while cursor.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let code = sqlite3_prepare_v2(handle, cursor, -1, &statement, &tail)
                let text = String(cString: cursor)
                guard code == SQLITE_OK else { throw .sqlite(SQLiteError(code: code, handle: handle, sql: text)) }
                defer { sqlite3_finalize(statement) }
                if let statement {
                    var step = sqlite3_step(statement)
                    while step == SQLITE_ROW { step = sqlite3_step(statement) }
                    guard step == SQLITE_DONE else {
                        throw .sqlite(SQLiteError(code: step, handle: handle, sql: String(cString: sqlite3_sql(statement))))
                    }
                }
                guard let tail, tail != cursor else { return }
                cursor = tail
            }
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    ///
    /// `immediate` takes the write lock at once, so that two writers wait for each other
    /// (within `busy_timeout`) instead of failing halfway through.
    package func transaction<T>(immediate: Bool = true, _ body: (Connection) throws -> T) throws -> T {
        try execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
        do {
            let result = try body(self)
            try execute("COMMIT")
            return result
        } catch {
            if sqlite3_get_autocommit(handle) == 0 {
                sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            }
            throw error
        }
    }

    /// Runs `body` in a savepoint: its writes are undone when it throws, while the surrounding
    /// transaction (if any) goes on. Savepoints nest, so store methods that take a `Connection`
    /// compose into one transaction whatever their depth.
    @discardableResult
    package func savepoint<T>(_ body: (Connection) throws -> T) throws -> T {
        try execute("SAVEPOINT flagship")
        do {
            let result = try body(self)
            try execute("RELEASE flagship")
            return result
        } catch {
            sqlite3_exec(handle, "ROLLBACK TO flagship", nil, nil, nil)
            sqlite3_exec(handle, "RELEASE flagship", nil, nil, nil)
            throw error
        }
    }

    /// Whether a table or view of that name exists.
    package func tableExists(_ name: String) throws(StoreError) -> Bool {
        try scalar("SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?", [.text(name)])?.int64 ?? 0 > 0
    }

    private func statement(for sql: String) throws(StoreError) -> Statement {
        if let cached = statements[sql] { return cached }
        let statement = try Statement(connection: handle, sql: sql)
        statements[sql] = statement
        return statement
    }

    /// Copies the whole WAL into the database file and truncates the WAL to zero bytes
    /// (`SQLITE_CHECKPOINT_TRUNCATE`), waiting up to the busy timeout for other connections'
    /// reads. `false` when a read still in progress kept it from finishing (`SQLITE_BUSY`).
    ///
    /// Another checkpoint under way (the background checkpointer's, or another process's) holds
    /// SQLite's checkpoint lock, and a checkpoint that finds it held fails at once, without the
    /// busy handler: this one is then tried again, pausing 1 to 16 ms, until that one ends or
    /// `waitMilliseconds` pass.
    func checkpointTruncatingWAL(waitingUpTo waitMilliseconds: Int32) throws(StoreError) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(max(0, waitMilliseconds)))
        var pause: UInt32 = 1_000
        while true {
            // Set to the WAL's size once the checkpoint lock is had; left at -1 when it is not.
            var walFrames: Int32 = 0
            let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_TRUNCATE, &walFrames, nil)
            if code == SQLITE_OK { return true }
            guard code & 0xFF == SQLITE_BUSY else {
                throw .sqlite(SQLiteError(code: code, handle: handle, sql: "wal_checkpoint(TRUNCATE)"))
            }
            guard walFrames == -1, clock.now < deadline else { return false }
            usleep(pause)
            pause = min(pause * 2, 16_000)
        }
    }

    /// `checkpoint: false` leaves the file and its WAL as they are: for a file about to be moved
    /// aside as damaged.
    func close(checkpoint: Bool = true) {
        if !checkpoint { csqlite_disable_checkpoint_on_close(handle) }
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
        sqlite3_close_v2(handle)
    }
}
