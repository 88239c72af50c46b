import FlagshipLocalServer
import Foundation
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every command that takes the API key takes it from `FLAGSHIP_API_KEY` or a key file too, so
/// that it need not be in the argument list, which any user of the machine sees in `ps`.
final class HostileAPIKeySourcesTests: CommandTestCase {
    private var server: LocalFlagshipServer!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = LocalFlagshipServer(envId: "env", apiKey: "key-from-elsewhere")
        try server.start()
    }

    override func tearDownWithError() throws {
        server.stop()
        try super.tearDownWithError()
    }

    /// This environment, without a key unless `key` is given.
    private func environment(key: String? = nil) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["FLAGSHIP_API_KEY"] = key
        return environment
    }

    private func fetch(_ extra: [String], environment: [String: String]) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.run(
            ["fetch", "--env-id", "env", "--visitor-id", "v1", "--db", storeFile.path,
             "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString] + extra,
            outputDirectory: outputDirectory, environment: environment)
    }

    private func keyFile(_ contents: String, mode: Int) throws -> String {
        let file = outputDirectory.appendingPathComponent("api-key-\(UUID().uuidString)")
        try Data(contents.utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file.path)
        return file.path
    }

    private var keysReceived: [String?] {
        server.received(.campaigns).map { $0.headers["x-api-key"] }
    }

    func testFetchTakesTheKeyFromTheEnvironment() throws {
        let result = try fetch([], environment: environment(key: "key-from-elsewhere"))

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("\"FETCHED\""), result.stdout)
        XCTAssertEqual(keysReceived, ["key-from-elsewhere"])
    }

    func testFetchTakesTheKeyFromAFileWithoutItsNewline() throws {
        let file = try keyFile("key-from-elsewhere\n", mode: 0o600)

        let result = try fetch(["--api-key-file", file], environment: environment(key: "not-this-one"))

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "", "no warning for a file only its owner reads")
        XCTAssertEqual(keysReceived, ["key-from-elsewhere"])
    }

    func testAKeyFileOthersCanReadWorksWithAWarning() throws {
        let file = try keyFile("key-from-elsewhere\r\n", mode: 0o644)

        let result = try fetch(["--api-key-file", file], environment: environment())

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("warning: other users can read or change the API key file \(file) (mode 644)"), result.stderr)
        XCTAssertFalse(result.stderr.contains("key-from-elsewhere"), "the key itself is never printed")
        XCTAssertEqual(keysReceived, ["key-from-elsewhere"])
    }

    func testAnExplicitKeyWinsOverTheEnvironment() throws {
        let result = try fetch(["--api-key", "key-from-elsewhere"], environment: environment(key: "not-this-one"))

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(keysReceived, ["key-from-elsewhere"])
    }

    func testNoKeyAnywhereOrTwoKeysAreRefusedBeforeAnythingIsSent() throws {
        let none = try fetch([], environment: environment(key: ""))
        let both = try fetch(["--api-key", "a", "--api-key-file", try keyFile("b", mode: 0o600)], environment: environment())
        let empty = try fetch(["--api-key-file", try keyFile("\n", mode: 0o600)], environment: environment())
        let missing = try fetch(["--api-key-file", outputDirectory.appendingPathComponent("nope").path], environment: environment())

        XCTAssertNotEqual(none.status, 0)
        XCTAssertTrue(none.stderr.contains("an API key is needed: set FLAGSHIP_API_KEY, or give --api-key-file or --api-key"), none.stderr)
        XCTAssertNotEqual(both.status, 0)
        XCTAssertTrue(both.stderr.contains("give one of --api-key and --api-key-file"), both.stderr)
        XCTAssertNotEqual(empty.status, 0)
        XCTAssertTrue(empty.stderr.contains("is empty"), empty.stderr)
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.stderr.contains("cannot be read"), missing.stderr)
        XCTAssertEqual(server.received.count, 0)
    }

    func testSendHitAndReplayTakeTheKeyFromTheEnvironment() throws {
        let sdkOptions = ["--env-id", "env", "--db", storeFile.path,
                          "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString]
        server.injectFault(.status(503), on: .events, share: .next(1))
        let sent = try FlagshipExecutable.run(["send-hit", "--visitor-id", "v1", "--screen", "home"] + sdkOptions,
                                              outputDirectory: outputDirectory, environment: environment(key: "key-from-elsewhere"))
        XCTAssertEqual(sent.status, 0, sent.stderr)

        let replayed = try FlagshipExecutable.run(["replay"] + sdkOptions, outputDirectory: outputDirectory,
                                                  environment: environment(key: "key-from-elsewhere"))

        XCTAssertEqual(replayed.status, 0, replayed.stderr)
        XCTAssertEqual(server.hits.compactMap { $0["dl"]?.stringValue }, ["home"])
    }

    func testEveryCommandTakingAKeySaysInItsHelpWhereElseItCanCome() throws {
        for command in ["fetch", "send-hit", "replay", "serve"] {
            let help = try FlagshipExecutable.run([command, "--help"], outputDirectory: outputDirectory).stdout
                .split(whereSeparator: \.isWhitespace).joined(separator: " ")
            XCTAssertTrue(help.contains("--api-key-file <path>"), "\(command): \(help)")
            XCTAssertTrue(help.contains("FLAGSHIP_API_KEY"), "\(command): \(help)")
            XCTAssertTrue(help.contains("`ps`"), "\(command): \(help)")
        }
    }

    func testServeTakesTheKeyItChecksFromTheEnvironment() async throws {
        let running = try FlagshipExecutable.start(["serve", "--env-id", "env", "--port", "0"], outputDirectory: outputDirectory,
                                                   environment: environment(key: "served-key"))
        defer { running.kill(SIGTERM) }
        let decisionURL = try await running.decisionURLPrinted()

        var statuses: [Int] = []
        for key in ["served-key", "wrong"] {
            var request = URLRequest(url: try XCTUnwrap(URL(string: decisionURL + "/env/campaigns")))
            request.httpMethod = "POST"
            request.setValue(key, forHTTPHeaderField: "x-api-key")
            request.httpBody = Data(#"{"visitorId": "v1", "context": {}}"#.utf8)
            let (_, response) = try await URLSession.shared.data(for: request)
            statuses.append(try XCTUnwrap(response as? HTTPURLResponse).statusCode)
        }

        XCTAssertEqual(statuses, [200, 403])
    }
}
