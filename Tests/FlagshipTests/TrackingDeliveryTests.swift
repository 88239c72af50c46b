import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Hits reach the server exactly as they were sent, once, whatever happened in between:
/// the network down, a restart, answers that say "later" or "never".
final class TrackingDeliveryTests: TrackingTestCase {
    func testHitsSentOfflineAreCachedThenEachDeliveredOnceWhenTheServerComesBack() async throws {
        server.stop()
        start(trackingBuilder())
        let visitor = makeVisitor()

        for number in 1...40 { try await visitor.sendHit(click(number)) }
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(try storedClickLabels().sorted(), labels(1...40).sorted(), "every hit is in SQLite once its sendHit returned")
        XCTAssertTrue(try storedHits().contains { $0.isConsent }, "the consent hit too")

        try server.start()
        clock.advance(by: 301)
        _ = try await server.waitForHits(count: 41)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(deliveredClickLabels().sorted(), labels(1...40).sorted(), "each delivered exactly once")
        XCTAssertEqual(deliveredClickLabels(), labels(1...40), "oldest first")
        XCTAssertEqual(try storedHits(), [], "the table is empty once delivered")
    }

    func testHitsLeftByAnInstanceDroppedWithoutClosingAreReplayedByTheNextWithTheirFieldsAndAge() async throws {
        let first = Flagship()
        first.start(envId: Self.envId, apiKey: Self.apiKey,
                    config: trackingBuilder().withEventsBaseURL(Self.deadURL).withDecisionBaseURL(Self.deadURL).build())
        let visitor = makeVisitor("v1", on: first)
        let screen = FSScreen("home")
        screen.commonFields.userIp = "203.0.113.7"
        try await visitor.sendHit(screen)
        for number in 1...5 { try await visitor.sendHit(click(number)) }
        // `first` is never closed: as if the process had died.

        let later = ManualClock(clock.now().addingTimeInterval(90))
        start(trackingBuilder(clock: later))
        let hits = try await server.waitForHits(count: 7)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(deliveredClickLabels(), labels(1...5))
        let replayedScreen = try XCTUnwrap(hits.first { $0["t"]?.stringValue == "SCREENVIEW" })
        XCTAssertEqual(replayedScreen["dl"]?.stringValue, "home")
        XCTAssertEqual(replayedScreen["uip"]?.stringValue, "203.0.113.7")
        XCTAssertEqual(replayedScreen["vid"]?.stringValue, "v1")
        XCTAssertEqual(replayedScreen["cid"]?.stringValue, Self.envId)
        XCTAssertEqual(replayedScreen["ds"]?.stringValue, "APP")
        for hit in hits {
            XCTAssertEqual(hit["qt"]?.intValue, 90_000, "qt is the hit's age at this send, in milliseconds")
        }
        let statistics = await flagship.closeReporting()
        XCTAssertEqual(statistics?.cachedAtStart, 7, "6 hits and the consent hit")
        XCTAssertEqual(statistics?.delivered, 7)
        XCTAssertEqual(statistics?.waiting, 0)
    }

