#if Postgres
import FlagshipStore
import Foundation
import Logging
import PostgresTestSupport
import XCTest

@testable import FlagshipPostgres

/// The PostgreSQL schema's migrator, on a real PostgreSQL started for these tests.
final class PostgresMigratorTests: PostgresTestCase {
    func testAnEmptyDatabaseIsMigratedToTheLatestVersionWithEachStepRecorded() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        let store = store(server, database: database)

        let version = try await store.prepare()
        await store.close()

        XCTAssertEqual(version, PostgresMigrator().latestVersion)
        XCTAssertEqual(try server.psql(database, "SELECT obj_description('flagship'::regnamespace, 'pg_namespace')"), PostgresMigrator.marker)
        let steps = try server.psql(database, "SELECT version || ' ' || name || ' ' || checksum FROM flagship.schema_migrations ORDER BY version")
        XCTAssertEqual(steps, Migration.postgres.map { "\($0.version) \($0.name) \($0.checksum)" }.joined(separator: "\n"))
        let tables = try server.psql(database, "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'flagship'")
        XCTAssertEqual(tables, "bucketing,bucketing_files,decisions,hits,schema_migrations,sdk_state,visitors")
    }

    func testASecondStartFindsTheSchemaCurrentAndChangesNothing() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        let first = store(server, database: database)
        try await first.prepare()
        await first.close()
        let before = try server.psql(database, "SELECT applied_at FROM flagship.schema_migrations")

        let second = store(server, database: database)
        let version = try await second.prepare()
        await second.close()

        XCTAssertEqual(version, PostgresMigrator().latestVersion)
        XCTAssertEqual(try server.psql(database, "SELECT applied_at FROM flagship.schema_migrations"), before)
    }

    /// Five instances starting at once: the advisory lock makes one migrate and the others find
    /// the schema current; none fails, each step is recorded once.
    func testInstancesMigratingAtOnceAreSerialized() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        let stores = (0..<5).map { _ in store(server, database: database) }

        let versions = try await withThrowingTaskGroup(of: Int.self) { group in
            for store in stores { group.addTask { try await store.prepare() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for store in stores { await store.close() }

        XCTAssertEqual(versions, Array(repeating: PostgresMigrator().latestVersion, count: 5))
        XCTAssertEqual(try server.psql(database, "SELECT count(*) FROM flagship.schema_migrations"), "\(Migration.postgres.count)")
    }

    func testANewerSchemaIsRefusedWithATypedErrorAndLeftUntouched() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        let first = store(server, database: database)
        try await first.prepare()
        await first.close()
        try server.psql(database, "INSERT INTO flagship.schema_migrations (version, name, checksum) VALUES (99, 'future', 'x')")
        let before = try server.psql(database, "SELECT count(*) FROM flagship.schema_migrations")

        let second = store(server, database: database)
        do {
            try await second.prepare()
            XCTFail("a newer schema must be refused")
        } catch {
            XCTAssertEqual(error.code, .schemaTooNew, "\(error)")
            XCTAssertTrue(error.description.contains("schema version 99"), error.description)
        }
        await second.close()
        XCTAssertEqual(try server.psql(database, "SELECT count(*) FROM flagship.schema_migrations"), before)
    }

    func testAnEditedStepIsRefusedAndTheSchemaLeftUntouched() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        let first = store(server, database: database)
        try await first.prepare()
        await first.close()
        try server.psql(database, "UPDATE flagship.schema_migrations SET checksum = 'fnv1a64:0000000000000000' WHERE version = 1")

        let second = store(server, database: database)
        do {
            try await second.prepare()
            XCTFail("an edited history must be refused")
        } catch {
            XCTAssertEqual(error.code, .migrationHistoryMismatch, "\(error)")
        }
        await second.close()
    }

    /// Another application's database: nothing written, a typed error naming what to do.
    func testADatabaseOfAnotherApplicationIsRefusedAndNothingIsWrittenToIt() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        try server.psql(database, "CREATE TABLE invoices (id serial PRIMARY KEY, total numeric)")
        let schemaBefore = try server.psql(database, "SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace")

        let refused = store(server, database: database)
        do {
            try await refused.prepare()
            XCTFail("a database with another application's tables must be refused")
        } catch {
            XCTAssertEqual(error.code, .sharedDatabase, "\(error)")
        }
        await refused.close()
        XCTAssertEqual(try server.psql(database, "SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace"), schemaBefore)

        // Said to share it, the SDK adds its schema and touches nothing else.
        let sharing = store(server, database: database, sharesDatabase: true)
        try await sharing.prepare()
        await sharing.close()
        XCTAssertEqual(try server.psql(database, "SELECT count(*) FROM invoices"), "0")
        XCTAssertEqual(try server.psql(database, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), "1")
    }

    func testAFlagshipSchemaThatIsNotOursIsRefusedAndLeftUntouched() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        try server.psql(database, "CREATE SCHEMA flagship; CREATE TABLE flagship.features (name text)")

        let store = store(server, database: database, sharesDatabase: true)
        do {
            try await store.prepare()
            XCTFail("another application's flagship schema must be refused")
        } catch {
            XCTAssertEqual(error.code, .foreignSchema, "\(error)")
        }
        await store.close()
        XCTAssertEqual(try server.psql(database, "SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = 'flagship'"), "features")
    }

    func testAWrongPasswordIsATypedErrorThatNeverShowsThePassword() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        let store = store(server, database: database, password: "not-the-password")
        do {
            try await store.prepare()
            XCTFail("a wrong password must be refused")
        } catch {
            XCTAssertEqual(error.code, .authenticationFailed, "\(error)")
            XCTAssertEqual(error.sqlState, "28P01")
            XCTAssertFalse(error.description.contains("not-the-password"), error.description)
        }
        await store.close()
    }

    func testAServerThatIsNotThereIsATypedErrorWithinTheConnectTimeout() async throws {
        _ = try postgres()
        let store = FlagshipPostgresStore(.init(host: "127.0.0.1", port: 1, username: "nobody", password: "x", database: "none"))
        let started = ContinuousClock.now
        do {
            try await store.prepare()
            XCTFail("an unreachable server must be reported")
        } catch {
            XCTAssertEqual(error.code, .unreachable, "\(error)")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(15))
        await store.close()
    }

    func testALocationReadsAURLAndNeverShowsItsPassword() throws {
        let location = try FlagshipPostgresStore.Location(url: "postgres://app:s%40cret@db.internal:6543/flags", environment: [:])
        XCTAssertEqual(location, .init(host: "db.internal", port: 6543, username: "app", password: "s@cret", database: "flags"))
        XCTAssertEqual(location.description, "postgres://app@db.internal:6543/flags")
        let fromEnvironment = try FlagshipPostgresStore.Location(url: "postgresql://app@db/flags", environment: ["PGPASSWORD": "p"])
        XCTAssertEqual(fromEnvironment.password, "p")
        XCTAssertEqual(fromEnvironment.port, 5432)
        for bad in ["mysql://a@b/c", "postgres://b/c", "postgres://a@b", "not a url"] {
            XCTAssertThrowsError(try FlagshipPostgresStore.Location(url: bad, environment: [:]), bad) { error in
                XCTAssertEqual((error as? FlagshipPostgresError)?.code, .invalidURL, bad)
            }
        }
    }

    /// A password with an unescaped `@` and `/`: the URL says two things (libpq would take `b` for
    /// the host). Refused, and nothing of the password is shown, in the error or anywhere it is
    /// described: nothing after the user name's first `:` up to the last `@`.
    func testAPasswordWithAnUnescapedAtSignIsRefusedWithoutShowingAnyOfIt() throws {
        let url = "postgres://postgres:a@b/sekrit-PW-123@127.0.0.1:55433/fleet"
        XCTAssertThrowsError(try FlagshipPostgresStore.Location(url: url, environment: [:])) { error in
            let error = error as? FlagshipPostgresError
            XCTAssertEqual(error?.code, .invalidURL)
            let text = "\(String(describing: error)) \(error?.description ?? "")"
            for secret in ["sekrit", "PW-123", "a@b", ":a"] {
                XCTAssertFalse(text.contains(secret), "\(secret) in \(text)")
            }
            XCTAssertTrue(text.contains("postgres://postgres@127.0.0.1:55433/fleet"), text)
        }
        XCTAssertEqual(FlagshipPostgresStore.Location.redacting(url), "postgres://postgres@127.0.0.1:55433/fleet")
        XCTAssertEqual(FlagshipPostgresStore.Location.redacting("postgres://app:s%40cret@db/flags"), "postgres://app@db/flags")
        XCTAssertEqual(FlagshipPostgresStore.Location.redacting("postgres://app@db/flags"), "postgres://app@db/flags")
        XCTAssertEqual(FlagshipPostgresStore.Location.redacting("postgres://db/flags"), "postgres://db/flags")
    }

    /// A URL the store cannot honour is refused before anything is connected, naming what: a port
    /// SwiftNIO would cut to 16 bits, a parameter it does not read, an unknown `sslmode`, a mode
    /// that checks certificates without a root certificate, a root certificate file that cannot
    /// be read.
    func testAURLAskingForWhatTheStoreCannotDoIsRefusedNamingIt() throws {
        func refusal(_ url: String, environment: [String: String] = [:]) -> FlagshipPostgresError? {
            do {
                _ = try FlagshipPostgresStore.Location(url: url, environment: environment)
                return nil
            } catch {
                return error
            }
        }
        for (url, named) in [("postgres://a@db:99999/flags", "port 99999"), ("postgres://a@db:0/flags", "port 0"),
                             ("postgres://a@db/flags?application_name=x", "'application_name'"),
                             ("postgres://a@db/flags?sslmode=verify-full", "sslmode verify-full checks the server's certificate, but no root certificate"),
                             ("postgres://a@db/flags?sslmode=verify-ca", "sslmode verify-ca checks"),
                             ("postgres://a@db/flags?sslmode=require&sslrootcert=/nonexistent/ca.pem",
                              "sslrootcert in the URL /nonexistent/ca.pem cannot be used: no such file"),
                             ("postgres://a@db/flags?sslmode=verify-full&sslrootcert=/etc/hostname", "it holds no"),
                             ("postgres://a@db/flags?sslmode=secure", "not a libpq sslmode")] {
            let error = refusal(url)
            XCTAssertEqual(error?.code, .invalidURL, url)
            XCTAssertTrue(error?.description.contains(named) == true, "\(url): \(error?.description ?? "accepted")")
        }
        let fromEnvironment = refusal("postgres://a@db/flags", environment: ["PGSSLMODE": "verify-full", "PGSSLROOTCERT": "/nonexistent/ca.pem"])
        XCTAssertEqual(fromEnvironment?.code, .invalidURL)
        XCTAssertTrue(fromEnvironment?.description.contains("PGSSLROOTCERT /nonexistent/ca.pem") == true, fromEnvironment?.description ?? "accepted")
        XCTAssertTrue(refusal("postgres://a@db/flags", environment: ["PGSSLMODE": "secure"])?.description.contains("PGSSLMODE is 'secure'") == true)
        // Accepted, from the URL or the environment; the URL's wins; libpq's default is prefer.
        for mode in ["disable", "allow", "prefer", "require"] {
            XCTAssertNil(refusal("postgres://a@db:65535/flags?sslmode=\(mode)"), mode)
            XCTAssertNil(refusal("postgres://a@db/flags", environment: ["PGSSLMODE": mode]), mode)
        }
        XCTAssertNil(refusal("postgres://a@db/flags?sslmode=verify-full&sslrootcert=system"))
        XCTAssertNil(refusal("postgres://a@db/flags?sslmode=disable", environment: ["PGSSLMODE": "verify-full"]))
        XCTAssertEqual(try FlagshipPostgresStore.Location(url: "postgres://a@db/flags", environment: [:]).security.mode, .prefer)
        XCTAssertEqual(try FlagshipPostgresStore.Location(url: "postgres://a@db/flags?sslmode=verify-full&sslrootcert=system",
                                                          environment: ["PGSSLMODE": "disable"]).security.description,
                       "sslmode=verify-full sslrootcert=system")
    }
}

