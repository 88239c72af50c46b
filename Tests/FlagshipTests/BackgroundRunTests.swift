import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// `Flagship.run()`: the instance's background work (the tracking manager's loops, the poller,
/// retention) is one task's children; awaiting it returns once `close()` has closed the instance,
/// and cancelling the caller closes it, its last round sending what waits.
final class BackgroundRunTests: TrackingTestCase {
    func testRunReturnsAtOnceWhenTheInstanceIsNotStarted() async {
        await Flagship().run()
    }

    func testRunReturnsOnceCloseHasClosedTheInstance() async throws {
        start(trackingBuilder(poolMaxSize: 10))
        let flagship = try XCTUnwrap(flagship)
        // What the caller of run() sees the moment it returns: the close whole, status included.
        let seenOnReturn = Locked<(status: FSSdkStatus, delivered: [String])?>(nil)
        let server = try XCTUnwrap(server)
        let running = Task {
            await flagship.run()
            let delivered = server.hits.filter { $0["ea"]?.stringValue == "click" }.compactMap { $0["el"]?.stringValue }
            seenOnReturn.withLock { $0 = (flagship.getStatus(), delivered) }
        }
        // The instance serves meanwhile: a hit is accepted and committed.
        try await makeVisitor().sendHit(click(1))
        XCTAssertNil(seenOnReturn.withLock { $0 }, "run() waits while the instance is open")
        let background = try XCTUnwrap(flagship.currentRuntime?.backgroundTask)

        // Closed by another task, not awaited here: run() alone says when the close has ended.
        Task { await flagship.close() }
        try await waitUntil("run() returned after close()", timeout: 10) { seenOnReturn.withLock { $0 } != nil }
        await running.value

        let seen = try XCTUnwrap(seenOnReturn.withLock { $0 })
        XCTAssertEqual(seen.status, .SDK_NOT_INITIALIZED, "closed whole when run() returned")
        XCTAssertEqual(seen.delivered, ["hit-1"], "close()'s last round sent the hit before run() returned")
        await background.value
    }

    func testCancellingRunClosesTheInstanceAfterItsLastRound() async throws {
        start(trackingBuilder(poolMaxSize: 10))
        let flagship = try XCTUnwrap(flagship)
        // Awaited: committed to the store; not sent, the pool of 10 is not full and the interval's
        // timer waits on a clock that never moves.
        try await makeVisitor().sendHit(click(1))
        try await makeVisitor("v2").sendHit(click(2))
        XCTAssertEqual(deliveredClickLabels(), [])
        let background = try XCTUnwrap(flagship.currentRuntime?.backgroundTask)

        let returned = Locked(false)
        let running = Task {
            await flagship.run()
            returned.withLock { $0 = true }
        }
        running.cancel()
        // Bounded in wall time: a run() that did not close on cancellation fails here, not hangs.
        try await waitUntil("the cancelled run() returned", timeout: 10) { returned.withLock { $0 } }

        XCTAssertEqual(Set(deliveredClickLabels()), ["hit-1", "hit-2"], "the cancelled run closed with a last round")
        XCTAssertEqual(flagship.getStatus(), .SDK_NOT_INITIALIZED)
        await background.value
        XCTAssertEqual(clock.pendingSleepers, 0, "no wait is left armed on the SDK's clock")
    }

    func testACloseCalledTwiceAtOnceClosesOnceAndBothReturnAfterIt() async throws {
        start(trackingBuilder(poolMaxSize: 10))
        let runtime = try XCTUnwrap(flagship.currentRuntime)
        try await makeVisitor().sendHit(click(1))

        async let first: Void = runtime.close()
        async let second: Void = runtime.close()
        _ = await (first, second)

        XCTAssertEqual(deliveredClickLabels(), ["hit-1"], "one last round, one delivery")
        await runtime.backgroundTask?.value
    }
}