    func testClaimsOfAProcessThatDiedAreReleasedAtStartAndItsHitsReplayedAtOnce() async throws {
        server.stop()
        start(trackingBuilder())
        let visitor = makeVisitor()
        for number in 1...3 { try await visitor.sendHit(click(number)) }
        await flagship.close()
        let dead = try Process.run(URL(fileURLWithPath: "/bin/true"), arguments: [])
        dead.waitUntilExit()
        let owners = [
            ClaimOwner(host: SQLiteHitQueue.hostName, pid: dead.processIdentifier, instance: "deadbeef"),
            ClaimOwner(host: SQLiteHitQueue.hostName, pid: ProcessInfo.processInfo.processIdentifier, instance: "alive000"),
        ]
        let url = StoreLocation.databaseFile(envId: Self.envId, in: directory.url)
        let store = try FlagshipDatabase.open(at: url)
        let ids = try await store.read { try $0.hits.page(limit: 10) }.map(\.id)
        try await store.database.write { db in
            // Claimed for an hour: the dead process's first two rows, this (live) process's last two.
            try db.execute("UPDATE hits SET lease_owner = ?, lease_until = ? WHERE id IN (?, ?)",
                           [.text(owners[0].description), .integer(Date().unixMilliseconds + 3_600_000), .text(ids[0]), .text(ids[1])])
            try db.execute("UPDATE hits SET lease_owner = ?, lease_until = ? WHERE id IN (?, ?)",
                           [.text(owners[1].description), .integer(Date().unixMilliseconds + 3_600_000), .text(ids[2]), .text(ids[3])])
        }
        store.close()

        try server.start()
        flagship = Flagship()
        start(trackingBuilder())
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(server.hits.count, 2, "the dead process's rows, at once; the live one's stay claimed")
        XCTAssertEqual(try storedHits().map(\.leaseOwner), [owners[1].description, owners[1].description])
        XCTAssertTrue(log.allText.contains("Released 2 hit(s) claimed by \(owners[0]), a process that no longer runs"), log.allText)
    }

    func testServerErrorsBackOffExponentiallyAndCountAttemptsThenDeliver() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        await flagship.waitUntilTrackingIsIdle()
        server.clearReceived()
        server.injectFault(.status(500), on: .events, share: .next(3))
        let start = clock.now().unixMilliseconds

