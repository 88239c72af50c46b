import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Bounded storage through the SDK: its own task prunes the visitors not seen for the retention
/// period, on the SDK's clock, and a visitor that came back and was only read from the cache
/// counts as seen.
final class VisitorRetentionTests: TrackingTestCase {
    private static let day: TimeInterval = 86_400
    /// Not the tracking manager's 60 s, so the retention task's wait is told apart on the clock.
    private static let sightingsInterval: TimeInterval = 90

    private func retentionBuilder(_ retention: TimeInterval?, maxVisitors: Int? = nil) -> FSConfigBuilder {
        trackingBuilder()
            .withVisitorRetention(retention, maxVisitors: maxVisitors)
            .withRetentionSchedule(pruneEvery: 3_600, recordLookupsEvery: Self.sightingsInterval)
    }

    /// Moves the clock once the retention task waits, so that its wait ends with this advance;
    /// first sets the wall clock `step` ahead (or back), as setting the system's date would.
    private func advance(by interval: TimeInterval, steppingWallClockBy step: TimeInterval = 0) async throws {
        let now = clock.now()
        // The task always waits `sightingsInterval` from the time it last woke, and only this
        // helper moves the clock once the SDK is started.
        try await waitUntil("the retention task waits") { self.clock.hasSleeper(until: now.addingTimeInterval(Self.sightingsInterval)) }
        clock.step(by: step)
        clock.advance(by: interval)
    }

    private func storedVisitorIds() throws -> [String] {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { try $0.visitors.visitors() }.map(\.visitorId).sorted()
    }

    private func storedDecisionVisitorIds() throws -> [String] {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { db in
            try db.query("SELECT DISTINCT visitor_id FROM decisions ORDER BY visitor_id").map { try $0.text(0) }
        }
    }

    func testTheSDKPrunesAVisitorNotSeenForTheRetentionAndKeepsOneThatCameBackWithoutBeingRewritten() async throws {
        start(retentionBuilder(30 * Self.day))
        let retention = try XCTUnwrap(flagship.currentRuntime?.retention)
        for id in ["returning", "gone"] { try await makeVisitor(id).fetchFlags() }
        await flagship.flushCaches()
        XCTAssertEqual(try storedDecisionVisitorIds(), ["gone", "returning"])

        // 20 days on, the returning visitor is built again: read from the cache, not fetched.
        try await advance(by: 20 * Self.day)
        try await waitUntil("the first prune") { retention.counts.prunes == 1 }
        XCTAssertEqual(makeVisitor("returning").requiredFetchReason, .FETCHED_FROM_CACHE)

        // 35 days after both were written.
        try await advance(by: 15 * Self.day)
        try await waitUntil("the second prune") { retention.counts.prunes == 2 }

        XCTAssertEqual(retention.counts.expired, 1)
        XCTAssertEqual(retention.counts.evicted, 0)
        XCTAssertEqual(try storedVisitorIds(), ["returning"])
        XCTAssertEqual(try storedDecisionVisitorIds(), ["returning"], "the visitor's decisions went with it")
        XCTAssertEqual(log.messages(at: .info).filter { $0.hasPrefix("Visitor cache pruned") }.count, 1, "one line per prune that deleted")
        let line = try XCTUnwrap(log.messages(at: .info).first { $0.hasPrefix("Visitor cache pruned") })
        XCTAssertTrue(line.hasPrefix("Visitor cache pruned in 1 transaction(s), "), line)
        XCTAssertTrue(line.contains(" ms: 1 visitor(s) not seen for 30 d, with 1 decision row(s); "), line)
        XCTAssertTrue(line.contains("; the longest held the write lock "), line)
    }

    /// The system clock set 40 days ahead while the SDK runs: the next prune ages visitors by the
    /// hour that passed, not by the step; once 30 days have really passed, it prunes them.
    func testASystemClockSetForwardPrunesNoVisitorSeenWithinTheRetention() async throws {
        start(retentionBuilder(30 * Self.day))
        let retention = try XCTUnwrap(flagship.currentRuntime?.retention)
        try await makeVisitor("recent").fetchFlags()
        await flagship.flushCaches()

        try await advance(by: 3_600, steppingWallClockBy: 40 * Self.day)
        try await waitUntil("the first prune") { retention.counts.prunes == 1 }
        XCTAssertEqual(retention.counts.expired, 0, "an hour passed, not 40 days")
        XCTAssertEqual(try storedVisitorIds(), ["recent"])

        try await advance(by: 30 * Self.day)
        try await waitUntil("the second prune") { retention.counts.prunes == 2 }
        XCTAssertEqual(retention.counts.expired, 1, "30 days and an hour have passed")
        XCTAssertEqual(try storedVisitorIds(), [])
    }

