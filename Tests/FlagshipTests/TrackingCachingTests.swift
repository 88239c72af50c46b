import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// What the hit cache holds, when, and for how long: the two strategies, consent, expiry, the
/// cap, and a custom cache in place of SQLite.
final class TrackingCachingTests: TrackingTestCase {
    func testPeriodicCachingWritesThePoolAtEachIntervalAndLosesNothingAtClose() async throws {
        server.stop()
        start(trackingBuilder(strategy: .PERIODIC_CACHING, poolMaxSize: 100, interval: 10))
        let visitor = makeVisitor()
        try await waitForSleepers(1)

        for number in 1...5 { fireAndForget(visitor, click(number)) }
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try storedClickLabels(), [], "in memory until the interval")

        clock.advance(by: 10)
        try await waitUntil("the pool is written at the interval") { try storedClickLabels().count == 5 }
        XCTAssertEqual(try storedClickLabels().sorted(), labels(1...5).sorted())

        for number in 6...8 { fireAndForget(visitor, click(number)) }
        await flagship.close()
        XCTAssertEqual(try storedClickLabels().sorted(), labels(1...8).sorted(), "close() writes what the interval had not")
    }

    func testAPeriodicPoolThatOutgrowsMemoryIsWrittenBeforeTheInterval() async throws {
        server.stop()
        start(trackingBuilder(strategy: .PERIODIC_CACHING, poolMaxSize: 100, interval: 600)
            .withTrackingSettings { $0.memoryLimit = 10 })
        let visitor = makeVisitor()
        for number in 1...9 { fireAndForget(visitor, click(number)) }

        try await waitUntil("the pool of 10 (9 clicks and the consent hit) is written") { try storedClickLabels().count == 9 }
        XCTAssertEqual(try storedHits().count, 10)
    }

    func testPeriodicCachingSendsFromMemoryAndNeverWritesWhatWasDeliveredInTime() async throws {
        start(trackingBuilder(strategy: .PERIODIC_CACHING, poolMaxSize: 3, interval: 10))
        let visitor = makeVisitor()
        for number in 1...2 { fireAndForget(visitor, click(number)) }

        _ = try await server.waitForHits(count: 3)
        await flagship.waitUntilTrackingIsIdle()
        try await waitForSleepers(1)
        clock.advance(by: 10)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(deliveredClickLabels(), labels(1...2))
        XCTAssertEqual(try storedHits(), [])
    }

    func testWithdrawingConsentDeletesTheVisitorsWaitingHitsButItsConsentHits() async throws {
        server.stop()
        start(trackingBuilder())
        let alice = makeVisitor("alice")
        let bob = makeVisitor("bob")
        for number in 1...3 { try await alice.sendHit(click(number)) }
        for number in 4...5 { try await bob.sendHit(click(number)) }

        alice.setConsent(hasConsented: false)
        await flagship.waitUntilTrackingIsIdle()
        await assertThrows(FlagshipError.consentNotGiven(visitorId: "alice")) { try await alice.sendHit(self.click(6)) }
        await flagship.waitUntilTrackingIsIdle()

        let left = try storedHits()
        XCTAssertEqual(left.filter { $0.visitorId == "alice" }.map(\.isConsent), [true, true], "the consent hits of creation and withdrawal")
        XCTAssertEqual(try storedClickLabels().sorted(), labels(4...5))
    }

    func testHitsPastTheirLifetimeAreDeletedUnsentAndCounted() async throws {
        server.stop()
        start(trackingBuilder(interval: 10, hitLifetime: 60))
        let visitor = makeVisitor()
        for number in 1...4 { try await visitor.sendHit(click(number)) }
        try await waitForSleepers(2)
        XCTAssertEqual(try storedHits().count, 5)

        clock.advance(by: 61)
        try await waitUntil("expired hits are deleted at the next interval") { try storedHits().isEmpty }

        XCTAssertTrue(log.messages(at: .warning).contains("Deleted 5 unsent hit(s) older than 60 s"), log.allText)
        let statistics = await flagship.closeReporting()
        XCTAssertEqual(statistics?.expired, 5)
        XCTAssertEqual(statistics?.delivered, 0)
    }

    func testHitsLeftByAnEarlierRunPastTheirLifetimeAreDeletedAtStartNotSent() async throws {
        server.stop()
        start(trackingBuilder())
        let visitor = makeVisitor()
        for number in 1...3 { try await visitor.sendHit(click(number)) }
        await flagship.close()

        try server.start()
        clock.advance(by: 4 * 3600 + 1)
        flagship = Flagship()
        start(trackingBuilder())
        await flagship.waitUntilTrackingIsIdle()
        let statistics = await flagship.closeReporting()

        XCTAssertEqual(statistics?.expired, 4)
        XCTAssertEqual(statistics?.cachedAtStart, 0)
        XCTAssertEqual(deliveredClickLabels(), [])
        XCTAssertEqual(try storedHits(), [])
        XCTAssertTrue(log.allText.contains("Deleted 4 unsent hit(s) older than 4 h"))
    }

    func testPastTheCapTheOldestHitsAreEvictedAndCounted() async throws {
        server.stop()
        start(trackingBuilder(maxCachedHits: 10))
        let visitor = makeVisitor()
        // The consent hit's send fails and the sender waits out its backoff (the clock stands
        // still): no click is ever in flight, and eviction, which never takes a row in flight,
        // may take any. Without this, a first claim that came late (a loaded machine) held some
        // old clicks, and eviction rightly took newer ones instead.
        await flagship.waitUntilTrackingIsIdle()
        for number in 1...25 { try await visitor.sendHit(click(number)) }
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(try storedClickLabels().sorted(), labels(16...25).sorted(), "the 10 newest stay")
        let statistics = await flagship.closeReporting()
        XCTAssertEqual(statistics?.evicted, 16, "the consent hit and the 15 oldest clicks")
        XCTAssertTrue(log.messages(at: .warning).contains { $0.hasPrefix("Hit cache full: evicted the") })
    }

    func testACustomHitCacheReceivesEveryHitAndIsFlushedOfWhatWasDelivered() async throws {
        let custom = MemoryHitCache()
        server.stop()
        start(trackingBuilder().withCacheManager(FSCacheManager(nil, custom)))
        // While the start's lookupHits runs, calls queue behind it without being awaited: a hit is
        // in the cache once committed from its end on.
        let queue = try XCTUnwrap(flagship.currentRuntime?.tracking.hitQueue as? DelegateHitQueue)
        try await waitUntil("the start's lookup answered") { custom.count("lookupHits") == 1 && !queue.lookupRunning }
        let visitor = makeVisitor()
        try await visitor.sendHit(click(1))

        XCTAssertEqual(custom.ids.count, 2, "the consent hit and the click, once accepted")
        let id = try XCTUnwrap(custom.ids.first { custom.document($0).map { "\($0)".contains("hit-1") } ?? false })
        let document = try HitCacheDocument(dictionary: try XCTUnwrap(custom.document(id)))
        XCTAssertEqual(document.visitorId, "v1")
        XCTAssertEqual(document.type, "EVENT")
        XCTAssertEqual(document.time, clock.now().unixMilliseconds)
        XCTAssertEqual(document.content["ea"], .string("click"))
        XCTAssertEqual(document.content["el"], .string("hit-1"))
        XCTAssertNil(document.content["qt"], "qt is computed at each send, never cached")
        XCTAssertTrue(try storedHits().isEmpty, "a custom cache replaces the SQLite table")
        await flagship.waitUntilTrackingIsIdle()  // the failed send over, its backoff armed

        try server.start()
        clock.advance(by: 1)
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(custom.ids, [])
        XCTAssertEqual(custom.count("flushHits"), server.received(.events).filter(\.isAccepted).count, "one flush per delivered batch")
    }

    func testTheDefaultHitCacheHandedOverExplicitlyIsUsedAsATableInItsOwnFile() async throws {
        let elsewhere = directory.url.appendingPathComponent("shared", isDirectory: true)
        let given = try FSDefaultCacheHit(envId: "shared_env", cacheDirectory: elsewhere, maxHits: 3)
        server.stop()
        start(trackingBuilder().withCacheManager(FSCacheManager(nil, given)))
        let visitor = makeVisitor()
        for number in 1...4 { try await visitor.sendHit(click(number)) }
        await flagship.close()

        let store = try FlagshipDatabase.openForInspection(at: StoreLocation.databaseFile(envId: "shared_env", in: elsewhere))
        defer { store.close() }
        let count = try await store.read { try $0.hits.count() }
        XCTAssertEqual(count, 3, "its own cap")
        XCTAssertEqual(try storedHits(), [], "not the environment's default file")
    }

    func testHitsACustomCacheHoldsFromAnEarlierRunAreReplayedAtStart() async throws {
        let custom = MemoryHitCache()
        let created = clock.now().unixMilliseconds - 5_000
        custom.cacheHits(hits: [
            "old:1": hitDictionary(visitorId: "old", time: created, content: [
                "t": "EVENT", "vid": "old", "ec": "Action Tracking", "ea": "click", "el": "hit-1", "ds": "APP", "cid": Self.envId,
            ]),
            "old:broken": ["version": 1, "data": ["visitorId": "old"]],
        ])

        start(trackingBuilder().withCacheManager(FSCacheManager(nil, custom)))
        let hits = try await server.waitForHits(count: 1)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(deliveredClickLabels(), ["hit-1"])
        XCTAssertEqual(hits.first?["qt"]?.intValue, 5_000)
        XCTAssertEqual(custom.count("lookupHits"), 1, "looked up once per start")
        XCTAssertEqual(custom.ids, ["old:broken"], "a document it cannot read is logged and left alone")
        XCTAssertTrue(log.messages(at: .error).contains { $0.hasPrefix("A cached hit was ignored") })
    }

    func testASlowCustomHitCacheLookupIsAbandonedOnTimeAndHitsStillFlow() async throws {
        let slow = MemoryHitCache(gated: true)
        start(trackingBuilder().withCacheManager(FSCacheManager(nil, slow, hitCacheLookupTimeout: 0.05)))
        let visitor = makeVisitor()
        try await visitor.sendHit(click(1))

        _ = try await server.waitForHits(count: 2)
        // Said at the timeout, on the wall clock: the hits did not wait for it.
        try await waitUntil("the lookup's timeout is said") {
            log.messages(at: .warning).contains { $0.hasPrefix("Hit cache lookup took longer than 50 ms") }
        }
        slow.gate.signal()
        XCTAssertEqual(deliveredClickLabels(), ["hit-1"])
    }

    /// Nothing waits for a custom cache's lookup at start: hits are committed and sent while it
    /// runs (their `cacheHits` queued behind it), and what it then finds is replayed.
    func testAStartDoesNotWaitForACustomHitCachesLookup() async throws {
        let slow = MemoryHitCache(gated: true)
        slow.cacheHits(hits: ["old:1": hitDictionary(visitorId: "old", time: clock.now().unixMilliseconds - 5_000, content: [
            "t": "EVENT", "vid": "old", "ec": "Action Tracking", "ea": "click", "el": "hit-0", "ds": "APP", "cid": Self.envId,
        ])])
        start(trackingBuilder().withCacheManager(FSCacheManager(nil, slow, hitCacheLookupTimeout: 60)))
        let visitor = makeVisitor()
        try await visitor.sendHit(click(1))
        _ = try await server.waitForHits(count: 2)
        XCTAssertEqual(deliveredClickLabels(), ["hit-1"], "sent while the lookup runs")
        XCTAssertEqual(slow.count("lookupHits"), 0, "still running")

        slow.gate.signal()
        _ = try await server.waitForHits(count: 3)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(Set(deliveredClickLabels()), ["hit-0", "hit-1"])
        let reported = await flagship.trackingStatistics()
        XCTAssertEqual(reported?.cachedAtStart, 1, "the hit the lookup found, counted once found")
        XCTAssertFalse(log.messages(at: .warning).contains { $0.hasPrefix("Hit cache lookup took longer") })
        XCTAssertTrue(log.messages(at: .info).contains { $0.hasPrefix("Replaying 1 cached hit(s)") })
    }

    func testADocumentEditedIntoNonsenseIsSetAsideNotSentAndNotLost() async throws {
        server.stop()
        start(trackingBuilder())
        let visitor = makeVisitor()
        try await visitor.sendHit(click(1))
        await flagship.close()
        let url = StoreLocation.databaseFile(envId: Self.envId, in: directory.url)
        let store = try FlagshipDatabase.open(at: url)
        let page = try await store.read { try $0.hits.page(limit: 10) }
        let click = try XCTUnwrap(page.first { $0.document.contains("hit-1") })
        try await store.database.write { try $0.execute("UPDATE hits SET document = '{\"version\":1,\"data\":{}}' WHERE id = ?", [.text(click.id)]) }
        store.close()

        try server.start()
        flagship = Flagship()
        start(trackingBuilder())
        _ = try await server.waitForHits(count: 1)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(server.hits.count, 1, "the consent hit; the edited one cannot be sent")
        let left = try storedHits()
        XCTAssertEqual(left.map(\.id), [click.id], "kept, set aside")
        XCTAssertEqual(left.first?.deadLetter, "dead letter: unreadable document")
        XCTAssertTrue(log.messages(at: .error).contains { $0.contains("A cached hit cannot be sent") })
    }

    func testAHitTheCacheCannotTakeIsSentFromMemoryAndTheDurableCallSaysWhy() async throws {
        server.stop()
        start(trackingBuilder())
        let visitor = makeVisitor()
        await flagship.waitUntilTrackingIsIdle()
        // Another process holds the write lock past the busy timeout (5 s).
        let other = try FlagshipDatabase.open(at: StoreLocation.databaseFile(envId: Self.envId, in: directory.url))
        try other.database.withConnection { try $0.execute("BEGIN EXCLUSIVE") }

        await assertThrows(.hitNotCached(.kind(.locked))) { try await visitor.sendHit(self.click(1)) }

        try other.database.withConnection { try $0.execute("ROLLBACK") }
        other.close()
        XCTAssertTrue(log.messages(at: .error).contains { $0.hasPrefix("1 hit(s) could not be written to the hit cache") })
        try server.start()
        clock.advance(by: 1)
        _ = try await server.waitForHits(count: 2)
        XCTAssertEqual(deliveredClickLabels(), ["hit-1"], "sent from memory")
    }

    func testADurableSendHitSaysWhyItWasRefused() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()

        await assertThrows(FlagshipError.invalidHit(.missingField(hit: "EVENT", field: "ea"))) {
            try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: " "))
        }
        XCTAssertEqual(try storedClickLabels(), [], "never cached")
        await flagship.close()
        await assertThrows(FlagshipError.sdkNotInitialized) { try await visitor.sendHit(self.click(1)) }
    }
}
