import FlagshipLocalServer
import Foundation
import XCTest

/// `--context` values are sent exactly or refused, naming the key and why (issue 18, point 11).
final class HostileContextCommandTests: CommandTestCase {
    private var server: LocalFlagshipServer!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = LocalFlagshipServer(envId: "env", apiKey: "key", decision: .echoingVisitorId(["visitorId": "", "campaigns": []]))
        try server.start()
    }

    override func tearDownWithError() throws {
        server.stop()
        try super.tearDownWithError()
    }

    private func fetch(context: String) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.run(
            ["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", "v1", "--db", storeFile.path,
             "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString,
             "--timeout", "500", "--context", context],
            outputDirectory: outputDirectory)
    }

    func testFetchRefusesAValueItCannotSendExactlyNamingTheKeyAndSendsNothing() throws {
        let cases: [(context: String, reason: String)] = [
            (#"{"plan": "pro", "big": 18446744073709551615}"#, #"the value of "big" 18446744073709551615 is an integer outside"#),
            (#"{"plan": "pro", "big": 1e29}"#, #"the value of "big" 1e29 is an integer outside"#),
            (#"{"plan": "pro", "huge": 1e309}"#, #"the value of "huge" 1e309 is not a finite number"#),
            (#"{"plan": "pro", "nan": NaN}"#, #"the value of "nan" NaN is not a finite number"#),
            (#"{"plan": "pro", "fs_client": "forged"}"#, #""fs_client" is refused: keys starting with fs_ belong to the SDK"#),
            (#"{"plan": "pro", "nested": {"a": 1}}"#, #"the value of "nested" must be a string, a number or a boolean"#),
        ]
        for (context, reason) in cases {
            let result = try fetch(context: context)
            XCTAssertNotEqual(result.status, 0, context)
            XCTAssertTrue(result.stderr.contains("--context: " + reason), "\(context): \(result.stderr)")
            XCTAssertEqual(result.stdout, "", context)
        }
        XCTAssertEqual(server.received(.campaigns).count, 0)
    }

    func testFetchSendsTheLargestIntegersExactly() throws {
        let result = try fetch(context: #"{"max": 9223372036854775807, "min": -9223372036854775808, "odd": 9007199254740993}"#)

        XCTAssertEqual(result.status, 0, result.stderr)
        let body = String(decoding: try XCTUnwrap(server.received(.campaigns).last).request.body, as: UTF8.self)
        for expected in [#""max"\s*:\s*9223372036854775807[,}]"#, #""min"\s*:\s*-9223372036854775808[,}]"#, #""odd"\s*:\s*9007199254740993[,}]"#] {
            XCTAssertNotNil(body.range(of: expected, options: .regularExpression), "\(expected) in \(body)")
        }
    }

    func testEvalRefusesAnInexactIntegerNamingTheKey() throws {
        let file = outputDirectory.appendingPathComponent("bucketing.json")
        try Data(#"{"campaigns": []}"#.utf8).write(to: file)
        let result = try flagship("eval", "--bucketing-file", file.path, "--visitor-id", "v", "--context", #"{"big": 18446744073709551615}"#)

        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains(#"--context: the value of "big" 18446744073709551615 is an integer outside"#), result.stderr)
    }
}
