import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

/// `fetch --offline --mode bucketing`: deciding needs no network, so a visitor the store has never
/// seen is decided from the stored bucketing file, else from `--bootstrap`, exactly as online,
/// and nothing leaves the process.
final class OfflineBucketingFetchTests: SampleServerCommandTestCase {
    private func fetch(_ visitorId: String, _ extra: [String]) throws -> [String: Any] {
        let result = try FlagshipExecutable.run(
            ["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", visitorId, "--db", storeFile.path, "--mode", "bucketing",
             "--bucketing-url", server.bucketingBaseURL.absoluteString, "--decision-url", server.decisionBaseURL.absoluteString,
             "--events-url", server.eventsBaseURL.absoluteString, "--context", #"{"plan": "pro"}"#] + extra,
            outputDirectory: outputDirectory, timeout: 30)
        XCTAssertEqual(result.status, 0, result.stderr)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout + result.stderr)
    }

    private static func values(_ output: [String: Any]) -> [String: String] {
        ((output["flags"] as? [String: [String: Any]]) ?? [:]).mapValues { "\($0["value"] ?? NSNull())" }
    }

    private static func reasons(_ output: [String: Any]) -> Set<String> {
        Set(((output["flags"] as? [String: [String: Any]]) ?? [:]).values.compactMap { $0["reason"] as? String })
    }

    func testTheStoredBucketingFileDecidesANewVisitorOfflineAsOnline() throws {
        // An online run stores the file (for another visitor).
        XCTAssertEqual(try fetch("first", [])["fetchStatus"] as? String, "FETCHED")
        server.clearReceived()

        let offline = try fetch("newcomer", ["--offline"])

        XCTAssertEqual(server.received.map { "\($0.request.method) \($0.request.path)" }, [], "nothing left the process")
        XCTAssertEqual(offline["fetchStatus"] as? String, "FETCHED", "\(offline)")
        XCTAssertEqual(offline["fetchReason"] as? String, "NONE")
        XCTAssertNil(offline["error"], "\(offline)")
        XCTAssertFalse(Self.values(offline).isEmpty, "decided: \(offline)")
        XCTAssertFalse(Self.reasons(offline).contains("CACHED"), "decided now, not read from the visitor cache: \(offline)")
        // Online, the same file decides the same for this visitor.
        let online = try fetch("newcomer", [])
        XCTAssertEqual(Self.values(online), Self.values(offline))
    }

    func testTheBootstrapFileDecidesANewVisitorOfflineWithReasonStatic() throws {
        let bootstrap = outputDirectory.appendingPathComponent("bootstrap.json")
        try Data(FlagsCommandTests.fixture.utf8).write(to: bootstrap)

        let output = try fetch("newcomer", ["--offline", "--bootstrap", bootstrap.path])

        XCTAssertEqual(server.received.count, 0, "nothing left the process")
        XCTAssertEqual(output["fetchStatus"] as? String, "FETCHED", "\(output)")
        let flags = try XCTUnwrap(output["flags"] as? [String: [String: Any]])
        XCTAssertEqual(flags["btnColor"]?["reason"] as? String, "STATIC")
        XCTAssertEqual(flags["btnColor"]?["campaignId"] as? String, "c_checkout")
    }

    /// Neither a stored file nor a bootstrap: the fetch fails at once and says why, instead of
    /// waiting for a download that cannot come.
    func testWithoutAnyBucketingFileTheOfflineFetchFailsAtOnce() throws {
        let started = Date()

        let output = try fetch("newcomer", ["--offline"])

        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "no wait for a download")
        XCTAssertEqual(server.received.count, 0)
        XCTAssertEqual(output["fetchReason"] as? String, "FETCH_ERROR", "\(output)")
        XCTAssertTrue((output["error"] as? String)?.contains("no bucketing file") ?? false, "\(output)")
    }
}
