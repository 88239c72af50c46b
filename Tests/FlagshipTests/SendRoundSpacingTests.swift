import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// Under load the sender does not run one request per group commit: a round asked for while
/// one was under way waits out the spacing (on the SDK's clock), and takes what gathered.
final class SendRoundSpacingTests: TrackingTestCase {
    func testHitsAcceptedDuringARoundGoTogetherOnceTheSpacingHasPassed() async throws {
        // The first request (the consent hit's) is answered late: the clicks arrive meanwhile.
        server.injectFault(.latency(.milliseconds(300)), on: .events, share: .next(1))
        start(trackingBuilder(roundSpacing: 0.05))
        let visitor = makeVisitor()
        _ = try await server.waitForRequests(route: .events, count: 1)
        for number in 1...4 { try await visitor.sendHit(click(number)) }

        // The first round is over, the next waits for the clock: the interval's timer and the spacing.
        _ = try await server.waitForHits(count: 1)
        try await waitForSleepers(2)
        XCTAssertEqual(server.received(.events).count, 1, "no request before the spacing has passed")
        XCTAssertEqual(deliveredClickLabels(), [])

        clock.advance(by: 0.05)
        _ = try await server.waitForHits(count: 5)
        let requests = server.received(.events)
        XCTAssertEqual(requests.count, 2, "the four clicks in one request")
        XCTAssertEqual(requests.last?.json?["h"]?.arrayValue?.count, 4)
        XCTAssertEqual(deliveredClickLabels(), labels(1...4))
    }

    func testAnIdleSenderSendsAtOnce() async throws {
        start(trackingBuilder(roundSpacing: 0.05))
        let visitor = makeVisitor()
        _ = try await server.waitForHits(count: 1)
        await flagship.waitUntilTrackingIsIdle()

        // The clock has not moved: a hit after the sender went idle is not held for the spacing.
        try await visitor.sendHit(click(1))
        _ = try await server.waitForHits(count: 2)
        XCTAssertEqual(deliveredClickLabels(), labels(1...1))
    }

    func testCloseDuringTheSpacingEndsTheSenderAndSendsWhatWaits() async throws {
        server.injectFault(.latency(.milliseconds(300)), on: .events, share: .next(1))
        start(trackingBuilder(roundSpacing: 0.05))
        let visitor = makeVisitor()
        _ = try await server.waitForRequests(route: .events, count: 1)
        for number in 1...3 { try await visitor.sendHit(click(number)) }
        try await waitForSleepers(2)

        await flagship.close()

        XCTAssertEqual(deliveredClickLabels(), labels(1...3), "close's last flush sent what waited")
        XCTAssertEqual(try storedHits(), [])
    }
}