final class SQLScriptTests: XCTestCase {
    func testStatementsAreCutAtSemicolonsOutsideQuotesCommentsAndDollarBodies() {
        let script = """
            -- a comment; with a semicolon
            CREATE TABLE a (t text DEFAULT 'x;y', "odd;name" int);
            /* block; comment */ INSERT INTO a VALUES ('it''s; fine', 1);
            CREATE FUNCTION f() RETURNS int AS $body$ BEGIN RETURN 1; END; $body$ LANGUAGE plpgsql;
            SELECT $1;
            -- trailing comment
            """
        XCTAssertEqual(SQLScript.statements(script), [
            "-- a comment; with a semicolon\nCREATE TABLE a (t text DEFAULT 'x;y', \"odd;name\" int)",
            "/* block; comment */ INSERT INTO a VALUES ('it''s; fine', 1)",
            "CREATE FUNCTION f() RETURNS int AS $body$ BEGIN RETURN 1; END; $body$ LANGUAGE plpgsql",
            "SELECT $1",
        ])
    }

    func testEveryShippedStepSplitsIntoStatementsThatEachEndWhereTheFileSaysSo() {
        for migration in Migration.postgres {
            let statements = SQLScript.statements(migration.sql)
            XCTAssertFalse(statements.isEmpty, migration.name)
            XCTAssertEqual(statements.count, migration.sql.components(separatedBy: ";\n").count - 1 + (migration.sql.hasSuffix(";") ? 1 : 0),
                           "\(migration.name): one statement per ';' at a line's end")
        }
    }
}
#endif
