import Flagship
import Foundation
import XCTest

@testable import FlagshipTesting

/// The in-process backend's wait for the SDK's next request (what `waitUntilDelivered` awaits
/// during a backoff): it ends with the request, at its deadline, or when its task is cancelled.
final class InProcessBackendTests: XCTestCase {
    private let backend = InProcessBackend(envId: "env", testData: FlagshipTestData())
    private let request = FSHTTPRequest(method: .get, url: URL(string: "https://decision.flagship.test/none")!, timeout: 1)

    func testAWaitEndsWithTheNextRequest() async throws {
        let handled = backend.requestCount
        let waiter = Task { [backend] in await backend.waitForRequest(after: handled, until: .now + .seconds(30)) }
        _ = try? await backend.send(request)
        let answered = await waiter.value
        XCTAssertTrue(answered)
        let alreadyCame = await backend.waitForRequest(after: handled, until: .now)
        XCTAssertTrue(alreadyCame, "a request that came before the wait counts")
    }

    func testAWaitWithNoRequestEndsAtItsDeadline() async {
        let started = ContinuousClock.now
        let answered = await backend.waitForRequest(after: backend.requestCount, until: .now + .milliseconds(50))
        XCTAssertFalse(answered)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(50))
    }

    func testACancelledWaitEndsAtOnce() async {
        let handled = backend.requestCount
        let waiter = Task { [backend] in await backend.waitForRequest(after: handled, until: .now + .seconds(30)) }
        waiter.cancel()
        let started = ContinuousClock.now
        let answered = await waiter.value
        XCTAssertFalse(answered)
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(10), "ended by its cancellation, not its deadline")
    }
}
