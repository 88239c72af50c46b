import FlagshipLocalServer
import Foundation
import XCTest

/// What `--help` and `--version` say is true: the version is the one the SDK sends, each
/// command's `--db` says what it takes, defaults print as they are typed, `doctor --help` names
/// its own options.
final class ToolHelpTests: CommandTestCase {
    private func help(_ command: [String]) throws -> String {
        let result = try flagship(command + ["--help"])
        XCTAssertEqual(result.status, 0, result.stderr)
        return result.stdout
    }

    private func flagship(_ arguments: [String]) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.run(arguments, outputDirectory: outputDirectory)
    }

    func testVersionIsTheOneTheSDKSendsToTheServers() throws {
        let server = LocalFlagshipServer(envId: "env", apiKey: "key")
        try server.start()
        defer { server.stop() }
        let fetch = try flagship(["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", "v1", "--db", storeFile.path,
                                  "--decision-url", server.decisionBaseURL.absoluteString,
                                  "--events-url", server.eventsBaseURL.absoluteString])
        XCTAssertEqual(fetch.status, 0, fetch.stderr)
        let sent = try XCTUnwrap(server.received(.campaigns).first?.request.headers["x-sdk-version"])

        let version = try flagship(["--version"])

        XCTAssertEqual(version.status, 0, version.stderr)
        XCTAssertEqual(version.stdout, sent + "\n")
        XCTAssertTrue(sent.split(separator: ".").count == 3 && sent.split(separator: ".").allSatisfy { Int($0) != nil }, sent)
    }

    /// Each command's `--db` help mentions a PostgreSQL URL exactly when the command takes one,
    /// and the commands that refuse one name those that take it.
    func testEachCommandsDbHelpSaysWhetherItTakesAPostgreSQLStore() throws {
        let postgres = "postgres://nobody@127.0.0.1:1/none"
        let sdk = ["--env-id", "env", "--api-key", "key"]
        let commands: [(command: [String], takesPostgres: Bool, extra: [String])] = [
            (["db", "migrate"], false, []), (["db", "inspect"], true, []), (["db", "prune"], false, []),
            (["db", "salvage"], false, ["--from", "/nonexistent"]), (["visitors"], true, ["--env-id", "env"]),
            (["hits"], true, ["--env-id", "env"]), (["why"], true, ["--env-id", "env", "--visitor-id", "v1"]),
            (["export"], true, ["--env-id", "env", "--visitor-id", "v1"]),
            (["fetch"], false, sdk + ["--visitor-id", "v1"]), (["send-hit"], false, sdk + ["--visitor-id", "v1", "--screen", "s"]),
            (["replay"], true, sdk), (["doctor"], false, sdk),
        ]
        let takers = "`db inspect`, `visitors`, `hits`, `why`, `export` and `replay`"
        for (command, takesPostgres, extra) in commands {
            let name = command.joined(separator: " ")
            let text = try help(command)
            XCTAssertTrue(text.contains("--db <"), "\(name): \(text)")
            XCTAssertEqual(text.contains("postgres://"), takesPostgres, "\(name)'s help: \(text)")
            XCTAssertEqual(takers.contains("`\(name)`"), takesPostgres, name)

            let result = try flagship(command + ["--db", postgres] + extra)

            XCTAssertNotEqual(result.status, 0, name)
            let refused = "Error: `flagship \(name)` needs a SQLite store file, not \(postgres): with PostgreSQL, \(takers) take --db postgres://...\n"
            if takesPostgres {
                XCTAssertFalse(result.stderr.contains("needs a SQLite store file"), "\(name): \(result.stderr)")
            } else {
                XCTAssertEqual(result.stderr, refused, name)
            }
        }
    }

    func testMillisecondsAndSecondsDefaultsPrintAsWholeNumbersAndOnlyWholeNumbersAreTaken() throws {
        let defaults: [([String], String)] = [
            (["fetch"], "(default: 2000)"), (["doctor"], "(default: 5000)"),
            (["db", "prune"], "(default: 2592000)"), (["db", "inspect"], "(default: 2592000)"),
        ]
        for (command, shown) in defaults {
            // Help wraps its lines: read it as one.
            let text = try help(command).split(whereSeparator: \.isWhitespace).joined(separator: " ")
            XCTAssertTrue(text.contains(shown), "\(command): \(text)")
            XCTAssertNil(text.range(of: #"default: [0-9]+\.[0-9]"#, options: .regularExpression), "\(command): \(text)")
        }

        let fractional = try flagship(["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", "v1", "--timeout", "1.5"])

        XCTAssertEqual(fractional.status, 64)
        XCTAssertTrue(fractional.stderr.hasPrefix("Error: The value '1.5' is invalid for '--timeout <ms>'"), fractional.stderr)
    }

    /// `doctor --help` describes the options doctor takes, each of them, and none of fetch's.
    func testDoctorHelpNamesExactlyItsOwnOptions() throws {
        let text = try help(["doctor"])
        // The abstract and the description: the usage line names every option anyway.
        let overview = String(text[..<(text.range(of: "USAGE:")?.lowerBound ?? text.endIndex)])
        let options = Set(text.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.drop { $0 == " " }
            guard trimmed.hasPrefix("--"), line.hasPrefix("  ") else { return nil }
            return String(trimmed.prefix { $0 != " " && $0 != "," })
        }).subtracting(["--help", "--version"])

        XCTAssertEqual(options, ["--env-id", "--api-key", "--api-key-file", "--db", "--decision-url", "--events-url", "--mode",
                                 "--bucketing-url", "--timeout"], text)
        let flattened = overview.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for option in options {
            XCTAssertTrue(flattened.contains(option), "the description names \(option): \(overview)")
        }
        for fetchOnly in ["--visitor-id", "--offline", "--context", "--bootstrap", "--no-consent", "options of fetch"] {
            XCTAssertFalse(text.contains(fetchOnly), "doctor takes no \(fetchOnly): \(text)")
        }
    }
}