        try await visitor.sendHit(click(1))
        _ = try await server.waitForRequests(route: .events, count: 1)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try storedHits().map(\.attempts), [1], "tried once")
        XCTAssertEqual(try storedHits().map(\.nextAttemptAt), [start + 1_000])

        clock.advance(by: 0.999)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(server.received(.events).count, 1, "nothing is sent before the backoff ends: no tight loop")

        clock.advance(by: 0.001)
        _ = try await server.waitForRequests(route: .events, count: 2)
        await flagship.waitUntilTrackingIsIdle()
        clock.advance(by: 2)
        _ = try await server.waitForRequests(route: .events, count: 3)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try storedHits().map(\.attempts), [3])

        clock.advance(by: 3.999)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(server.received(.events).count, 3)
        clock.advance(by: 0.001)
        _ = try await server.waitForHits(count: 1)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(server.received(.events).map(\.status), [500, 500, 500, 200])
        XCTAssertEqual(deliveredClickLabels(), ["hit-1"])
        XCTAssertEqual(try storedHits(), [])
        // The first failure in a row is a warning, the next ones debug lines.
        XCTAssertEqual(log.messages(at: .warning).filter { $0.hasPrefix("Hits cannot be delivered (the events endpoint answered with HTTP status 500)") }.count, 1, "\(log.messages(at: .warning))")
        XCTAssertEqual(log.messages(at: .warning).last, "Hits are delivered again, after 3 failed attempt(s) over 7 s")
        let waits = (log.messages(at: .warning) + log.messages(at: .debug)).compactMap { message -> String? in
            guard let range = message.range(of: "next try in ") else { return nil }
            return String(message[range.upperBound...].prefix { $0 != ")" })
        }
        XCTAssertEqual(waits, ["1000 ms (failure 1 in a row", "2000 ms (failure 2 in a row", "4000 ms (failure 3 in a row"])

        // A success resets the backoff: the next failure waits 1 s again.
        server.injectFault(.status(503), on: .events, share: .next(1))
        try await visitor.sendHit(click(2))
        _ = try await server.waitForRequests(route: .events, count: 5)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(log.messages(at: .warning).last?.contains("next try in 1000 ms (failure 1 in a row)"), true)
    }

    func testTooManyRequestsWaitsAtLeastTheServersRetryAfter() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        await flagship.waitUntilTrackingIsIdle()
        server.clearReceived()
        server.injectFault(.tooManyRequests(retryAfter: 30), on: .events, share: .next(1))

        try await visitor.sendHit(click(1))
        _ = try await server.waitForRequests(route: .events, count: 1)
        await flagship.waitUntilTrackingIsIdle()

        clock.advance(by: 29.9)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(server.received(.events).count, 1, "Retry-After is honoured")
        clock.advance(by: 0.1)
        _ = try await server.waitForHits(count: 1)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(deliveredClickLabels(), ["hit-1"])
        XCTAssertTrue(log.allText.contains("next try in 30000 ms"))
    }

    func testARequestRefusedForGoodIsDroppedWithAnErrorNamingTheHitTypeAndLaterHitsGoThrough() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        await flagship.waitUntilTrackingIsIdle()
        server.injectFault(.status(400), on: .events, share: .next(1))

        try await visitor.sendHit(click(1))
        _ = try await server.waitForRequests(route: .events, count: 2)
        await flagship.waitUntilTrackingIsIdle()
        try await visitor.sendHit(click(2))
        _ = try await server.waitForRequests(route: .events, count: 3)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(deliveredClickLabels(), ["hit-2"])
        XCTAssertEqual(try storedHits(), [], "the refused hit is not kept to be sent again")
        let errors = log.messages(at: .error)
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors[0].contains("1 EVENT hit(s) refused with status 400"), errors[0])
        XCTAssertFalse(log.allText.contains("next try in"), "a refusal is no reason to back off")
    }

    func testTransportFailuresAreRetriedLikeServerErrors() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        await flagship.waitUntilTrackingIsIdle()
        server.stop()

        try await visitor.sendHit(click(1))
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try storedHits().map(\.attempts), [1])
        XCTAssertTrue(log.allText.contains("could not be reached"))

        try server.start()
        clock.advance(by: 1)
        _ = try await server.waitForHits(count: 2)  // the consent hit, delivered before the stop, and the click
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(deliveredClickLabels(), ["hit-1"])
        XCTAssertEqual(try storedHits(), [])
    }

    func testHitsWaitForThePoolOrTheIntervalAndGoInOneBatch() async throws {
        start(trackingBuilder(poolMaxSize: 5, interval: 10))
        let visitor = makeVisitor()
        try await waitForSleepers(1)
        for number in 1...3 { try await visitor.sendHit(click(number)) }
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(server.received(.events).count, 0, "3 hits and the consent hit: below the pool size")

        try await visitor.sendHit(click(4))
        _ = try await server.waitForHits(count: 5)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(server.received(.events).count, 1, "the pool full: one batch of 5")

        try await visitor.sendHit(click(5))
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(server.received(.events).count, 1)
        clock.advance(by: 10)
        _ = try await server.waitForHits(count: 6)
        XCTAssertEqual(deliveredClickLabels(), labels(1...5), "the interval sent the rest")
    }

    func testExposuresAreCachedSurviveAnOutageAndCallOnVisitorExposedOnceDelivered() async throws {
        let exposed = Collected<String>()
        start(trackingBuilder().withOnVisitorExposed { _, flag in exposed.append(flag.key) })
        let visitor = makeVisitor()
        try await visitor.fetchFlags()
        server.stop()

        XCTAssertEqual(visitor.getFlag(key: "banner").value(defaultValue: "none"), "summer")
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try storedHits().filter { $0.type == "ACTIVATE" }.count, 1, "the exposure is in SQLite")
        drainCallbacks()
        XCTAssertEqual(exposed.values, [], "not delivered yet")

        try server.start()
        clock.advance(by: 1)
        let activates = try await server.waitForActivates(count: 1)
        await flagship.waitUntilTrackingIsIdle()
        drainCallbacks()

        XCTAssertEqual(activates.count, 1)
        XCTAssertEqual(activates[0]["caid"]?.stringValue, "vg2")
        XCTAssertEqual(activates[0]["vaid"]?.stringValue, "var2")
        XCTAssertEqual(exposed.values, ["banner"], "once, after delivery")
        XCTAssertEqual(try storedHits().filter { $0.type == "ACTIVATE" }, [])
    }
}
