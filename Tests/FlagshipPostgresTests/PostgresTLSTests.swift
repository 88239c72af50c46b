#if Postgres
import Foundation
import PostgresTestSupport
import XCTest

@testable import FlagshipPostgres

/// `sslmode` and `sslrootcert` as libpq has them, against real servers with a self-signed
/// certificate issued for `localhost` (issue 33: `sslmode` was ignored and passwords crossed the
/// wire in clear).
final class PostgresTLSTests: PostgresTestCase {
    /// A server of the test's own with TLS, and a database there.
    private func tlsServer(_ tls: TemporaryPostgres.TLS) throws -> (TemporaryPostgres, String) {
        _ = try postgres()   // skips, or fails in CI, as the others do
        let server = try TemporaryPostgres(tls: tls)
        return (server, try server.createDatabase())
    }

    /// `prepare()` on the URL's store: the schema version, or the error.
    private func prepare(_ url: String, password: String) async -> Result<Int, FlagshipPostgresError> {
        let location: FlagshipPostgresStore.Location
        do {
            location = try FlagshipPostgresStore.Location(url: url, environment: ["PGPASSWORD": password])
        } catch {
            return .failure(error)
        }
        let store = FlagshipPostgresStore(location, sharesDatabase: false, logger: logger, callTimeout: .seconds(5), retryAfter: 1)
        let result: Result<Int, FlagshipPostgresError>
        do {
            result = .success(try await store.prepare(timeout: .seconds(10)))
        } catch {
            result = .failure(error)
        }
        await store.close()
        return result
    }

    /// A second self-signed certificate, of an authority that signed nothing the server shows.
    private func otherAuthority() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-other-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", directory.appendingPathComponent("ca.key").path,
                             "-out", directory.appendingPathComponent("ca.crt").path, "-days", "2", "-subj", "/CN=localhost",
                             "-addext", "subjectAltName=DNS:localhost"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        return directory.appendingPathComponent("ca.crt")
    }

    /// The server takes TCP connections over TLS only: `require` connects (so it encrypted), and
    /// `disable` is refused by the server; `prefer`, the default, encrypts too.
    func testRequireEncryptsWhereAServerAcceptsNothingInClear() async throws {
        let (server, database) = try tlsServer(.required)
        defer { server.stop() }
        let base = "postgres://\(server.username)@127.0.0.1:\(server.port)/\(database)"

        let required = await prepare(base + "?sslmode=require", password: server.password)
        XCTAssertNoThrow(try required.get(), "\(required)")
        let preferred = await prepare(base, password: server.password)
        XCTAssertNoThrow(try preferred.get(), "the default, prefer: \(preferred)")
        guard case .failure(let refused) = await prepare(base + "?sslmode=disable", password: server.password) else {
            return XCTFail("a connection in clear was accepted by a server that takes TLS only")
        }
        XCTAssertTrue(refused.description.contains("no encryption"), refused.description)
        XCTAssertNotEqual(try server.psql(database, "SELECT count(*) FROM flagship.schema_migrations"), "0", "migrated over TLS")
    }

    /// `verify-full` checks that the certificate was issued for the host connected to: the
    /// server's is for `localhost`, so `127.0.0.1` is refused and `localhost` accepted;
    /// `verify-ca` checks the signature only.
    func testVerifyFullRefusesAnotherHostsCertificateAndVerifyCAChecksTheSignatureOnly() async throws {
        let (server, database) = try tlsServer(.required)
        defer { server.stop() }
        let root = try XCTUnwrap(server.certificate).path
        func url(_ host: String, _ mode: String) -> String {
            "postgres://\(server.username)@\(host):\(server.port)/\(database)?sslmode=\(mode)&sslrootcert=\(root)"
        }

        guard case .failure(let wrongHost) = await prepare(url("127.0.0.1", "verify-full"), password: server.password) else {
            return XCTFail("verify-full accepted a certificate issued for another host")
        }
        XCTAssertEqual(wrongHost.code, .transportSecurity, wrongHost.description)
        let rightHost = await prepare(url("localhost", "verify-full"), password: server.password)
        XCTAssertNoThrow(try rightHost.get(), "\(rightHost)")
        let signatureOnly = await prepare(url("127.0.0.1", "verify-ca"), password: server.password)
        XCTAssertNoThrow(try signatureOnly.get(), "\(signatureOnly)")
    }

    /// A certificate signed by an authority the client does not trust is refused by `verify-ca`,
    /// and by `require` once a root certificate is given (libpq's rule); plain `require` takes it.
    func testACertificateOfAnUntrustedAuthorityIsRefused() async throws {
        let (server, database) = try tlsServer(.offered)
        defer { server.stop() }
        let other = try otherAuthority().path
        let base = "postgres://\(server.username)@localhost:\(server.port)/\(database)"

        for mode in ["verify-ca", "verify-full", "require"] {
            guard case .failure(let refused) = await prepare(base + "?sslmode=\(mode)&sslrootcert=\(other)", password: server.password) else {
                XCTFail("\(mode) accepted a certificate of an authority it does not trust")
                continue
            }
            XCTAssertEqual(refused.code, .transportSecurity, "\(mode): \(refused.description)")
        }
        let unchecked = await prepare(base + "?sslmode=require", password: server.password)
        XCTAssertNoThrow(try unchecked.get(), "\(unchecked)")
    }

    /// A server without TLS: `require` is refused before anything is sent in clear; `prefer`
    /// (the default) connects in clear, as libpq does.
    func testAServerWithoutTLSFailsRequireAndServesPreferInClear() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        let base = "postgres://\(server.username)@127.0.0.1:\(server.port)/\(database)"

        guard case .failure(let refused) = await prepare(base + "?sslmode=require", password: server.password) else {
            return XCTFail("require connected to a server without TLS")
        }
        XCTAssertEqual(refused.code, .transportSecurity, refused.description)
        XCTAssertTrue(refused.description.contains("does not offer TLS"), refused.description)
        let preferred = await prepare(base + "?sslmode=prefer", password: server.password)
        XCTAssertNoThrow(try preferred.get(), "\(preferred)")
    }
}
#endif
