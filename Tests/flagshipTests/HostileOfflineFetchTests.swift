import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

/// `fetch --offline` sends nothing at all: not the decision request, not the consent hit, not
/// to the servers given, not to the public hosts when none is given. What would have gone waits
/// in the store for the next run that is online.
final class HostileOfflineFetchTests: HitCommandTestCase {
    /// This environment without an API key, plus `extra`.
    private func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["FLAGSHIP_API_KEY"] = nil
        return environment.merging(extra) { $1 }
    }

    private func fetchOffline(_ servers: [String], environment: [String: String]) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.run(
            ["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", "v1", "--db", storeFile.path, "--offline"] + servers,
            outputDirectory: outputDirectory, environment: environment)
    }

    private func storedHits() throws -> [HitRecord] {
        let store = try FlagshipDatabase.openForInspection(at: storeFile)
        defer { store.close() }
        var hits: [HitRecord] = []
        try store.forEachHitPage { hits += $0 }
        return hits
    }

    func testOfflineSendsNothingToTheServersGivenAndTheConsentHitWaitsInTheStore() throws {
        let result = try fetchOffline(["--decision-url", server.decisionBaseURL.absoluteString,
                                       "--events-url", server.eventsBaseURL.absoluteString], environment: environment())

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(server.received.map { "\($0.request.method) \($0.request.path)" }, [], "nothing left the process")
        let hits = try storedHits()
        XCTAssertEqual(hits.map(\.type), ["EVENT"])
        XCTAssertEqual(hits.map(\.isConsent), [true])
        XCTAssertEqual(hits.map(\.attempts), [0], "not even tried")
        let consent = try XCTUnwrap(hits.first)
        XCTAssertTrue(consent.document.contains("fs_consent"), consent.document)

        // Online, the next run sends it.
        let online = try FlagshipExecutable.run(
            ["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", "v1", "--db", storeFile.path,
             "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString],
            outputDirectory: outputDirectory, environment: environment())
        XCTAssertEqual(online.status, 0, online.stderr)
        XCTAssertEqual(server.hits.filter { $0["ea"] == "fs_consent" }.count, 2, "the stored one and this run's")
        XCTAssertEqual(try storedHits(), [])
    }

    func testOfflineInBucketingModeDownloadsNothing() throws {
        let result = try fetchOffline(["--mode", "bucketing", "--bucketing-url", server.bucketingBaseURL.absoluteString,
                                       "--events-url", server.eventsBaseURL.absoluteString], environment: environment())

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(server.received.map { "\($0.request.method) \($0.request.path)" }, [])
        XCTAssertEqual(try storedHits().map(\.isConsent), [true])
    }
}
