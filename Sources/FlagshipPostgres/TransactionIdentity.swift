#if Postgres
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// Which database a connection reaches, told apart from any other: its name and the time its
/// `flagship` schema was first migrated (to the microsecond, in the database's own clock), which
/// two databases, even two of one name on two servers, do not share. `nil` in `migratedAt`: no
/// `flagship` schema there.
struct DatabaseIdentity: Sendable, Equatable, CustomStringConvertible {
    let database: String
    let migratedAt: String?

    var description: String {
        "database \"\(database)\"" + (migratedAt.map { " (its flagship schema migrated at \($0))" } ?? " (no flagship schema)")
    }

    /// Read with statements that cannot fail on any database a user may connect to: a failed
    /// statement would abort the app's transaction.
    static func read(on connection: PostgresConnection, logger: Logger) async throws -> DatabaseIdentity {
        let rows = try await connection.query(
            "SELECT current_database()::text, to_regclass('flagship.schema_migrations') IS NOT NULL", logger: logger
        ).collect()
        guard let (database, migrated) = try rows.first?.decode((String, Bool).self) else {
            return DatabaseIdentity(database: "", migratedAt: nil)
        }
        guard migrated else { return DatabaseIdentity(database: database, migratedAt: nil) }
        let first = try await connection.query(
            "SELECT min(applied_at)::text FROM flagship.schema_migrations", logger: logger
        ).collect()
        return DatabaseIdentity(database: database, migratedAt: try first.first?.decode(String?.self))
    }
}

/// The identity of each connection an app wrote hits through, kept so that it is read once per
/// connection: bounded (`limit`), forgotten all at once when full.
final class ConnectionIdentities: Sendable {
    private let known = Locked<[ObjectIdentifier: DatabaseIdentity]>([:])
    static let limit = 1_024

    func identity(of connection: PostgresConnection, logger: Logger) async throws -> DatabaseIdentity {
        let key = ObjectIdentifier(connection)
        if let known = known.withLock({ $0[key] }) { return known }
        let identity = try await DatabaseIdentity.read(on: connection, logger: logger)
        known.withLock { known in
            if known.count >= Self.limit { known.removeAll() }
            known[key] = identity
        }
        return identity
    }
}
#endif
