import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// A tracking test: the SDK against the local server and a real SQLite file, on a clock the
/// test moves by hand, with the backoff's jitter fixed so delays are exact (1 s, 2 s, 4 s...).
class TrackingTestCase: SDKTestCase {
    var clock: ManualClock!

    override func setUpWithError() throws {
        try super.setUpWithError()
        clock = ManualClock()
    }

    /// A URL where nothing listens: every request fails at once (connection refused).
    static let deadURL = URL(string: "http://127.0.0.1:1")!

    func trackingBuilder(
        strategy: BatchCachingStrategy = .CONTINUOUS_CACHING, poolMaxSize: Int = 1, interval: TimeInterval = 60,
        hitLifetime: TimeInterval = 4 * 3600, maxCachedHits: Int = 100_000, clock: ManualClock? = nil,
        pageSize: Int? = nil, roundSpacing: TimeInterval = 0
    ) -> FSConfigBuilder {
        configBuilder()
            .withClock(clock ?? self.clock)
            .withTrackingManagerConfig(FSTrackingManagerConfig(
                poolMaxSize: poolMaxSize, batchIntervalTimer: interval, strategy: strategy,
                hitLifetime: hitLifetime, maxCachedHits: maxCachedHits))
            .withTrackingSettings { settings in
                settings.jitter = { 1 }
                // Rounds back to back are not spaced unless a test asks (`SendRoundSpacingTests`).
                settings.roundSpacing = roundSpacing
                if let pageSize { settings.pageSize = pageSize }
            }
    }

    func makeVisitor(_ id: String = "v1", on instance: Flagship? = nil) -> FSVisitor {
        (instance ?? flagship).newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE).build()
    }

    /// An event the test can find again by its label.
    func click(_ number: Int) -> FSEvent {
        Self.click(number)
    }

    static func click(_ number: Int) -> FSEvent {
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "click")
        event.label = "hit-\(number)"
        return event
    }

    /// The synchronous `sendHit`, which async code does not pick by itself: accepted at once,
    /// written by the next group commit.
    func fireAndForget(_ visitor: FSVisitor, _ hit: FSEvent) {
        visitor.sendHit(hit)
    }

    /// The rows of the test's store, oldest first, read through a separate read-only connection.
    func storedHits() throws -> [HitRecord] {
        let store = try inspectStore()
        defer { store.close() }
        var hits: [HitRecord] = []
        try store.forEachHitPage { hits += $0 }
        return hits
    }

    /// The labels of the stored click events, oldest first.
    func storedClickLabels() throws -> [String] {
        try storedHits().compactMap { record in
            guard let document = try? HitCacheDocument(FSJSONValue(parsing: Data(record.document.utf8))),
                  document.content["ea"]?.stringValue == "click" else { return nil }
            return document.content["el"]?.stringValue
        }
    }

    /// The click events the server accepted, by label, in arrival order.
    func deliveredClickLabels(_ server: LocalFlagshipServer? = nil) -> [String] {
        (server ?? self.server).hits.filter { $0["ea"]?.stringValue == "click" }.compactMap { $0["el"]?.stringValue }
    }

    func labels(_ numbers: ClosedRange<Int>) -> [String] {
        numbers.map { "hit-\($0)" }
    }

    func assertThrows(_ expected: FlagshipError, file: StaticString = #filePath, line: UInt = #line,
                      _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("expected \(expected) to be thrown", file: file, line: line)
        } catch let error as FlagshipError {
            // For a reason that comes from SQLite, its kind is what matters, not its wording.
            if expected.code == .hitNotCached, error.code == .hitNotCached, let expected = expected.cacheError, let error = error.cacheError {
                XCTAssertEqual(error.code, expected.code, "\(error)", file: file, line: line)
                return
            }
            XCTAssertEqual(error, expected, file: file, line: line)
        } catch {
            XCTFail("expected \(expected), got \(error)", file: file, line: line)
        }
    }

    /// Polls `condition` (the SDK's timer runs on its own task) for at most `timeout` seconds.
    func waitUntil(_ description: String, timeout: TimeInterval = 5, _ condition: () throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < deadline else {
                XCTFail("timed out waiting until \(description)")
                return
            }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    /// Waits until the SDK's timers and backoff waits are armed, so that `advance` wakes them.
    func waitForSleepers(_ count: Int, on clock: ManualClock? = nil) async throws {
        let clock = clock ?? self.clock!
        try await waitUntil("\(count) wait(s) are armed on the clock") { clock.pendingSleepers >= count }
    }
}

extension FSCacheError {
    /// A cache error of this kind, to compare a thrown one with (`assertThrows` compares codes).
    static func kind(_ code: Code) -> FSCacheError {
        FSCacheError(code: code, path: nil, description: "")
    }
}
