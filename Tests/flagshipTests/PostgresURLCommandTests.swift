#if Postgres
import Foundation
import XCTest

/// A `--db postgres://` URL the store cannot honour is refused before any connection, naming what;
/// a password in it draws a warning (the argument list is public), and is never printed.
final class PostgresURLCommandTests: CommandTestCase {
    func testAnImpossiblePortAndATLSModeWithoutItsCertificateAreRefusedNamingThem() throws {
        for (url, named) in [("postgres://app@127.0.0.1:99999/flags", "port 99999 is not a TCP port"),
                             ("postgres://app@127.0.0.1/flags?sslmode=verify-full", "no root certificate is given"),
                             ("postgres://app@127.0.0.1/flags?connect_timeout=3", "'connect_timeout'")] {
            let result = try flagship("hits", "--db", url)
            XCTAssertEqual(result.status, 1, url)
            XCTAssertTrue(result.stderr.hasPrefix("Error: --db: "), "\(url): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(named), "\(url): \(result.stderr)")
        }
    }

    func testAPasswordInTheURLIsWarnedAboutOnceAndNeverPrinted() throws {
        // Port 1 on loopback: refused at once, so the command fails after the warning.
        let result = try flagship("db", "inspect", "--db", "postgres://app:s3cr3t-word@127.0.0.1:1/flags")
        XCTAssertNotEqual(result.status, 0)
        XCTAssertEqual(result.stderr.components(separatedBy: "warning: --db holds a password").count - 1, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("PGPASSWORD"), result.stderr)
        XCTAssertFalse((result.stdout + result.stderr).contains("s3cr3t-word"))
    }
}
#endif
