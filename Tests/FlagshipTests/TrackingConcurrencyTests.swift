import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Many callers, two instances on one file, and a synchronous close from a starved thread pool.
final class TrackingConcurrencyTests: TrackingTestCase {
    func testTwoInstancesSharingOneFileReplayingAtOnceSendEachHitOnce() async throws {
        server.stop()
        start(trackingBuilder())
        let visitor = makeVisitor()
        for number in 1...300 { try await visitor.sendHit(click(number)) }
        await flagship.close()
        try server.start()
        // 30 batches of 10, each answered 50 ms later: one instance alone would take 1.5 s, so
        // both take part even when the machine is slow to start the second.
        server.injectFault(.latency(.milliseconds(50)), on: .events)

        flagship = Flagship()
        let other = Flagship()
        start(trackingBuilder(pageSize: 10))
        other.start(envId: Self.envId, apiKey: Self.apiKey, config: trackingBuilder(pageSize: 10).build())
        _ = try await server.waitForHits(count: 301, timeout: .seconds(20))
        await flagship.waitUntilTrackingIsIdle()
        await other.waitUntilTrackingIsIdle()
        let theirs = await other.closeReporting()
        let ours = await flagship.closeReporting()

        let delivered = deliveredClickLabels()
        XCTAssertEqual(delivered.count, 300, "no hit sent twice")
        XCTAssertEqual(Set(delivered), Set(labels(1...300)), "none lost")
        XCTAssertEqual((theirs?.delivered ?? 0) + (ours?.delivered ?? 0), 301)
        XCTAssertGreaterThan(theirs?.delivered ?? 0, 0, "both took part")
        XCTAssertGreaterThan(ours?.delivered ?? 0, 0, "both took part")
        XCTAssertEqual(try storedHits(), [])
    }

    func testSixteenTasksAwaitingDurabilityAllHaveTheirHitsCommitted() async throws {
        server.stop()
        start(trackingBuilder(poolMaxSize: 10_000))
        let visitors = (0..<16).map { makeVisitor("v\($0)") }

        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, visitor) in visitors.enumerated() {
                group.addTask {
                    for number in 1...50 { try await visitor.sendHit(Self.click(index * 50 + number)) }
                }
            }
            try await group.waitForAll()
        }

        XCTAssertEqual(Set(try storedClickLabels()), Set(labels(1...800)))
        XCTAssertEqual(try storedHits().count, 816, "and the 16 consent hits")
    }

    func testFireAndForgetHitsAreAllCommittedByClose() async throws {
        server.stop()
        start(trackingBuilder(poolMaxSize: 10_000))
        let visitor = makeVisitor()
        for number in 1...2_000 { fireAndForget(visitor, click(number)) }

        await flagship.close()

        XCTAssertEqual(Set(try storedClickLabels()), Set(labels(1...2_000)))
        XCTAssertTrue(log.allText.contains("2001 unsent hit(s) stay in the hit cache: the next start sends them"), log.allText)
    }

    /// Below the ingress cap, a producer faster than the disk loses nothing, and never waits.
    func testAProducerFasterThanTheDiskLosesNothingBelowTheIngressCap() async throws {
        server.stop()
        start(trackingBuilder(poolMaxSize: 10_000).withTrackingSettings { $0.ingressLimit = 7 })
        let visitor = makeVisitor()
        for number in 1...500 { fireAndForget(visitor, click(number)) }

        await flagship.close()

        XCTAssertEqual(Set(try storedClickLabels()), Set(labels(1...500)))
    }

    func testHitsSentAfterCloseAreRefusedAndSaySo() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        await flagship.close()
        await flagship.close()

        visitor.runtime?.tracking.track(OutgoingHit(id: "v1:late", type: "EVENT", createdAt: 0, fields: [:]))

        XCTAssertTrue(log.messages(at: .error).contains("EVENT hit not sent: the SDK was closed"))
    }

    /// Four synchronous `close()` calls from tasks, on a machine with two cores: each blocks a
    /// thread of the cooperative pool, so a close that needed the pool would never finish.
    func testSynchronousCloseFromTasksReturnsEvenWithEveryPoolThreadWaiting() throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        Self.send(visitor, click(1))
        let returned = closeSynchronouslyFromTasks(flagship, count: 4)

        XCTAssertEqual(returned.wait(timeout: .now() + 30), .success, "every synchronous close returned")
        let instance = flagship!
        XCTAssertEqual(instance.getStatus(), .SDK_NOT_INITIALIZED)
        let everywhere = deliveredClickLabels() + (try storedClickLabels())
        XCTAssertEqual(Set(everywhere), ["hit-1"], "delivered by the last flush, or left in the cache: never lost")
    }

    private static func send(_ visitor: FSVisitor, _ hit: FSEvent) {
        visitor.sendHit(hit)
    }
}

/// Calls the synchronous `close()` from `count` detached tasks; the group is left as each returns.
private func closeSynchronouslyFromTasks(_ instance: Flagship, count: Int) -> DispatchGroup {
    let group = DispatchGroup()
    for _ in 0..<count {
        group.enter()
        Task.detached {
            closeSynchronously(instance)
            group.leave()
        }
    }
    return group
}

/// A plain function, so that Swift picks the synchronous overload, as a caller's helper would.
private func closeSynchronously(_ instance: Flagship) {
    instance.close()
}
