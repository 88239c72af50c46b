import Foundation

/// Why the store could not do what was asked. Each case says enough to act on without the source.
package enum StoreError: Error, Equatable, CustomStringConvertible {
    /// SQLite refused a statement.
    case sqlite(SQLiteError)
    /// The file was written by a newer version of the SDK; it is left untouched.
    case schemaTooNew(path: String, databaseVersion: Int, latestKnownVersion: Int)
    /// The file records a schema step other than this build's step of that version: a migration
    /// renamed, replaced or edited after it shipped. The file is left untouched.
    case migrationHistoryMismatch(path: String, version: Int, applied: MigrationRecord, embedded: MigrationRecord)
    /// The file is not a Flagship database (read-only opening never changes such a file).
    case notAFlagshipDatabase(path: String, reason: String)
    /// The file or its directory could not be created, opened or moved.
    case fileSystem(path: String, reason: String)
    /// A column held a value of an unexpected type, typically after a hand edit.
    case unexpectedValue(column: String, found: String)
    /// The database has been closed.
    case closed
    /// A `Database` method was called from inside one of its own closures, on the same thread:
    /// its lock is not reentrant, so this fails at once rather than deadlocking.
    case reentrantAccess(path: String)
    /// A connection another program opened (`FlagshipDatabase.writeThrough(_:_:)`) cannot take
    /// the store's rows: it is not in a transaction, reads another file, or only reads.
    case foreignConnection(path: String, refusal: ForeignConnectionRefusal)

    package var description: String {
        switch self {
        case .sqlite(let error):
            return error.description
        case let .schemaTooNew(path, databaseVersion, latestKnownVersion):
            return "\(path) has schema version \(databaseVersion), newer than version \(latestKnownVersion), the latest this build knows; it was left untouched (upgrade the SDK to use it)"
        case let .migrationHistoryMismatch(path, version, applied, embedded):
            let difference = applied.name == embedded.name
                ? "records schema step \(version) '\(applied.name)' with checksum \(applied.checksum ?? "none"), but this build's step \(version) has checksum \(embedded.checksum ?? "none"): its SQL was edited"
                : "records schema step \(version) as '\(applied.name)', but this build's step \(version) is '\(embedded.name)': a migration was renamed or replaced"
            return "\(path) \(difference) after the file was migrated. Steps are append-only, so the file was left untouched "
                + "(open it with the build that wrote it, or move it away to start afresh)"
        case let .notAFlagshipDatabase(path, reason):
            return "\(path) is not a Flagship database: \(reason)"
        case let .fileSystem(path, reason):
            return "\(path): \(reason)"
        case let .unexpectedValue(column, found):
            return "column \(column) holds \(found), which the store cannot read"
        case .closed:
            return "the database is closed"
        case .reentrantAccess(let path):
            return "\(path): a database method was called from inside another on the same thread; pass the Connection the outer closure received instead (database methods are not reentrant)"
        case let .foreignConnection(path, refusal):
            return refusal.sentence(store: path)
        }
    }
}

/// Why a program's own connection cannot write the store's rows in its transaction.
package enum ForeignConnectionRefusal: Equatable, Sendable {
    /// No transaction is open on it (`BEGIN` was not run): the row would commit alone, at once.
    case notInTransaction
    /// It reads another file (`file`, or an in-memory or temporary database when `nil`).
    case anotherFile(String?)
    /// It was opened read-only, or its file cannot be written.
    case readOnly

    func sentence(store: String) -> String {
        switch self {
        case .notInTransaction:
            return "the connection given is not in a transaction: begin one (BEGIN IMMEDIATE) before writing a hit in it, so that the hit commits or rolls back with the app's rows"
        case .anotherFile(let file):
            return "the connection given reads \(file.map { "another file (\($0))" } ?? "an in-memory or temporary database"), not the SDK's store (\(store)): open that file"
        case .readOnly:
            return "the connection given cannot write \(store): open it read-write"
        }
    }
}
