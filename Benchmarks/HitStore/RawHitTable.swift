import BenchSQLite

/// The `hits` table written through the SQLite C API alone: the floor the hit store is measured
/// against. Same columns, constraints and indexes as `Migrations/0001_initial_schema.sql`, and the
/// same connection settings as FlagshipStore (WAL, `synchronous = NORMAL`).
final class RawHitTable {
    struct Row {
        var id: String
        var visitorId: String
        var type: String
        var isConsent = false
        var document: String
        var createdAt: Int64
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
    init(path: String) throws(SQLiteFailure) {
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else {
            let failure = SQLiteFailure(code: code, handle: handle, sql: "open \(path)")
            sqlite3_close_v2(handle)
            throw failure
        }
        self.handle = handle
        try execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
        try execute(Self.schema)
        let prepared = sqlite3_prepare_v3(handle, Self.insertSQL, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &insert, nil)
        guard prepared == SQLITE_OK else { throw SQLiteFailure(code: prepared, handle: handle, sql: Self.insertSQL) }
    }

    deinit {
        sqlite3_finalize(insert)
        sqlite3_close_v2(handle)
    }

    /// Inserts every row in one transaction, through one prepared statement.
    func insertInOneTransaction(_ rows: [Row]) throws(SQLiteFailure) {
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

    func count() throws(SQLiteFailure) -> Int {
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
struct SQLiteFailure: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    let sql: String

    init(code: Int32, handle: OpaquePointer?, sql: String) {
        self.code = code
        message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        self.sql = sql
    }

    var description: String { "SQLite error \(code) (\(message)) in: \(sql)" }
}
