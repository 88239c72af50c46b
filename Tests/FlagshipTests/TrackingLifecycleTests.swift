import FlagshipLocalServer
import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship

/// The tracking manager's lifecycle is structured: its work (`run`), whose children are the
/// sender's loop, the batch timer and the backoff wake, is a child of the SDK instance's one
/// background task, and ends with `close()` (or with the manager, when it is dropped unclosed);
/// nothing it set going outlives it.
final class TrackingLifecycleTests: TrackingTestCase {
    func testCloseEndsTheLifecycleTaskWhileABackoffWakeAndTheTimerWait() async throws {
        server.injectFault(.status(500), on: .events, share: .every)
        start(trackingBuilder())
        let visitor = makeVisitor()
        try await visitor.sendHit(click(1))
        // The send failed: the wake waits for the backoff gate, the timer for the interval.
        try await waitForSleepers(2)
        let task = try XCTUnwrap(flagship.currentRuntime?.backgroundTask)

        // The clock never moves: nothing here waits for a deadline.
        await flagship.close()

        try await ended(task)
        XCTAssertEqual(clock.pendingSleepers, 0, "no wait is left armed on the SDK's clock")
        XCTAssertEqual(Set(try storedClickLabels()), ["hit-1"], "the unsent hit stays in the store")
    }

    func testCloseDuringASendEndsTheLifecycleTaskAtTheDeadline() async throws {
        server.injectFault(.latency(.seconds(30)), on: .events, share: .every)
        start(trackingBuilder())
        let visitor = makeVisitor()
        try await visitor.sendHit(click(1))
        _ = try await server.waitForRequests(route: .events, count: 1)
        let runtime = try XCTUnwrap(flagship.currentRuntime)
        let task = try XCTUnwrap(runtime.backgroundTask)

        let deadline = clock.now().addingTimeInterval(runtime.tracking.settings.closeDeadline)
        let sendsUntil = deadline.addingTimeInterval(-1)
        let closing = Task { await runtime.close() }
        // close() waits for the send until a second before its deadline, on the SDK's clock.
        try await waitUntil("close() waits for the send on the clock") { clock.hasSleeper(until: sendsUntil) }
        clock.advance(by: sendsUntil.timeIntervalSince(clock.now()))
        await closing.value

        try await ended(task)
    }

    /// The writer's loop waits out a visitor document's coalescing window (an hour here): a
    /// close ends that wait with the loop, the document written by the close itself.
    func testCloseEndsTheLifecycleTaskWhileAVisitorDocumentWaitsForItsWindow() async throws {
        start(trackingBuilder().withTrackingSettings { $0.documentCoalescing = 3_600 })
        let visitor = makeVisitor()
        try await visitor.fetchFlags()
        let runtime = try XCTUnwrap(flagship.currentRuntime)
        let task = try XCTUnwrap(runtime.backgroundTask)
        try await waitUntil("the writer's loop waits for the document's window") {
            runtime.tracking.writer.commitsStopped.waiting == 1
        }

        // In a task: a loop that kept waiting would hold the close, on a clock that never moves.
        let instance: Flagship = flagship
        let closing = Task { await instance.close() }
        try await ended(task)
        await closing.value
        XCTAssertTrue(try visitorIsStored("v1"), "the close wrote the document that waited")
    }

    private func visitorIsStored(_ id: String) throws -> Bool {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { try $0.visitors.visitor(id: id) } != nil
    }

    func testAManagerDroppedWithoutCloseEndsItsTask() async throws {
        var manager: TrackingManager? = makeManager()
        manager?.start()
        let run = try XCTUnwrap(manager?.run)
        let task = Task { await run() }
        try await waitForSleepers(1)

        weak let dropped = manager
        manager = nil

        XCTAssertNil(dropped, "nothing the manager started holds it")
        try await ended(task)
    }

    func testAManagerClosedBeforeItStartedReturnsWithoutWaitingOnTheClock() async throws {
        let manager = makeManager()
        let closed = Locked(false)
        let closing = Task {
            await manager.close()
            closed.withLock { $0 = true }
        }
        // The clock never moves: a close that waited for a sender loop never started would hang.
        try await waitUntil("close() returned") { closed.withLock { $0 } }
        await closing.value
    }

    /// A tracking manager over a hit cache that keeps nothing, its events going nowhere.
    private func makeManager() -> TrackingManager {
        let events = EventsClient(envId: "env", apiKey: "key", decisionBaseURL: Self.deadURL, eventsBaseURL: Self.deadURL,
                                  timeout: 1, transport: URLSessionTransport())
        let queue = DelegateHitQueue(delegate: ConfinedDelegate(EmptyHitCache(), label: "test.hits"), capacity: 100,
                                     lookupTimeout: 1, logger: Logger(label: "test"))
        return TrackingManager(queue: queue, events: events, settings: TrackingManager.Settings(), clock: clock,
                               logger: Logger(label: "test"), executor: nil)
    }

    /// Waits for `task` to end, failing after 5 s of wall time (its own waits are on the test's clock).
    private func ended(_ task: Task<Void, Never>, file: StaticString = #filePath, line: UInt = #line) async throws {
        let done = Locked(false)
        let waiter = Task {
            await task.value
            done.withLock { $0 = true }
        }
        try await waitUntil("the lifecycle task ended", timeout: 5) { done.withLock { $0 } }
        waiter.cancel()
    }
}

private struct EmptyHitCache: FSHitCacheDelegate {
    func cacheHits(hits: [String: [String: Any]]) {}
    func lookupHits() -> [String: [String: Any]] { [:] }
    func flushHits(hitIds: [String]) {}
    func flushAllHits() {}
}
