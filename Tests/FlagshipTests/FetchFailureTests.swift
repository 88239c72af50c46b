import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// `FlagshipError.fetchFailed` carries a `FSFetchFailure` a caller can switch over: a status, a
/// timeout, an unreachable server and an unreadable answer are told apart.
final class FetchFailureTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var server: LocalFlagshipServer!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        server = LocalFlagshipServer(envId: "env", apiKey: "key")
        try server.start()
    }

    override func tearDown() async throws {
        await Flagship.sharedInstance.close()
        server.stop()
        directory.remove()
    }

    /// The failure of one fetch against the server (timeout 300 ms).
    private func failure(decisionURL: URL? = nil) async throws -> FSFetchFailure {
        let config = FSConfigBuilder().DecisionApi().withTimeout(300)
            .withDecisionBaseURL(decisionURL ?? server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(directory.file("flagship.sqlite"))
            .withLogLevel(.NONE)
            .build()
        Flagship.sharedInstance.start(envId: "env", apiKey: "key", config: config)
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        do {
            try await visitor.fetchFlags()
        } catch let error as FlagshipError where error.code == .fetchFailed {
            return try XCTUnwrap(error.fetchFailure)
        }
        throw FetchSucceeded()
    }

    private struct FetchSucceeded: Error {}

    func testAnHTTPStatusIsItsOwnCase() async throws {
        _ = server.injectFault(.status(503), on: .campaigns)
        let failure = try await failure()
        XCTAssertEqual(failure, .httpStatus(503))
    }

    func testATimeoutIsItsOwnCase() async throws {
        _ = server.injectFault(.latency(.seconds(3)), on: .campaigns)
        guard case .timedOut = try await failure().code else { return XCTFail("a timeout") }
    }

    func testAnUnreadableAnswerIsItsOwnCase() async throws {
        _ = server.injectFault(.malformedBody(.notJSON), on: .campaigns)
        guard case .malformedBody = try await failure().code else { return XCTFail("an unreadable answer") }
    }

    func testAnUnreachableServerIsItsOwnCase() async throws {
        guard case .transport = try await failure(decisionURL: URL(string: "http://127.0.0.1:1/v2")!).code else {
            return XCTFail("an unreachable server")
        }
    }
}
