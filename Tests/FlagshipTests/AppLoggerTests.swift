import FlagshipLocalServer
import Foundation
import Logging
import XCTest

@testable import Flagship

/// `withLogger`: the SDK logs through the app's `Logger`, with its metadata and its level,
/// unless `withLogLevel` sets the level.
final class AppLoggerTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() async throws {
        await Flagship.sharedInstance.close()
        directory.remove()
    }

    private func start(_ configure: (FSConfigBuilder) -> FSConfigBuilder) {
        let builder = FSConfigBuilder().DecisionApi()
            .withCacheFile(directory.file("flagship.sqlite"))
            .withNetworkDisabled()
        Flagship.sharedInstance.start(envId: "logger_env", apiKey: "logger_key", config: configure(builder).build())
    }

    func testTheSDKLogsThroughTheAppsLoggerWithItsMetadataAndLevel() async {
        let capture = LogCapture()
        var logger = capture.logger
        logger[metadataKey: "service"] = "checkout"
        logger.logLevel = .info
        start { $0.withLogger(logger) }

        let started = capture.entries.first { $0.message.contains("started for environment logger_env") }
        XCTAssertEqual(started?.level, .info, "the start line reached the app's handler: \(capture.entries)")
        XCTAssertTrue(started?.details.contains("checkout") == true, "with the app's metadata: \(started?.details ?? "")")
        XCTAssertTrue(started?.message.hasSuffix("; HTTP through none (the network is disabled)") == true,
                      "the start line says which HTTP client runs (AppTransportTests: the others): \(started?.message ?? "")")
        XCTAssertTrue(capture.entries.allSatisfy { $0.level >= .info }, "the app's level (info) filters: \(capture.entries)")
    }

    func testWithLogLevelSetsTheLevelOfTheAppsLogger() async {
        let capture = LogCapture()
        var logger = capture.logger
        logger.logLevel = .trace
        start { $0.withLogger(logger).withLogLevel(.ERROR) }
        XCTAssertTrue(capture.entries.isEmpty, "only errors, and there was none: \(capture.entries)")
    }

    func testAVisitorIdIsLoggedOnlyAsDebugMetadata() async throws {
        for level in [Logger.Level.info, .debug] {
            let capture = LogCapture()
            var logger = capture.logger
            logger.logLevel = level
            start { $0.withLogger(logger) }
            let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "secret-visitor", hasConsented: true, instanceType: .NEW_INSTANCE)
                .buildAsync()
            // No network: fails, and the callback form, which cannot throw, says so.
            await withCheckedContinuation { done in visitor.fetchFlags { done.resume() } }
            await Flagship.sharedInstance.close()

            let failure = try XCTUnwrap(capture.entries.first { $0.message.hasPrefix("Flags cannot be fetched") }, "\(capture.entries)")
            XCTAssertEqual(failure.level, .warning)
            if level == .debug {
                XCTAssertTrue(failure.details.contains("secret-visitor"), "at debug, the id is in the metadata: \(failure.details)")
            } else {
                let leaked = capture.entries.filter { $0.message.contains("secret-visitor") || $0.details.contains("secret-visitor") }
                XCTAssertTrue(leaked.isEmpty, "no visitor id above debug: \(leaked)")
            }
        }
    }

    /// A failed fetch is thrown and logged: `try? await visitor.fetchFlags()` must not make a
    /// refused key or a wrong URL look like success. Logged bounded: one warning when fetches
    /// start failing, one per other kind of failure while they fail, one when they work again;
    /// the callback form logs the same, not twice.
    func testAFailedFetchIsThrownAndLoggedOncePerKindOfFailure() async throws {
        let capture = LogCapture()
        var logger = capture.logger
        logger.logLevel = .info
        let server = LocalFlagshipServer(envId: "logger_env", apiKey: "logger_key")
        try server.start()
        defer { server.stop() }
        let config = FSConfigBuilder().DecisionApi().withCacheFile(directory.file("flagship.sqlite")).withLogger(logger)
            .withDecisionBaseURL(server.decisionBaseURL).withEventsBaseURL(server.eventsBaseURL).build()
        Flagship.sharedInstance.start(envId: "logger_env", apiKey: "logger_key", config: config)
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "v", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        let fetchWarnings = { capture.entries.filter { $0.level >= .warning && $0.message.contains("etch") }.map(\.message) }
        server.injectFault(.status(500), on: .campaigns, share: .next(5))

        do {
            try await visitor.fetchFlags()
            XCTFail("a 500 is thrown")
        } catch let error as FlagshipError where error.fetchFailure == .httpStatus(500) {}
        XCTAssertEqual(fetchWarnings().count, 1, "thrown and logged: \(fetchWarnings())")
        XCTAssertTrue(fetchWarnings().first?.hasPrefix("Flags cannot be fetched (the Decision API answered with HTTP status 500): visitors keep") ?? false,
                      "\(fetchWarnings())")

        // A storm of the same failure: no more warnings, by either form.
        for _ in 1...2 { try? await visitor.fetchFlags() }
        for _ in 1...2 { await withCheckedContinuation { done in visitor.fetchFlags { done.resume() } } }
        XCTAssertEqual(fetchWarnings().count, 1, "\(fetchWarnings())")

        // Another kind of failure while they fail is said too, once.
        server.injectFault(.status(403), on: .campaigns, share: .next(2))
        for _ in 1...2 { try? await visitor.fetchFlags() }
        XCTAssertEqual(fetchWarnings().count, 2, "\(fetchWarnings())")
        XCTAssertTrue(fetchWarnings().last?.hasPrefix("Flags cannot be fetched (the Decision API answered with HTTP status 403)") ?? false,
                      "\(fetchWarnings())")

        try await visitor.fetchFlags()
        await Flagship.sharedInstance.close()

        XCTAssertEqual(fetchWarnings().count, 3, "\(fetchWarnings())")
        XCTAssertTrue(fetchWarnings().last?.hasPrefix("Flags are fetched again, after 7 failed fetch(es) over ") ?? false, "\(fetchWarnings())")
    }

    /// However many kinds of failure come during one outage, at most a bounded number are warnings.
    func testTheKindsOfFailureToldPerOutageAreBounded() {
        let capture = LogCapture()
        var logger = capture.logger
        logger.logLevel = .trace
        let outage = OutageLog(logger: logger, now: { Date() })
        let kinds = OutageLog.causesToldPerOutage + 20
        for kind in 0..<kinds {
            for _ in 0..<3 { outage.failed(cause: "kind \(kind)", started: { _ in "failing: kind \(kind)" }, retrying: { _ in "again" }) }
        }
        XCTAssertEqual(capture.messages(at: .warning).count, OutageLog.causesToldPerOutage)
        XCTAssertEqual(capture.messages(at: .debug).count, kinds * 3 - OutageLog.causesToldPerOutage)

        outage.succeeded { failures, _ in "back after \(failures)" }
        outage.failed(cause: "kind 0", started: { _ in "failing again" }, retrying: { _ in "again" })
        XCTAssertEqual(capture.messages(at: .warning).suffix(2), ["back after \(kinds * 3)", "failing again"], "a new outage tells its causes anew")
    }

    func testTheDefaultCachesLogThroughTheLoggerTheyAreGiven() throws {
        let capture = LogCapture()
        let cache = try FSDefaultCacheVisitor(envId: "logger_env", cacheDirectory: directory.url, logger: capture.logger)
        cache.cacheVisitor(visitorId: "v1", Data("not JSON".utf8))
        XCTAssertTrue(capture.messages(at: .error).contains { $0.hasPrefix("A visitor was not cached") }, "\(capture.entries)")
    }

    func testLogLevelNoneSilencesTheAppsLogger() async {
        let capture = LogCapture()
        var logger = capture.logger
        logger.logLevel = .trace
        start { $0.withLogger(logger).withLogLevel(.NONE) }
        Flagship.sharedInstance.start(envId: "", apiKey: "logger_key", config: FSConfigBuilder().withLogger(logger).withLogLevel(.NONE).build())
        XCTAssertTrue(capture.entries.isEmpty, "\(capture.entries)")
    }
}
