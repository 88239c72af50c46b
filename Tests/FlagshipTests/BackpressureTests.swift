import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// While the events endpoint answers, a backlog that grows means the SDK falls behind: it pushes
/// back (awaited hits wait, then throw; hits nobody awaits are shed, counted) instead of letting
/// the cache reach its cap, where eviction would drop hits that were acknowledged.
final class BackpressureTests: TrackingTestCase {
    /// A cap of 40: backpressure from 20 hits waiting, until 10 or fewer wait.
    private func builder(wait: TimeInterval) -> FSConfigBuilder {
        trackingBuilder(maxCachedHits: 40).withTrackingSettings { settings in
            settings.backpressureWait = wait
        }
    }

    func testWhileTheServerAnswersSlowlyHitsNobodyAwaitsAreShedAwaitedOnesThrowAndNothingIsEvicted() async throws {
        start(builder(wait: 0))
        let visitor = makeVisitor()
        try await visitor.sendHit(click(0))
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(flagship.health.status, .ready, "a batch was accepted: the endpoint answers")

        // Each request now takes three seconds: the sender falls behind what arrives. The 20th
        // hit committed makes 20 wait.
        let slow = server.injectFault(.latency(.seconds(3)), on: .events)
        for number in 1...20 { try await visitor.sendHit(click(number)) }
        let overloaded = flagship.health
        XCTAssertEqual(overloaded.status, .overloaded, "\(overloaded)")
        XCTAssertGreaterThanOrEqual(overloaded.backlog, 20)
        XCTAssertFalse(overloaded.isReady, "a readiness probe says: send this instance less traffic")

        for number in 21...25 { fireAndForget(visitor, click(number)) }
        do {
            try await visitor.sendHit(click(26))
            XCTFail("an awaited hit that found no room within its wait is refused, not taken")
        } catch let error as FlagshipError where error.code == .overloaded {
            let (backlog, waited) = (try XCTUnwrap(error.backlog), try XCTUnwrap(error.waited))
            XCTAssertGreaterThanOrEqual(backlog, 20)
            XCTAssertEqual(waited, 0)
        }

        server.removeFault(slow)
        await flagship.waitUntilTrackingIsIdle()
        let reported = await flagship.trackingStatistics()
        let statistics = try XCTUnwrap(reported)
        XCTAssertEqual(statistics.shed, 5, "the five background hits sent under backpressure")
        XCTAssertEqual(statistics.refusedOverloaded, 1)
        XCTAssertEqual(statistics.evicted, 0, "the cap was never reached: nothing acknowledged was evicted")
        XCTAssertEqual(statistics.lost, 0)
        XCTAssertEqual(deliveredClickLabels(), labels(0...20), "every hit taken was delivered, oldest first")
        XCTAssertEqual(flagship.health.status, .ready)
        XCTAssertEqual(flagship.health.shed, 5)
        XCTAssertEqual(log.entries.filter { $0.message.hasPrefix("Hits arrive faster than they are delivered") }.count, 1,
                       "one line when it starts")
        XCTAssertEqual(log.entries.filter { $0.message.hasPrefix("Backpressure ended") }.count, 1, "one when it ends")
        XCTAssertTrue(log.allText.contains("5 hit(s) nobody awaited were shed meanwhile"), log.allText)
    }

    func testAnAwaitedHitWaitsForRoomAndIsTakenOnceTheBacklogDrains() async throws {
        // The wait runs on the SDK's clock, which this test never moves: only room ends it.
        start(builder(wait: 60))
        let visitor = makeVisitor()
        try await visitor.sendHit(click(0))
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()

        let slow = server.injectFault(.latency(.seconds(3)), on: .events)
        for number in 1...20 { try await visitor.sendHit(click(number)) }
        XCTAssertEqual(flagship.health.status, .overloaded)

        let last = click(21)
        let waiting = Task { try await visitor.sendHit(last) }
        server.removeFault(slow)
        try await waiting.value
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(deliveredClickLabels(), labels(0...21))
        let reported = await flagship.trackingStatistics()
        let statistics = try XCTUnwrap(reported)
        XCTAssertEqual(statistics.refusedOverloaded, 0)
        XCTAssertEqual(statistics.shed, 0)
        XCTAssertEqual(statistics.evicted, 0)
    }

    func testDuringAnOutageThereIsNoBackpressureTheCapEvictsAsDocumented() async throws {
        server.stop()
        start(builder(wait: 0))
        let visitor = makeVisitor()
        for number in 1...50 { try await visitor.sendHit(click(number)) }
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(flagship.health.status, .deliveryFailing)
        let reported = await flagship.trackingStatistics()
        let statistics = try XCTUnwrap(reported)
        XCTAssertEqual(statistics.refusedOverloaded, 0, "awaited hits are taken: the cap is the outage's rule")
        XCTAssertEqual(statistics.shed, 0)
        XCTAssertEqual(statistics.evicted, 11, "51 hits (the consent hit too) in a cache of 40")
        XCTAssertEqual(try storedHits().count, 40)
    }

    func testCommittedHitsAreWrittenClaimedByTheirSenderSoAnotherProcessNeverTakesThem() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        try await visitor.sendHit(click(0))
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()