    /// The system clock set a year back: prunes still come every `pruneEvery` of measured time.
    func testASystemClockSetBackDoesNotHoldPrunesOff() async throws {
        start(retentionBuilder(30 * Self.day))
        let retention = try XCTUnwrap(flagship.currentRuntime?.retention)
        try await advance(by: 3_600, steppingWallClockBy: -365 * Self.day)
        try await waitUntil("the first prune") { retention.counts.prunes == 1 }
        try await advance(by: 3_600)
        try await waitUntil("the second prune") { retention.counts.prunes == 2 }
    }

    func testWithoutRetentionNoTaskRunsAndNothingIsPrunedHoweverOld() async throws {
        start(retentionBuilder(nil))
        let runtime = try XCTUnwrap(flagship.currentRuntime)
        XCTAssertNil(runtime.retention)
        try await makeVisitor("old").fetchFlags()
        await flagship.flushCaches()

        clock.advance(by: 400 * Self.day)
        XCTAssertEqual(makeVisitor("old").requiredFetchReason, .FETCHED_FROM_CACHE)

        XCTAssertEqual(try storedVisitorIds(), ["old"])
        XCTAssertEqual(runtime.caches?.store.sightings.count, 0, "no lookup noted where nothing would write it")
    }

    func testTheBudgetEvictsTheLeastRecentlySeenVisitors() async throws {
        start(retentionBuilder(nil, maxVisitors: 2))
        let retention = try XCTUnwrap(flagship.currentRuntime?.retention)
        // A day apart; each day's prune finds the budget kept until the third.
        for (day, id) in ["first", "second", "third"].enumerated() {
            try await makeVisitor(id).fetchFlags()
            await flagship.flushCaches()
            try await advance(by: Self.day)
            try await waitUntil("prune \(day + 1)") { retention.counts.prunes == day + 1 }
        }

        XCTAssertEqual(retention.counts.evicted, 1)
        XCTAssertEqual(try storedVisitorIds(), ["second", "third"])
    }

    func testALookupNotedBeforeCloseIsWrittenByClose() async throws {
        start(retentionBuilder(30 * Self.day))
        try await makeVisitor("returning").fetchFlags()
        await flagship.flushCaches()
        let written = clock.now().unixMilliseconds
        clock.advance(by: 2 * Self.day)

        XCTAssertEqual(makeVisitor("returning").requiredFetchReason, .FETCHED_FROM_CACHE)
        await flagship.close()

        let store = try inspectStore()
        defer { store.close() }
        let lastSeen = try await store.read { try $0.visitors.visitorAndLastSeen(id: "returning") }?.lastSeenAt
        XCTAssertEqual(lastSeen, written + Int64(2 * Self.day * 1_000))
    }

    func testTheRetentionIsThirtyDaysByDefaultAndZeroOrNilKeepsVisitorsForEver() {
        XCTAssertEqual(FSConfigBuilder().build().visitorRetention, 30 * Self.day)
        XCTAssertNil(FSConfigBuilder().build().maxCachedVisitors)
        XCTAssertNil(FSConfigBuilder().withVisitorRetention(0).build().visitorRetention)
        XCTAssertNil(FSConfigBuilder().withVisitorRetention(nil).build().visitorRetention)
        let bounded = FSConfigBuilder().withVisitorRetention(7 * Self.day, maxVisitors: 0).build()
        XCTAssertEqual(bounded.visitorRetention, 7 * Self.day)
        XCTAssertNil(bounded.maxCachedVisitors, "0: no budget")
    }

    func testACustomVisitorCacheHasNoRetentionTask() throws {
        start(retentionBuilder(30 * Self.day).withCacheManager(FSCacheManager(NoVisitors())))
        XCTAssertNil(flagship.currentRuntime?.retention, "the app's cache keeps its visitors as it sees fit")
    }
}

/// A custom visitor cache that keeps nothing.
private struct NoVisitors: FSVisitorCacheDelegate {
    func cacheVisitor(visitorId: String, _ visitorData: Data) {}
    func lookupVisitor(visitorId: String) -> Data? { nil }
    func flushVisitor(visitorId: String) {}
}
