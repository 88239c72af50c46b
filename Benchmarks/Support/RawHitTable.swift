import BenchSQLite

/// The `hits` table written through the SQLite C API alone: the floor the hit store is measured
/// against. Same columns, constraints and indexes as `Migrations/0001_initial_schema.sql`, and by
/// default the same connection settings as FlagshipStore (WAL, `synchronous = NORMAL`).
public final class RawHitTable {
    public struct Row {
        public var id: String
        public var visitorId: String
        public var type: String
        public var isConsent = false
        public var document: String
        public var createdAt: Int64
    }

    /// The journal and how hard each commit syncs it: what a commit costs.
    public struct Journal: Sendable {
        let pragmas: String

        /// FlagshipStore's: a write-ahead log, synced at checkpoints.
        public static let writeAheadLog = Journal(pragmas: "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
        /// SQLite's defaults as a cache that writes one hit per statement keeps them: a rollback
        /// journal, created, synced and deleted by every commit.
        public static let rollbackSyncedInFull = Journal(pragmas: "PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL;")
    }

    private let handle: OpaquePointer
    private var insert: OpaquePointer?

    private static let schema = """
        CREATE TABLE IF NOT EXISTS hits (
            id          TEXT    NOT NULL PRIMARY KEY,
            visitor_id  TEXT    NOT NULL,
            type        TEXT    NOT NULL CHECK (type IN ('SCREENVIEW', 'PAGEVIEW', 'TRANSACTION', 'ITEM',
                                                         'EVENT', 'SEGMENT', 'ACTIVATE')),
            is_consent  INTEGER NOT NULL DEFAULT 0 CHECK (is_consent IN (0, 1)),
            document    TEXT    NOT NULL CHECK (json_valid(document)),
            created_at  INTEGER NOT NULL,
            attempts    INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX IF NOT EXISTS hits_by_age ON hits (created_at, id);
        CREATE INDEX IF NOT EXISTS hits_by_visitor ON hits (visitor_id);
        """

    private static let insertSQL = """
        INSERT INTO hits (id, visitor_id, type, is_consent, document, created_at, attempts)
        VALUES (?, ?, ?, ?, ?, ?, 0)
        """

    /// Opens (creating it if needed) the database at `path` with the table in it.
    public init(path: String, journal: Journal = .writeAheadLog) throws(SQLiteFailure) {
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else {
            let failure = SQLiteFailure(code: code, handle: handle, sql: "open \(path)")
            sqlite3_close_v2(handle)
            throw failure
        }
        self.handle = handle
        try execute(journal.pragmas)
        try execute(Self.schema)
        let prepared = sqlite3_prepare_v3(handle, Self.insertSQL, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &insert, nil)
        guard prepared == SQLITE_OK else { throw SQLiteFailure(code: prepared, handle: handle, sql: Self.insertSQL) }
    }

    deinit {
        sqlite3_finalize(insert)
        sqlite3_close_v2(handle)
    }

    /// Inserts every row in one transaction, through one prepared statement.
    public func insertInOneTransaction(_ rows: [Row]) throws(SQLiteFailure) {
        try execute("BEGIN IMMEDIATE")
        do {
            for row in rows {
                try insert(row)
            }
            try execute("COMMIT")
        } catch {
            sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    /// Inserts each row in a transaction of its own (autocommit): one commit, one sync, per row.
    public func insertEachInItsOwnTransaction(_ rows: [Row]) throws(SQLiteFailure) {
        for row in rows {
            try insert(row)
        }
    }

    public func count() throws(SQLiteFailure) -> Int {
        try Self.count(handle)
    }

    /// The rows of `hits` in a database some other code wrote (the SDK's), opened read-only.
    public static func count(inDatabaseAt path: String) throws(SQLiteFailure) -> Int {
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else { throw SQLiteFailure(code: code, handle: handle, sql: "open \(path)") }
        return try count(handle)
    }

    /// Runs `sql` (no parameters) on the database at `path`: what a benchmark's setup changes by hand.
    public static func execute(_ sql: String, inDatabaseAt path: String) throws(SQLiteFailure) {
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else { throw SQLiteFailure(code: code, handle: handle, sql: "open \(path)") }
        let executed = sqlite3_exec(handle, sql, nil, nil, nil)
        guard executed == SQLITE_OK else { throw SQLiteFailure(code: executed, handle: handle, sql: sql) }
    }

    /// The floor of opening a store: open the file, read its schema (the first statement that
    /// touches the file), close.
    public static func openAndReadSchema(path: String) throws(SQLiteFailure) {
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else { throw SQLiteFailure(code: code, handle: handle, sql: "open \(path)") }
        let sql = "SELECT count(*) FROM sqlite_master"
        let executed = sqlite3_exec(handle, sql, nil, nil, nil)
        guard executed == SQLITE_OK else { throw SQLiteFailure(code: executed, handle: handle, sql: sql) }
    }

    private static func count(_ handle: OpaquePointer) throws(SQLiteFailure) -> Int {
        let sql = "SELECT count(*) FROM hits"
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        let prepared = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard prepared == SQLITE_OK else { throw SQLiteFailure(code: prepared, handle: handle, sql: sql) }
        let step = sqlite3_step(statement)
        guard step == SQLITE_ROW else { throw SQLiteFailure(code: step, handle: handle, sql: sql) }
        return Int(sqlite3_column_int64(statement, 0))
    }

    private func insert(_ row: Row) throws(SQLiteFailure) {
        defer {
            sqlite3_reset(insert)
            sqlite3_clear_bindings(insert)
        }
        try check(bindText(row.id, at: 1))
        try check(bindText(row.visitorId, at: 2))
        try check(bindText(row.type, at: 3))
        try check(sqlite3_bind_int64(insert, 4, row.isConsent ? 1 : 0))
        try check(bindText(row.document, at: 5))
        try check(sqlite3_bind_int64(insert, 6, row.createdAt))
        let step = sqlite3_step(insert)
        guard step == SQLITE_DONE else { throw SQLiteFailure(code: step, handle: handle, sql: Self.insertSQL) }
    }

    private func check(_ bindCode: Int32) throws(SQLiteFailure) {
        guard bindCode == SQLITE_OK else { throw SQLiteFailure(code: bindCode, handle: handle, sql: Self.insertSQL) }
    }

    private func bindText(_ text: String, at index: Int32) -> Int32 {
        text.withCString { benchsqlite_bind_text_transient(insert, index, $0, -1) }
    }

    private func execute(_ sql: String) throws(SQLiteFailure) {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw SQLiteFailure(code: code, handle: handle, sql: sql) }
    }
}

/// SQLite refused a call: its result code, its message and the SQL.
public struct SQLiteFailure: Error, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public let sql: String

    init(code: Int32, handle: OpaquePointer?, sql: String) {
        self.code = code
        message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        self.sql = sql
    }

    public var description: String { "SQLite error \(code) (\(message)) in: \(sql)" }
}
