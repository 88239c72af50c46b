import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// The system clock set by hand or by NTP while the SDK runs: waiting hits are neither deleted
/// (a step forward does not age them) nor held (a step back does not keep the backoff gate shut
/// for as long as the step). Hits are aged, and the gate read, on the monotonic clock.
final class WallClockStepTests: TrackingTestCase {
    private static let hour: TimeInterval = 3_600

    func testASystemClockSetHoursAheadExpiresNoHitAndEachIsDeliveredOnceTheServerAnswers() async throws {
        server.stop()
        start(trackingBuilder(interval: 60))
        let visitor = makeVisitor()
        for number in 1...5 { try await visitor.sendHit(click(number)) }
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try storedClickLabels().sorted(), labels(1...5))

        // Five hours ahead, past the 4-hour lifetime; then the batch interval's tick, which expires.
        clock.step(by: 5 * Self.hour)
        // Both waits armed, the interval's timer and the failed send's backoff wake: an advance
        // made before the timer armed its wait would be lost to it.
        try await waitForSleepers(2)
        clock.advance(by: 61)
        let stepped = "The system clock is 18000 s ahead of the time measured since start"
        try await waitUntil("the interval's tick notes the step") {
            self.log.messages(at: .warning).contains { $0.hasPrefix(stepped) }
        }
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try storedClickLabels().sorted(), labels(1...5), "a minute passed, not five hours: nothing expired")
        XCTAssertEqual(log.messages(at: .warning).filter { $0.hasPrefix(stepped) }.count, 1, "\(log.messages(at: .warning))")
        XCTAssertFalse(log.allText.contains("unsent hit(s) older than"), "nothing was deleted")

        try server.start()
        clock.advance(by: 301)
        _ = try await server.waitForHits(count: 6)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(deliveredClickLabels(), labels(1...5), "each delivered once, oldest first")
        XCTAssertEqual(try storedHits(), [])
        let statistics = await flagship.closeReporting()
        XCTAssertEqual(statistics?.expired, 0)
    }

    func testHitsStillExpireOnceTheirLifetimeHasReallyPassedAfterAStepForward() async throws {
        server.stop()
        start(trackingBuilder(interval: 60))
        let visitor = makeVisitor()
        for number in 1...3 { try await visitor.sendHit(click(number)) }
        await flagship.waitUntilTrackingIsIdle()

        clock.step(by: 5 * Self.hour)
        try await waitForSleepers(1)
        clock.advance(by: 4 * Self.hour + 61)
        await flagship.waitUntilTrackingIsIdle()
        try await waitUntil("the expiry at the next tick") { try self.storedClickLabels().isEmpty }
        XCTAssertTrue(log.allText.contains("Deleted 4 unsent hit(s) older than 4 h"), log.allText)
    }

    func testASystemClockSetADayBackDoesNotHoldTheBackoffForADay() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        await flagship.waitUntilTrackingIsIdle()
        server.clearReceived()
        server.injectFault(.status(500), on: .events, share: .next(1))

        try await visitor.sendHit(click(1))
        _ = try await server.waitForRequests(route: .events, count: 1)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try storedHits().map(\.attempts), [1], "failed once: the next try in 1 s")

        clock.step(by: -24 * Self.hour)
        clock.advance(by: 1)
        _ = try await server.waitForHits(count: 1)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(deliveredClickLabels(), ["hit-1"], "sent after the second of backoff, not a day later")
        XCTAssertEqual(try storedHits(), [])

        // Later hits are not held either.
        try await visitor.sendHit(click(2))
        _ = try await server.waitForHits(count: 2)
        XCTAssertEqual(deliveredClickLabels(), ["hit-1", "hit-2"])
    }

    /// The queue times (`qt`, ms) of the click hits the server received, by label.
    private func queueTimes() -> [String: Double] {
        var times: [String: Double] = [:]
        for hit in server.hits where hit["t"]?.stringValue == "EVENT" {
            if let label = hit["el"]?.stringValue, label.hasPrefix("hit-"), let qt = hit["qt"]?.doubleValue { times[label] = qt }
        }
        return times
    }

    /// Hits that waited about six minutes while the clock was set five hours ahead say six
    /// minutes, not five hours: the collector dates them by it.
    func testAHitThatWaitedAcrossAStepForwardCarriesTheTimeThatReallyPassed() async throws {
        server.stop()
        start(trackingBuilder(interval: 60))
        let visitor = makeVisitor()
        for number in 1...3 { try await visitor.sendHit(click(number)) }
        await flagship.waitUntilTrackingIsIdle()

        clock.step(by: 5 * Self.hour)
        try await waitForSleepers(1)
        // The interval's round a minute later meets the server still down: the server starts once
        // it has failed, so that the hits go at the retry five minutes on, not at this round.
        let failedBefore = await flagship.trackingStatistics()?.failedRequests ?? 0
        clock.advance(by: 61)
        let deadline = Date().addingTimeInterval(5)
        while await (flagship.trackingStatistics()?.failedRequests ?? 0) <= failedBefore {
            guard Date() < deadline else { return XCTFail("the round after the step did not try the server") }
            try await Task.sleep(for: .milliseconds(5))
        }
        try server.start()
        clock.advance(by: 301)
        _ = try await server.waitForHits(count: 4)
        await flagship.waitUntilTrackingIsIdle()

        let times = queueTimes()
        XCTAssertEqual(times.keys.sorted(), labels(1...3))
        for (label, qt) in times {
            XCTAssertEqual(qt, 362_000, accuracy: 1_000, "\(label): \(qt) ms")
        }
        try await visitor.sendHit(click(4))
        _ = try await server.waitForHits(count: 5)
        XCTAssertLessThan(queueTimes()["hit-4"] ?? .infinity, 1_000, "a hit sent at once after the step waited no time")
    }

    /// A day back while hits wait: they still say how long they waited (not 0), and the outage's
    /// end says how long it lasted.
    func testAHitThatWaitedAcrossAStepBackCarriesTheTimeThatReallyPassed() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        await flagship.waitUntilTrackingIsIdle()
        server.clearReceived()
        server.injectFault(.status(500), on: .events, share: .next(1))

        try await visitor.sendHit(click(1))
        _ = try await server.waitForRequests(route: .events, count: 1)
        await flagship.waitUntilTrackingIsIdle()
        // The interval's timer and the failed send's backoff wake, which its own loop arms just
        // after the round ends: the advance below must find it armed.
        try await waitForSleepers(2)

        clock.step(by: -24 * Self.hour)
        clock.advance(by: 1)
        _ = try await server.waitForHits(count: 1)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(queueTimes()["hit-1"] ?? -1, 1_000, accuracy: 200)
        XCTAssertTrue(log.allText.contains("Hits are delivered again, after 1 failed attempt(s) over 1 s"), log.allText)
    }

    /// A hit this process did not accept (left by an earlier one) is aged on the timeline the
    /// process started on: a step since the start is not counted.
    func testAStoredHitOfAnEarlierRunIsAgedOnTheTimelineOfTheStart() async throws {
        let ages = HitAges(clock: clock, limit: 2)
        let earlier = OutgoingHit.hit(type: "EVENT", fields: [:], identity: .init(visitorId: "v1", anonymousId: nil), envId: Self.envId,
                                      createdAt: clock.now().unixMilliseconds - 30_000)
        clock.step(by: 5 * Self.hour)
        clock.advance(by: 10)
        XCTAssertEqual(ages.queueTimes(of: [earlier])[earlier.id], 40_000)

        // Bounded: past `limit` acceptances, the oldest is forgotten (aged as one of no known acceptance).
        let accepted = (0..<3).map { _ in OutgoingHit.hit(type: "EVENT", fields: [:], identity: .init(visitorId: "v1", anonymousId: nil),
                                                            envId: Self.envId, createdAt: clock.now().unixMilliseconds) }
        for hit in accepted { ages.noteAccepted(hit.id) }
        XCTAssertEqual(ages.count, 2)
        clock.advance(by: 2)
        let times = ages.queueTimes(of: accepted)
        XCTAssertEqual(times[accepted[1].id], 2_000)
        XCTAssertEqual(times[accepted[2].id], 2_000)
        XCTAssertEqual(times[accepted[0].id], 0, "created on the stepped wall clock, 5 h ahead of the start's timeline")
        ages.forget([accepted[1].id])
        XCTAssertEqual(ages.count, 1)
    }
}
