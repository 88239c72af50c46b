import CSQLite
import Foundation

/// A failure reported by SQLite: its result codes, its message, and the statement that failed.
package struct SQLiteError: Error, Equatable, CustomStringConvertible {
    /// The primary result code (`SQLITE_CORRUPT`, `SQLITE_BUSY`...).
    package let code: Int32
    /// The extended result code, which says more (`SQLITE_CONSTRAINT_CHECK`...).
    package let extendedCode: Int32
    package let message: String
    package let sql: String?

    package init(code: Int32, extendedCode: Int32? = nil, message: String, sql: String? = nil) {
        self.code = code & 0xFF
        self.extendedCode = extendedCode ?? code
        self.message = message
        self.sql = sql
    }

    /// The error SQLite last reported on `handle` (a connection), for a call that returned `code`.
    init(code: Int32, handle: OpaquePointer?, sql: String? = nil) {
        let message = handle.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(code))
        let extended = handle.map { sqlite3_extended_errcode($0) } ?? code
        self.init(code: code, extendedCode: extended, message: message, sql: sql)
    }

    /// The file is not a database, or is damaged: the cases in which the store moves it aside.
    package var meansFileIsDamaged: Bool {
        code == SQLITE_NOTADB || code == SQLITE_CORRUPT
    }

    package var description: String {
        var text = "SQLite error \(extendedCode) (\(String(cString: sqlite3_errstr(code)))): \(message)"
        if let sql { text += " [statement: \(sql.trimmingCharacters(in: .whitespacesAndNewlines))]" }
        return text
    }
}
