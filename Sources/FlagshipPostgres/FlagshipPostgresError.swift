#if Postgres
import Foundation
import NIOSSL
import PostgresNIO

/// Why the PostgreSQL store cannot be used. Switch over ``code``; ``description`` is the sentence
/// to log. Codes are static members: a new one is not a breaking change.
public struct FlagshipPostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case unreachable, invalidURL, authenticationFailed, databaseMissing, foreignSchema, sharedDatabase,
                 schemaTooNew, migrationHistoryMismatch, query, transportSecurity
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// No connection could be made: wrong host or port, server down, network cut.
        public static let unreachable = Code(.unreachable)
        /// The URL (or `PGSSLMODE`, `PGSSLROOTCERT`) cannot be used as written: not a
        /// `postgres://` URL, no user or database, a port outside 1–65535, a query parameter this
        /// store does not read, an unknown `sslmode`, a root certificate file that cannot be read,
        /// a mode that checks certificates without one. Nothing was connected.
        public static let invalidURL = Code(.invalidURL)
        /// TLS could not be set up as `sslmode` demands: the server does not offer it, or its
        /// certificate was refused (not signed by the root certificates, or, with `verify-full`,
        /// not issued for the host). Nothing was sent in clear.
        public static let transportSecurity = Code(.transportSecurity)
        /// The server refused the user or the password.
        public static let authenticationFailed = Code(.authenticationFailed)
        /// The database named in the configuration does not exist.
        public static let databaseMissing = Code(.databaseMissing)
        /// The database has a `flagship` schema that another application made: left untouched.
        public static let foreignSchema = Code(.foreignSchema)
        /// The database holds another application's tables, and the configuration does not say it
        /// may be shared (`sharesDatabase`): nothing was written to it.
        public static let sharedDatabase = Code(.sharedDatabase)
        /// The schema was migrated by a newer version of the SDK: left untouched.
        public static let schemaTooNew = Code(.schemaTooNew)
        /// The schema records a step this build has under another name or checksum: left untouched.
        public static let migrationHistoryMismatch = Code(.migrationHistoryMismatch)
        /// The server refused or failed a statement.
        public static let query = Code(.query)

        /// The code's name as written here (`unreachable`, `authenticationFailed`...), for a log.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The server's SQLSTATE, when the server reported the failure (`28P01`: wrong password).
    public let sqlState: String?

    /// Whether the server refused the statement for what its rows hold rather than for its own
    /// state: a data exception (SQLSTATE class 22: a NUL in text, a character the database's
    /// encoding lacks), an integrity constraint (23: a check a DBA added) or a program limit (54:
    /// an index row over its size). Written again, the same rows are refused again.
    var refusesRows: Bool {
        guard let sqlState, sqlState.count == 5 else { return false }
        return ["22", "23", "54"].contains(String(sqlState.prefix(2)))
    }
    /// One sentence saying what failed, for logs; never the password.
    public let description: String

    init(code: Code, sqlState: String? = nil, description: String) {
        self.code = code
        self.sqlState = sqlState
        self.description = description
    }
}

extension FlagshipPostgresError {
    /// A postgres-nio error, classified. Its text never holds the password: the server's message
    /// names the user at most.
    init(_ error: any Error, doing what: String) {
        if let error = error as? FlagshipPostgresError {
            self = error
            return
        }
        // A failure inside `withTransaction` comes wrapped: what failed first is what to say.
        if let wrapped = error as? PostgresTransactionError,
           let first = wrapped.beginError ?? wrapped.closureError ?? wrapped.commitError ?? wrapped.rollbackError {
            self.init(first, doing: what)
            return
        }
        guard let error = error as? PSQLError else {
            self.init(code: .query, description: "\(what): \(String(describing: error))")
            return
        }
        let state = error.serverInfo?[.sqlState]
        let message = error.serverInfo?[.message]
        if error.code == .sslUnsupported {
            self.init(code: .transportSecurity, description: "\(what): the server does not offer TLS, which the sslmode demands (nothing was sent in clear)")
            return
        }
        if let underlying = error.underlying, underlying is NIOSSLError || underlying is BoringSSLError || underlying is NIOSSLExtraError {
            self.init(code: .transportSecurity, description: "\(what): the TLS handshake with the server failed (\(underlying)): its certificate was refused, or it does not speak TLS as asked")
            return
        }
        switch (error.code, state) {
        case (_, "28P01"?), (_, "28000"?):
            self.init(code: .authenticationFailed, sqlState: state,
                      description: "\(what): the server refused the credentials (\(message ?? "authentication failed"))")
        case (_, "3D000"?):
            self.init(code: .databaseMissing, sqlState: state, description: "\(what): \(message ?? "the database does not exist")")
        case (.server, _):
            self.init(code: .query, sqlState: state, description: "\(what): \(message ?? "the server failed the statement") (SQLSTATE \(state ?? "?"))")
        case (.connectionError, _), (.serverClosedConnection, _), (.clientClosedConnection, _), (.poolClosed, _):
            let cause = error.underlying.map { String(describing: $0) } ?? String(describing: error.code)
            self.init(code: .unreachable, description: "\(what): PostgreSQL could not be reached (\(cause))")
        default:
            self.init(code: .query, sqlState: state, description: "\(what): \(String(describing: error.code))\(message.map { ": \($0)" } ?? "")")
        }
    }
}
#endif
