import FlagshipLocalServer
import Foundation
import Logging
import XCTest

@testable import Flagship

/// A wrong API key or env id is said once, as an error naming the environment and the setting
/// to check, instead of passing for a network failure one fetch at a time.
final class MisconfigurationTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var server: LocalFlagshipServer!
    private var capture: LogCapture!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        server = LocalFlagshipServer(envId: "shop_env", apiKey: "right_key")
        try server.start()
        capture = LogCapture()
    }

    override func tearDown() async throws {
        await Flagship.sharedInstance.close()
        server.stop()
        directory.remove()
    }

    private func start(envId: String, apiKey: String, _ mode: (FSConfigBuilder) -> FSConfigBuilder) {
        var logger = capture.logger
        logger.logLevel = .warning
        let config = mode(FSConfigBuilder())
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withBucketingBaseURL(server.bucketingBaseURL)
            .withCacheFile(directory.file("flagship.sqlite"))
            .withLogger(logger)
            .build()
        Flagship.sharedInstance.start(envId: envId, apiKey: apiKey, config: config)
    }

    private var misconfigurationLines: [String] {
        capture.messages(at: .error).filter { $0.contains("misconfigured") }
    }

    func testAWrongAPIKeyIsSaidOnceNamingTheEnvironmentAndTheKey() async throws {
        start(envId: "shop_env", apiKey: "wrong_key") { $0.DecisionApi() }
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        for _ in 0..<3 {
            do {
                try await visitor.fetchFlags()
                XCTFail("the server refuses the key")
            } catch {}
        }
        XCTAssertEqual(misconfigurationLines.count, 1, "once, not per fetch: \(capture.entries)")
        let line = try XCTUnwrap(misconfigurationLines.first)
        XCTAssertTrue(line.contains("'shop_env'"), line)
        XCTAssertTrue(line.contains("HTTP 403"), line)
        XCTAssertTrue(line.contains("the Decision API"), line)
        XCTAssertTrue(line.contains("API key"), line)
        XCTAssertFalse(line.contains("wrong_key"), "the key itself is never logged: \(line)")
    }

    func testAnUnknownEnvIdIsSaidOnceNamingTheEnvIdAndTheURLSetting() async throws {
        start(envId: "shop_envv", apiKey: "right_key") { $0.DecisionApi() }
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "bob", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        for _ in 0..<2 { try? await visitor.fetchFlags() }
        XCTAssertEqual(misconfigurationLines.count, 1, "\(capture.entries)")
        let line = try XCTUnwrap(misconfigurationLines.first)
        XCTAssertTrue(line.contains("'shop_envv'") && line.contains("HTTP 404") && line.contains("check the env id"), line)
        XCTAssertTrue(line.contains("withDecisionBaseURL"), line)
    }

    func testNoBucketingFileForTheEnvIdIsSaidOnceNamingBucketing() async throws {
        try server.setBucketingFile(ServedBucketingFile.sampleData)
        start(envId: "other_env", apiKey: "right_key") { $0.Bucketing().withBucketingPollingIntervals(0.05) }
        // Several polls meet the 404.
        let started = ContinuousClock.now
        while server.received(.bucketing).count < 3, ContinuousClock.now - started < .seconds(5) {
            try await Task.sleep(for: .milliseconds(10))
        }
        XCTAssertGreaterThanOrEqual(server.received(.bucketing).count, 3)
        XCTAssertEqual(misconfigurationLines.count, 1, "\(capture.entries)")
        let line = try XCTUnwrap(misconfigurationLines.first)
        XCTAssertTrue(line.contains("'other_env'") && line.contains("HTTP 404") && line.contains("bucketing"), line)
        XCTAssertTrue(line.contains("withBucketingBaseURL"), line)
    }

    func testARightConfigurationSaysNothingOfTheKind() async throws {
        start(envId: "shop_env", apiKey: "right_key") { $0.DecisionApi() }
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "carol", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        try await visitor.sendHit(FSScreen("home"))
        await Flagship.sharedInstance.close()
        XCTAssertTrue(misconfigurationLines.isEmpty, "\(misconfigurationLines)")
    }
}
