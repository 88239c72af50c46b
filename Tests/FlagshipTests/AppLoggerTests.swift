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
        XCTAssertTrue(capture.entries.allSatisfy { $0.level >= .info }, "the app's level (info) filters: \(capture.entries)")
    }

    func testWithLogLevelSetsTheLevelOfTheAppsLogger() async {
        let capture = LogCapture()
        var logger = capture.logger
        logger.logLevel = .trace
        start { $0.withLogger(logger).withLogLevel(.ERROR) }
        XCTAssertTrue(capture.entries.isEmpty, "only errors, and there was none: \(capture.entries)")
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
