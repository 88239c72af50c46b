import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Hot visitors: recently seen visitors' documents in memory, bounded in bytes and in time; the
/// store stays the truth.
final class HotVisitorsTests: TrackingTestCase {
    private func document(_ id: String, padding: Int = 0) -> VisitorCacheDocument {
        VisitorCacheDocument(visitorId: id, context: ["pad": .string(String(repeating: "x", count: padding))])
    }

    // MARK: The cache alone

    func testMemoryStaysWithinTheBudgetAndTheLeastRecentlyUsedHalfGoesFirst() {
        let hot = HotVisitors(.init(byteBudget: 1_000, lifetime: 60), now: clock.now)
        for number in 0..<5 { hot.keep(document("v\(number)"), bytes: 100) }   // 500: the current half is full
        XCTAssertNotNil(hot.document(for: "v0"))                               // used again: stays current
        hot.keep(document("v5"), bytes: 100)                                    // rotates: v0...v4 become previous
        XCTAssertEqual(hot.kept.visitors, 6)
        XCTAssertNotNil(hot.document(for: "v0"), "the previous generation is still served, and promoted")
        for number in 6..<10 { hot.keep(document("v\(number)"), bytes: 100) }  // rotates again
        XCTAssertNil(hot.document(for: "v1"), "least recently used: gone")
        XCTAssertNotNil(hot.document(for: "v0"))
        XCTAssertLessThanOrEqual(hot.kept.currentBytes, 500)
        XCTAssertLessThanOrEqual(hot.kept.visitors * 100, 1_000, "never more than the budget")
        hot.keep(document("huge"), bytes: 600)
        XCTAssertNil(hot.document(for: "huge"), "a document over half the budget is not kept")
    }

    func testAnEntryIsServedForItsLifetimeOnlyAndNotAfterTheClockStepsBack() {
        let hot = HotVisitors(.init(byteBudget: 1_000, lifetime: 2), now: clock.now)
        hot.keep(document("v"), bytes: 10)
        clock.advance(by: 1.9)
        XCTAssertNotNil(hot.document(for: "v"))
        clock.advance(by: 0.1)
        XCTAssertNil(hot.document(for: "v"), "2 s after it was stored: read from the store again")
        hot.keep(document("w"), bytes: 10)
        clock.advance(by: -3_600)
        XCTAssertNil(hot.document(for: "w"), "a clock set back does not keep it")
    }

    func testAReadThatBeganBeforeAnErasurePutsNothingBack() {
        let hot = HotVisitors(.init(byteBudget: 1_000, lifetime: 60), now: clock.now)
        let ticket = hot.ticket()
        hot.erase("v")
        hot.keep(document("v"), bytes: 10, ticket: ticket)
        XCTAssertNil(hot.document(for: "v"))
        hot.keep(document("v"), bytes: 10, ticket: hot.ticket())
        XCTAssertNotNil(hot.document(for: "v"), "a read after the erasure is kept")
    }

    func testABudgetOrLifetimeOfZeroKeepsNothing() {
        for settings in [HotVisitors.Settings(byteBudget: 0, lifetime: 2), .init(byteBudget: 1_000, lifetime: 0)] {
            let hot = HotVisitors(settings, now: clock.now)
            hot.keep(document("v"), bytes: 10)
            XCTAssertNil(hot.document(for: "v"))
        }
    }

    // MARK: In the SDK

    private func bucketing(_ builder: FSConfigBuilder) -> FSConfigBuilder {
        builder.Bucketing().withBucketingBaseURL(server.bucketingBaseURL).withBucketingPollingIntervals(3_600)
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
    }

    private func request(_ id: String, hasConsented: Bool = true, on instance: Flagship? = nil) async throws -> FSVisitor {
        let visitor = await (instance ?? flagship).newVisitor(visitorId: id, hasConsented: hasConsented, instanceType: .NEW_INSTANCE).buildAsync()
        if hasConsented { try await visitor.fetchFlags() }
        return visitor
    }

    func testAReturningVisitorIsServedFromMemoryWithinTheLifetimeThenFromTheStore() async throws {
        start(bucketing(trackingBuilder()))
        _ = try await request("alice")
        await flagship.waitUntilTrackingIsIdle()
        let hot = try XCTUnwrap(flagship.currentRuntime?.caches?.hot)
        let before = hot.counts

        // Another connection deletes alice's row: within the lifetime she is still served from memory.
        let store = try XCTUnwrap(flagship.currentRuntime?.caches?.store)
        try await store.write { try $0.visitors.delete(visitorId: "alice") }
        let warm = await flagship.newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        XCTAssertEqual(warm.requiredFetchReason, .FETCHED_FROM_CACHE)
        XCTAssertEqual(hot.counts.hits, before.hits + 1)

        clock.advance(by: 2)
        let cold = await flagship.newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        XCTAssertEqual(cold.requiredFetchReason, .VISITOR_CREATE, "past the lifetime the store, which no longer has her, is read")
    }

    func testAVisitorErasedInThisProcessIsNeverServedFromMemory() async throws {
        start(bucketing(trackingBuilder()))
        _ = try await request("bob")
        await flagship.waitUntilTrackingIsIdle()
        _ = try await request("bob", hasConsented: false)
        await flagship.waitUntilTrackingIsIdle()   // the erasure's transaction, in the store
        let again = await flagship.newVisitor(visitorId: "bob", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        XCTAssertEqual(again.requiredFetchReason, .VISITOR_CREATE, "erased: nothing of bob is served")
        XCTAssertTrue(again.getFlags().isEmpty)
    }

    func testWithoutHotVisitorsEachBuildReadsTheStore() async throws {
        start(bucketing(trackingBuilder()).withHotVisitors(byteBudget: 0, lifetime: 0))
        _ = try await request("carol")
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertNil(flagship.currentRuntime?.caches?.hot)
        let store = try XCTUnwrap(flagship.currentRuntime?.caches?.store)
        try await store.write { try $0.visitors.delete(visitorId: "carol") }
        let visitor = await flagship.newVisitor(visitorId: "carol", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        XCTAssertEqual(visitor.requiredFetchReason, .VISITOR_CREATE)
    }
}
