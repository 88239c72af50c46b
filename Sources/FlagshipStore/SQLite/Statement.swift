import CSQLite

/// A prepared statement. Owned by a `Connection`, which caches it by SQL text and finalizes it on close.
final class Statement {
    let sql: String
    private(set) var handle: OpaquePointer?
    private let connection: OpaquePointer
    let columnNames: [String]

    init(connection: OpaquePointer, sql: String) throws(StoreError) {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw .sqlite(SQLiteError(code: code, handle: connection, sql: sql))
        }
        self.sql = sql
        self.handle = statement
        self.connection = connection
        self.columnNames = (0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_name(statement, $0)) }
    }

    func bind(_ arguments: [SQLiteValue]) throws(StoreError) {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard arguments.count == expected else {
            throw .sqlite(SQLiteError(code: SQLITE_RANGE, message: "\(arguments.count) argument(s) given for \(expected) parameter(s)", sql: sql))
        }
        for (offset, value) in arguments.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null:
                code = sqlite3_bind_null(handle, index)
            case .integer(let integer):
                code = sqlite3_bind_int64(handle, index, integer)
            case .real(let real):
                code = sqlite3_bind_double(handle, index, real)
            case .text(let text):
                // The byte count, not -1: text may hold NUL characters, which -1 would cut at.
                code = text.withCString { csqlite_bind_text_transient(handle, index, $0, Int32(text.utf8.count)) }
            case .blob(let bytes):
                code = bytes.withUnsafeBytes { csqlite_bind_blob_transient(handle, index, $0.baseAddress, Int32($0.count)) }
            }
            guard code == SQLITE_OK else { throw .sqlite(SQLiteError(code: code, handle: connection, sql: sql)) }
        }
    }

    /// Runs the statement to completion, collecting its rows, then resets it for the next use.
    func run(_ arguments: [SQLiteValue]) throws(StoreError) -> [Row] {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        try bind(arguments)
        var rows: [Row] = []
        while true {
            let code = sqlite3_step(handle)
            switch code {
            case SQLITE_ROW:
                rows.append(currentRow())
            case SQLITE_DONE:
                return rows
            default:
                throw .sqlite(SQLiteError(code: code, handle: connection, sql: sql))
            }
        }
    }

    private func currentRow() -> Row {
        let values = (0..<Int32(columnNames.count)).map { column -> SQLiteValue in
            switch sqlite3_column_type(handle, column) {
            case SQLITE_INTEGER:
                return .integer(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT:
                return .real(sqlite3_column_double(handle, column))
            case SQLITE_TEXT:
                // Text first, then its length (SQLite's documented order); the length keeps NULs.
                let text = sqlite3_column_text(handle, column)
                let count = Int(sqlite3_column_bytes(handle, column))
                return .text(text.map { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) } ?? "")
            case SQLITE_BLOB:
                let count = Int(sqlite3_column_bytes(handle, column))
                guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return .blob([]) }
                return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
            default:
                return .null
            }
        }
        return Row(values: values, columnNames: columnNames)
    }

    func finalize() {
        sqlite3_finalize(handle)
        handle = nil
    }
}
