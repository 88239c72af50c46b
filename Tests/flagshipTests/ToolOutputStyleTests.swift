import FlagshipLocalServer
import Foundation
import XCTest

/// Every command writes its failures and warnings alike: `Error: <message>` (exit 1, or 64 with
/// the command's usage for a misused option) and `warning: <message>`, the SDK's own log lines
/// included; and when stdout and stderr go to one file, a summary comes after what it sums up.
final class ToolOutputStyleTests: CommandTestCase {
    private func flagship(_ arguments: [String]) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.run(arguments, outputDirectory: outputDirectory)
    }

    /// Runs the tool with stdout and stderr into one file, as `cmd >log 2>&1` or a pipe to a pager.
    private func merged(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let file = outputDirectory.appendingPathComponent("\(UUID().uuidString).merged")
        XCTAssertTrue(FileManager.default.createFile(atPath: file.path, contents: nil))
        let handle = try FileHandle(forWritingTo: file)
        let process = Process()
        process.executableURL = try FlagshipExecutable.location()
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        try handle.close()
        process.waitUntilExit()
        return (process.terminationStatus, try String(contentsOf: file, encoding: .utf8))
    }

    /// Lines that are the tool's: each stderr line is one of its two kinds.
    private func assertStyled(_ stderr: String, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
        for text in stderr.split(separator: "\n") where !text.hasPrefix("Usage: ") && !text.hasPrefix("  See '") {
            XCTAssertTrue(text.hasPrefix("Error: ") || text.hasPrefix("warning: "), "\(context): \(text)", file: file, line: line)
        }
    }

    func testFailuresOfSeveralCommandsAreOneErrorLineAndExitOne() throws {
        let missing = storeDirectory.appendingPathComponent("missing.sqlite").path
        let failures: [([String], String)] = [
            (["db", "inspect", "--db", missing], "Error: no store at \(missing) (`flagship db migrate --db \(missing)` creates one)\n"),
            (["eval", "--bucketing-file", "/nonexistent/file.json", "--visitor-id", "v1"],
             "Error: cannot read the bucketing file /nonexistent/file.json: no such file\n"),
            (["replay", "--env-id", "env", "--api-key", "key", "--db", missing], "Error: no store at \(missing): nothing to replay\n"),
            (["db", "salvage", "--db", storeFile.path, "--from", "/nonexistent/damaged.sqlite"], "Error: no file at /nonexistent/damaged.sqlite\n"),
            (["fetch", "--env-id", "env", "--api-key-file", "/nonexistent/key", "--visitor-id", "v1", "--db", storeFile.path],
             "Error: the API key file /nonexistent/key cannot be read: no such file\n"),
        ]
        for (arguments, expected) in failures {
            let result = try flagship(arguments)
            XCTAssertEqual(result.status, 1, arguments.joined(separator: " "))
            XCTAssertEqual(result.stdout, "", arguments.joined(separator: " "))
            XCTAssertEqual(result.stderr, expected)
        }
    }

    /// A misused option: `Error:`, this command's usage (not the tool's), exit 64; the message
    /// ends without a full stop, as every other.
    func testUsageErrorsNameTheCommandTheyAreAbout() throws {
        let misuses: [([String], String, String)] = [
            (["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", "v1", "--context", "[1]"],
             "Error: --context must be a JSON object, for example '{\"plan\": \"pro\", \"age\": 32, \"isVip\": true}'", "flagship fetch"),
            (["hits", "--db", storeFile.path, "--limit", "0"], "Error: --limit must be a positive number of hits, not 0", "flagship hits"),
            (["db", "prune", "--db", storeFile.path, "--retention=-1"],
             "Error: --retention must be a number of seconds, 0 or more", "flagship db prune"),
        ]
        for (arguments, message, usage) in misuses {
            let result = try flagship(arguments)
            let lines = result.stderr.split(separator: "\n").map(String.init)
            XCTAssertEqual(result.status, 64, result.stderr)
            XCTAssertEqual(lines.first, message)
            XCTAssertTrue(lines.dropFirst().first?.hasPrefix("Usage: \(usage) ") ?? false, result.stderr)
        }
    }

    /// The SDK's log lines during a command are written as the tool's own: no timestamp, no
    /// logger label.
    func testTheSDKsLogLinesAreWrittenInTheToolsStyle() throws {
        let result = try flagship(["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", "v1", "--db", storeFile.path,
                                   "--decision-url", "http://127.0.0.1:1/v2", "--events-url", "http://127.0.0.1:1", "--timeout", "500"])

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains(
            "warning: Flags cannot be fetched (the Decision API could not be reached: could not connect to 127.0.0.1:1"), result.stderr)
        XCTAssertFalse(result.stderr.contains("io.flagship"), result.stderr)
        assertStyled(result.stderr, "fetch")
    }

    /// `doctor >log 2>&1`: the checks first, then the failure that sums them up.
    func testDoctorsSummaryComesAfterItsChecksInOneFile() throws {
        let (status, output) = try merged(["doctor", "--env-id", "env", "--api-key", "key", "--db", storeFile.path,
                                           "--decision-url", "http://127.0.0.1:1/v2", "--events-url", "http://127.0.0.1:1",
                                           "--timeout", "500"])

        XCTAssertEqual(status, 1, output)
        let lines = output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.last, "Error: 2 check(s) failed: Decision API accepts the key, events endpoint reachable", output)
        XCTAssertEqual(lines.filter { $0.hasPrefix("ok   ") || $0.hasPrefix("FAIL ") || $0.hasPrefix("note ") }.count, lines.count - 1,
                       "every other line is a check: \(output)")
        // The SDK's own words for a server that cannot be reached.
        XCTAssertTrue(lines.contains {
            $0.hasPrefix("FAIL Decision API accepts the key: ")
                && $0.hasSuffix("the Decision API could not be reached: could not connect to 127.0.0.1:1 (connection refused or unreachable)")
        }, output)
        XCTAssertTrue(lines.contains {
            $0.hasPrefix("FAIL events endpoint reachable: ")
                && $0.hasSuffix("the events endpoint could not be reached: could not connect to 127.0.0.1:1 (connection refused or unreachable)")
        }, output)
    }

    /// `replay >log 2>&1` with the server down: the summary, then why it exits 1.
    func testReplaysFailureComesAfterItsSummaryInOneFile() throws {
        let server = LocalFlagshipServer(envId: "env", apiKey: "key")
        try server.start()
        let sdk = ["--env-id", "env", "--api-key", "key", "--db", storeFile.path,
                   "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString]
        server.stop()
        XCTAssertEqual(try flagship(["send-hit", "--visitor-id", "v1", "--screen", "home"] + sdk).status, 0)

        let (status, output) = try merged(["replay"] + sdk)

        XCTAssertEqual(status, 1, output)
        let lines = output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.suffix(2), [#"{"replayed": 0, "expired": 0, "remaining": 2}"#,
                                         "Error: 2 hit(s) remain in \(storeFile.path): the next start (or replay) sends them"], output)
        assertStyled(lines.dropLast(2).joined(separator: "\n"), "replay")
    }
}
