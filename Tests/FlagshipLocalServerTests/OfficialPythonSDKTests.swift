import Foundation
import XCTest

import FlagshipLocalServer

/// The official Flagship Python SDK (3.0.1, from PyPI) against the local server, in both its
/// modes, as a user of it would point it at `flagship serve`: every request it sends is a route
/// the server answers (none recorded as unknown), its flags are the server's, and its activates
/// and hits arrive. `make test` installs the SDK in `.build-python` (`make python-sdk`); without
/// it the test is skipped, unless `FLAGSHIP_REQUIRE_PYTHON_SDK=1` makes its absence a failure.
final class OfficialPythonSDKTests: XCTestCase {
    private static let envId = "py_env"
    private static let apiKey = "py_key"

    /// The server with the sample bucketing file, deciding with it in Decision API mode too.
    private func startedServer() throws -> LocalFlagshipServer {
        let server = LocalFlagshipServer(LocalFlagshipServer.Configuration(
            envId: Self.envId, apiKey: Self.apiKey, decision: .bucketing, bucketingFile: ServedBucketingFile.sample()))
        _ = try server.start()
        addTeardownBlock { server.stop() }
        return server
    }

    private func drive(_ mode: String, against server: LocalFlagshipServer) throws -> [String: Any] {
        let outcome = try OfficialPythonSDK.run(script: "drive.py", [server.baseURL.absoluteString, Self.envId, Self.apiKey, mode])
        XCTAssertEqual(outcome.status, 0, outcome.stderr)
        let line = try XCTUnwrap(outcome.stdout.split(separator: "\n").last, outcome.stderr)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], String(line))
    }

    private func check(_ mode: String, campaignsRequests: Int, bucketingRequests: Int) throws {
        let server = try startedServer()

        let answer = try drive(mode, against: server)

        let values = try XCTUnwrap(answer["values"] as? [String: Any])
        XCTAssertEqual(values["status"] as? String, "READY", "\(answer)")
        XCTAssertEqual(values["btnColor"] as? String, "green", "the sample file's flag for this visitor")
        XCTAssertEqual(server.received(.unknown).map(\.request.path), [], "every request the SDK sent has a route")
        XCTAssertEqual(server.received(.campaigns).count, campaignsRequests)
        XCTAssertEqual(server.received(.bucketing).count, bucketingRequests)
        XCTAssertEqual(server.received(.campaigns).map(\.status), Array(repeating: 200, count: campaignsRequests))
        XCTAssertTrue(server.received(.activate).contains { $0.status == 204 }, "the exposure's activate was taken")
        let events = server.hits.filter { $0["t"]?.stringValue == "EVENT" }.compactMap { $0["ea"]?.stringValue }
        XCTAssertTrue(events.contains("checkout"), "\(events)")
        let logged = (answer["logged"] as? [String]) ?? []
        XCTAssertFalse(logged.contains { $0.contains("HTTP") || $0.contains("404") || $0.contains("Error (") }, "\(logged)")
    }

    func testThePythonSDKInDecisionAPIModeGetsItsFlagsFromTheServer() throws {
        try check("api", campaignsRequests: 1, bucketingRequests: 0)
    }

    func testThePythonSDKInBucketingModeGetsTheFileAndDecidesTheSameFlags() throws {
        try check("bucketing", campaignsRequests: 0, bucketingRequests: 1)
    }
}