        let slow = server.injectFault(.latency(.seconds(3)), on: .events)
        for number in 1...5 { try await visitor.sendHit(click(number)) }
        let rows = try storedHits()
        XCTAssertEqual(rows.count, 5)
        let committedAt = clock.now().unixMilliseconds
        XCTAssertTrue(rows.allSatisfy { $0.leaseOwner != nil && ($0.leaseUntil ?? 0) > committedAt },
                      "claimed from their commit: \(rows.map { "\($0.leaseOwner ?? "nil") \($0.leaseUntil ?? 0)" })")

        // Another process sharing the file finds nothing to claim: they are in flight here.
        let other = try FlagshipDatabase.open(at: StoreLocation.databaseFile(envId: Self.envId, in: directory.url))
        defer { other.close() }
        let now = clock.now().unixMilliseconds
        let claimed = try await other.write { db in
            try db.hits.claim(.events, owner: "other pid 1 abcd", now: now, leaseUntil: now + 60_000, limit: 100)
        }
        XCTAssertEqual(claimed, [])

        server.removeFault(slow)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(deliveredClickLabels(), labels(0...5), "each once")
        XCTAssertEqual(try storedHits(), [])
    }

    func testHitsCommittedWhileSendsFailWaitInTheStoreUnclaimedAndAreReplayedOldestFirst() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        try await visitor.sendHit(click(0))
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()

        server.injectFault(.status(503), on: .events, share: .next(1))
        for number in 1...6 { try await visitor.sendHit(click(number)) }
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertTrue(try storedHits().allSatisfy { $0.leaseOwner == nil }, "released for the backoff's claims")

        clock.advance(by: 2)
        _ = try await server.waitForHits(count: 8)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(deliveredClickLabels(), labels(0...6), "each once, oldest first")
        XCTAssertEqual(try storedHits(), [])
    }
}

final class CommittedHitsTests: XCTestCase {
    private func hit(_ number: Int, activate: Bool = false) -> OutgoingHit {
        OutgoingHit(id: "v:\(number)", type: activate ? "ACTIVATE" : "EVENT", createdAt: Int64(number),
                    fields: ["vid": .string("v"), "ea": .string("e\(number)")])
    }

    func testRoomIsBoundedAndReservedBeforeTheCommit() {
        let committed = CommittedHits(limit: 3)
        XCTAssertFalse(committed.reserve(1), "closed until a batch is accepted")
        committed.reopen()
        XCTAssertTrue(committed.reserve(2))
        XCTAssertFalse(committed.reserve(2), "2 promised + 2 would pass the limit")
        committed.add([hit(1), hit(2)], claimedUntil: 100, reserved: 2)
        XCTAssertTrue(committed.reserve(1))
        committed.cancel(reserved: 1)
        XCTAssertEqual(committed.count, 2)
        XCTAssertTrue(committed.reserve(1), "a cancelled reservation frees its room")
    }

    func testHitsWhoseClaimWouldLapseAreDroppedForTheStoresClaims() {
        let committed = CommittedHits(limit: 10)
        committed.reopen()
        _ = committed.reserve(3)
        committed.add([hit(1)], claimedUntil: 100, reserved: 1)
        committed.add([hit(2), hit(3)], claimedUntil: 200, reserved: 2)
        let taken = committed.take(.events, limit: 10, holdsUntil: 150)
        XCTAssertEqual(taken.hits.map(\.id), ["v:2", "v:3"])
        XCTAssertEqual(taken.lapsed, 1)
    }

    func testActivatesAndHitsWaitApartAndClosingHandsBackWhatWaits() {
        let committed = CommittedHits(limit: 10)
        committed.reopen()
        _ = committed.reserve(3)
        committed.add([hit(1), hit(2, activate: true), hit(3)], claimedUntil: 100, reserved: 3)
        XCTAssertEqual(committed.take(.activate, limit: 5, holdsUntil: 0).hits.map(\.id), ["v:2"])
        XCTAssertEqual(Set(committed.close().map(\.id)), ["v:1", "v:3"])
        XCTAssertFalse(committed.reserve(1), "closed: hits are committed unclaimed")
        XCTAssertFalse(committed.add([hit(4)], claimedUntil: 100, reserved: 0), "a commit that finishes after closing is refused")
        committed.reopen()
        XCTAssertTrue(committed.reserve(1))
    }
}

final class HandOverLimitTests: XCTestCase {
    func testTheHandOverReachesBackpressureSoTheSenderNeedNotClaimShortOfIt() {
        var settings = TrackingManager.Settings()
        XCTAssertEqual(settings.handOverLimit, 50_000, "the default cap of 100,000: backpressure starts at 50,000")
        XCTAssertEqual(Backpressure.Settings(capacity: settings.capacity).highWater, settings.handOverLimit)
        settings.capacity = 1_000
        XCTAssertEqual(settings.handOverLimit, 500)
        settings.capacity = 10_000_000
        XCTAssertEqual(settings.handOverLimit, 50_000, "memory stays bounded under a large cap")
        settings.committedInMemoryLimit = 7
        XCTAssertEqual(settings.handOverLimit, 7)
    }
}
