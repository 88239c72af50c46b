#if Postgres
import FlagshipLocalServer
import FlagshipStore
import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import FlagshipPostgres

/// A test on the process's PostgreSQL (started at first use, stopped at exit), each with a
/// database of its own.
class PostgresTestCase: XCTestCase {
    let logger = Logger(label: "io.flagship.postgres.tests")

    /// The server, or a skip (a failure in CI, where PostgreSQL must be there).
    func postgres() throws -> TemporaryPostgres {
        switch TemporaryPostgres.shared {
        case .success(let server):
            return server
        case .failure(let reason):
            if TemporaryPostgres.isRequired { XCTFail("PostgreSQL is required here (FLAGSHIP_REQUIRE_POSTGRES=1): \(reason)") }
            throw XCTSkip("PostgreSQL tests skipped: \(reason)")
        }
    }

    func store(_ server: TemporaryPostgres, database: String, password: String? = nil, sharesDatabase: Bool = false) -> FlagshipPostgresStore {
        FlagshipPostgresStore(.init(host: server.host, port: server.port, username: server.username,
                                    password: password ?? server.password, database: database),
                              sharesDatabase: sharesDatabase)
    }

    /// A new database with the schema migrated.
    func migratedDatabase(_ server: TemporaryPostgres) async throws -> String {
        let database = try server.createDatabase()
        let store = store(server, database: database)
        try await store.prepare()
        await store.close()
        return database
    }

    /// A local Flagship server for the fleets' environment (`fleet_env`), started: the caller
    /// stops it.
    func startedFleetServer() throws -> LocalFlagshipServer {
        let server = LocalFlagshipServer(envId: "fleet_env", apiKey: "fleet_key")
        try server.start()
        return server
    }

    /// A connection of its own: what one instance of a fleet holds.
    func connect(_ server: TemporaryPostgres, database: String) async throws -> PostgresConnection {
        try await Self.connect(server, database: database, logger: logger)
    }

    /// A new database of `server` at schema version `version` (the first migrations only), as a
    /// store made by an older release holds it.
    func databaseAtVersion(_ version: Int, of server: TemporaryPostgres) async throws -> String {
        let database = try server.createDatabase()
        let connection = try await connect(server, database: database)
        do {
            _ = try await PostgresMigrator(migrations: Array(Migration.postgres.prefix(version)))
                .migrate(connection, sharesDatabase: false, logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
        return database
    }

    static func connect(_ server: TemporaryPostgres, database: String, logger: Logger) async throws -> PostgresConnection {
        try await PostgresConnection.connect(
            configuration: .init(host: server.host, port: server.port, username: server.username,
                                 password: server.password, database: database, tls: .disable),
            id: Int.random(in: 1...Int.max), logger: logger)
    }
}
#endif
