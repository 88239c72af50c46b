import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// `close()` keeps its deadline (issue 19, point 6): whatever holds it up (a send the server
/// never answers, a store another process keeps locked, a custom cache that never returns),
/// it returns once the SDK's clock passes the deadline, and says in one line what it leaves.
///
/// The deadline runs on the injected clock: each test moves it by hand, then checks that
/// `close()` returned promptly on the wall clock too (well under the 5 s it would otherwise
/// take for any of these).
final class BoundedCloseTests: TrackingTestCase {
    /// The close deadline: `TrackingManager.Settings.closeDeadline`, the README's "at most 5 s".
    private let closeDeadline: TimeInterval = 5

    func testCloseWithABatchInFlightToAServerThatNeverAnswersEndsAtTheDeadline() async throws {
        server.injectFault(.latency(.seconds(120)), on: .events)
        start(trackingBuilder())
        let visitor = makeVisitor()
        try await visitor.sendHit(click(1))
        // The first batch holds the consent hit, the click, or both: the server keeps it unanswered.
        try await waitUntil("a batch is in flight") { !server.received(.events).isEmpty }

        // Only sending is held up: the store answers, so close records what waits before its deadline.
        try await closeAndAdvancePastTheDeadline(throughTheDeadline: false)

        XCTAssertEqual(try storedClickLabels(), ["hit-1"], "the unanswered hit stays in the store for the next start")
        XCTAssertTrue(log.allText.contains("unsent hit(s) stay in the hit cache"), log.everything)
    }

    func testCloseWithTheStoreLockedByAnotherProcessEndsAtTheDeadline() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        try await visitor.sendHit(click(1))
        _ = try await server.waitForHits(count: 2)  // the consent hit and the click
        let holder = try Database(path: StoreLocation.databaseFile(envId: Self.envId, in: directory.url).path)
        defer { holder.close() }
        try holder.withConnection { _ = try $0.execute("BEGIN IMMEDIATE") }
        defer { _ = try? holder.withConnection { try $0.execute("ROLLBACK") } }
        fireAndForget(visitor, click(2))

        let closed = try await closeAndAdvancePastTheDeadline { _ = try? holder.withConnection { try $0.execute("ROLLBACK") } }
        let statistics = try XCTUnwrap(closed)

        XCTAssertTrue(log.allText.contains("deadline"), "the log says what close left: \(log.allText)")
        XCTAssertEqual(statistics.lost, 1, "the hit never written is counted, not reported as sent or waiting")
    }

    func testCloseWithACustomHitCacheThatNeverReturnsEndsAtTheDeadline() async throws {
        let cache = BlockingHitCache()
        defer { cache.release() }
        start(trackingBuilder().withCacheManager(FSCacheManager(nil, cache)))
        let visitor = makeVisitor()
        fireAndForget(visitor, click(1))
        try await waitUntil("the cache holds the store queue") { cache.entered }

        try await closeAndAdvancePastTheDeadline(unblock: cache.release)

        XCTAssertTrue(log.allText.contains("deadline"), log.allText)
    }

    func testCloseWithACustomVisitorCacheThatNeverReturnsEndsAtTheDeadline() async throws {
        let cache = BlockingVisitorCache()
        defer { cache.release() }
        start(trackingBuilder().withCacheManager(FSCacheManager(cache, nil)))
        let visitor = makeVisitor()
        visitor.fetchFlags {}
        try await waitUntil("the visitor cache is writing") { cache.entered }

        try await closeAndAdvancePastTheDeadline(unblock: cache.release)
    }

    /// Closes, and moves the SDK's clock to each deadline `close()` waits on as it arms it: the
    /// end of sending (a second before the deadline) and, unless told not to (when nothing should
    /// hold the store), the deadline. Checks that `close()`
    /// returned soon after the last move on the wall clock. When it does not, `unblock` lets
    /// whatever holds it go, so a failing test ends instead of hanging.
    @discardableResult
    private func closeAndAdvancePastTheDeadline(throughTheDeadline: Bool = true, unblock: @Sendable () -> Void = {},
                                                file: StaticString = #filePath, line: UInt = #line) async throws -> TrackingStatistics? {
        let deadline = clock.now().addingTimeInterval(closeDeadline)
        let sendsUntil = deadline.addingTimeInterval(-1)
        let instance = flagship!
        let finished = Locked(false)
        let closing = Task {
            defer { finished.withLock { $0 = true } }
            return await instance.closeReporting()
        }
        let started = Date()
        var moved: Date?
        while !finished.withLock({ $0 }), Date().timeIntervalSince(moved ?? started) < 3 {
            for step in throughTheDeadline ? [sendsUntil, deadline] : [sendsUntil] where clock.now() < step && clock.hasSleeper(until: step) {
                clock.advance(by: step.timeIntervalSince(clock.now()))
                moved = Date()
            }
            try await Task.sleep(nanoseconds: 2_000_000)
        }
        XCTAssertNotNil(moved, "close() never waited on the SDK's clock", file: file, line: line)
        let late = Date().timeIntervalSince(moved ?? started)
        XCTAssertLessThan(late, 1.5, "close() returned \(late) s after its deadline", file: file, line: line)
        unblock()
        return await closing.value
    }
}

/// Where a cache call stops until the test lets it go: it says when a call has reached it.
private final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let reached = Locked(false)

    var entered: Bool { reached.withLock { $0 } }

    func release() {
        semaphore.signal()
    }

    /// Blocks the calling thread (the cache's own queue) until released, then lets every later call through.
    func pass() {
        reached.withLock { $0 = true }
        semaphore.wait()
        semaphore.signal()
    }
}

/// A custom hit cache whose `cacheHits` does not return until the test releases it.
private final class BlockingHitCache: FSHitCacheDelegate, Sendable {
    private let gate = Gate()

    var entered: Bool { gate.entered }

    func release() {
        gate.release()
    }

    func cacheHits(hits: [String: [String: Any]]) {
        gate.pass()
    }

    func lookupHits() -> [String: [String: Any]] { [:] }
    func flushHits(hitIds: [String]) {}
    func flushAllHits() {}
}

/// A custom visitor cache whose `cacheVisitor` does not return until the test releases it.
private final class BlockingVisitorCache: FSVisitorCacheDelegate, Sendable {
    private let gate = Gate()

    var entered: Bool { gate.entered }

    func release() {
        gate.release()
    }

    func cacheVisitor(visitorId: String, _ visitorData: Data) {
        gate.pass()
    }

    func lookupVisitor(visitorId: String) -> Data? { nil }
    func flushVisitor(visitorId: String) {}
}
