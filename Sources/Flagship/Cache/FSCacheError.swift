import CSQLite
import FlagshipStore
import Foundation

/// Why the default caches could not open their database, or why a hit could not be committed to
/// the hit cache (``FlagshipError/hitNotCached(_:)``) or written in the app's own transaction
/// (``FlagshipError/hitNotWritten(_:)``).
///
/// Switch over ``code`` to act on the kind; ``description`` is the sentence to log. Codes are
/// static members, so a new kind is not a breaking change: a `switch` needs a `default`.
///
/// ```swift
/// do {
///     try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "buy"))
/// } catch let error as FlagshipError where error.cacheError?.code == .diskFull {
///     // Sent from memory; free some room so the next hits survive a restart.
/// }
/// ```
public struct FSCacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case diskFull, readOnly, locked, damaged, fileReplaced, inMemory, notAFlagshipDatabase,
                 schemaTooNew, migrationHistoryMismatch, fileSystem, ioError, closed, unreachable, refused,
                 notInTransaction, notTheStore, other
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// The disk (or the file system holding the database) has no room left (`SQLITE_FULL`).
        public static let diskFull = Code(.diskFull)
        /// The database can be read, not written: file or directory permissions, a read-only file
        /// system, or a file opened read-only because it could not be written.
        public static let readOnly = Code(.readOnly)
        /// Another connection held the database's lock past the busy timeout (`SQLITE_BUSY`).
        public static let locked = Code(.locked)
        /// The file is damaged or not a database (`SQLITE_CORRUPT`, `SQLITE_NOTADB`), or holds a
        /// value the store cannot read: it is moved aside at the next start.
        public static let damaged = Code(.damaged)
        /// The database file was deleted or replaced while the SDK had it open.
        public static let fileReplaced = Code(.fileReplaced)
        /// The hit cache runs in memory (its database could not be used): hits do not survive a restart.
        public static let inMemory = Code(.inMemory)
        /// The file is a SQLite database of another application: it is left untouched.
        public static let notAFlagshipDatabase = Code(.notAFlagshipDatabase)
        /// The file was written by a newer version of the SDK: it is left untouched.
        public static let schemaTooNew = Code(.schemaTooNew)
        /// The file records a schema step this build does not have under that number: left untouched.
        public static let migrationHistoryMismatch = Code(.migrationHistoryMismatch)
        /// The file or its directory could not be created, opened or moved.
        public static let fileSystem = Code(.fileSystem)
        /// The operating system failed a read or a write (`SQLITE_IOERR`).
        public static let ioError = Code(.ioError)
        /// The cache was closed.
        public static let closed = Code(.closed)
        /// A store over the network (FlagshipPostgres's) did not answer in time, or not at all.
        public static let unreachable = Code(.unreachable)
        /// A store over the network (FlagshipPostgres's) refused a row for what it holds, not
        /// for its own state: a data exception, a constraint, a size limit (SQLSTATE classes 22,
        /// 23 and 54). The rows it refuses are kept in the local store, alone.
        public static let refused = Code(.refused)
        /// A hit written in the app's transaction (`sendHit(_:inTransactionOn:)`) found no
        /// transaction open on the app's connection: nothing was written.
        public static let notInTransaction = Code(.notInTransaction)
        /// A hit written in the app's transaction found the app's connection on another file
        /// than the SDK's store, or the SDK keeping no store file (an in-memory store, an app's
        /// own hit cache, a PostgreSQL store): nothing was written, since no sender would read it.
        public static let notTheStore = Code(.notTheStore)
        /// Any other failure SQLite reported; ``FSCacheError/sqliteCode`` says which.
        public static let other = Code(.other)

        /// The code's name as written here (`diskFull`, `readOnly`...), for a log or a label.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The database file concerned, when there is one.
    public let path: String?
    /// SQLite's extended result code, when SQLite reported the failure.
    public let sqliteCode: Int32?
    /// One sentence saying what failed, for logs.
    public let description: String

    package init(code: Code, path: String?, sqliteCode: Int32? = nil, description: String) {
        self.code = code
        self.path = path
        self.sqliteCode = sqliteCode
        self.description = description
    }
}

extension FSCacheError {
    /// `error` (from the store, or already classified) as a cache error; `path` is the database's,
    /// for the errors that do not name it.
    init(_ error: any Error, path: String? = nil) {
        switch error {
        case let error as FSCacheError:
            self = error
        case let error as StoreError:
            self.init(error, path: path)
        case let error as SQLiteError:
            self.init(.sqlite(error), path: path)
        default:
            self.init(code: .other, path: path, description: String(describing: error))
        }
    }

    private init(_ error: StoreError, path: String?) {
        let description = error.description
        switch error {
        case .sqlite(let sqlite):
            self.init(code: Self.code(ofSQLite: sqlite.code), path: path, sqliteCode: sqlite.extendedCode, description: description)
        case .schemaTooNew(let file, _, _):
            self.init(code: .schemaTooNew, path: file, description: description)
        case .migrationHistoryMismatch(let file, _, _, _):
            self.init(code: .migrationHistoryMismatch, path: file, description: description)
        case .notAFlagshipDatabase(let file, _):
            self.init(code: .notAFlagshipDatabase, path: file, description: description)
        case .fileSystem(let file, _):
            self.init(code: .fileSystem, path: file, description: description)
        case .unexpectedValue:
            self.init(code: .damaged, path: path, description: description)
        case .closed:
            self.init(code: .closed, path: path, description: description)
        case .reentrantAccess(let file):
            self.init(code: .other, path: file, description: description)
        case let .foreignConnection(file, refusal):
            let code: Code
            switch refusal {
            case .notInTransaction: code = .notInTransaction
            case .anotherFile: code = .notTheStore
            case .readOnly: code = .readOnly
            }
            self.init(code: code, path: file, description: description)
        }
    }

    /// The kind of a SQLite primary result code.
    private static func code(ofSQLite code: Int32) -> Code {
        switch code {
        case SQLITE_FULL: return .diskFull
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH: return .readOnly
        case SQLITE_BUSY, SQLITE_LOCKED: return .locked
        case SQLITE_CORRUPT, SQLITE_NOTADB: return .damaged
        case SQLITE_CANTOPEN: return .fileSystem
        case SQLITE_IOERR: return .ioError
        default: return .other
        }
    }
}
