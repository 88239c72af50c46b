import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// A returning visitor whose stored assignments cannot be read in time (the machine starved, the
/// store's reads behind a saturated writer) is never decided again as if it had none: a changed
/// allocation would move it to another variation. Its fetch fails instead, and the next one,
/// once the store answers, decides with its history.
final class StoredHistoryContinuityTests: TrackingTestCase {
    private func bucketingBuilder() -> FSConfigBuilder {
        configBuilder()
            .Bucketing()
            .withBucketingBaseURL(server.bucketingBaseURL)
            .withBucketingPollingIntervals(60)
            .withClock(clock)
            .withOwnStoreReadBound(0.3)
    }

    private func returning(_ id: String) async -> FSVisitor {
        await flagship.newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
    }

    private func decisionRows(_ visitorId: String) throws -> Int {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { try $0.decisions.decisions(visitorId: visitorId) }.count
    }

    private func storedRow(_ visitorId: String) throws -> VisitorRecord? {
        let store = try inspectStore()
        defer { store.close() }
        return try store.read { try $0.visitors.visitor(id: visitorId) }
    }

    func testAReturningVisitorDecidedAsTheStoreRemembersItIsNotWrittenAgain() async throws {
        try server.setBucketingFile(BucketingModeTests.bucketingFile(greenShare: 50), lastModified: Date(timeIntervalSince1970: 1_763_000_000))
        start(bucketingBuilder())
        try await returning("carol").fetchFlags()
        await flagship.flushCaches()
        let first = try XCTUnwrap(try storedRow("carol"))

        clock.advance(by: 3600)
        let again = await returning("carol")
        try await again.fetchFlags()
        try await again.fetchFlags()
        await flagship.flushCaches()
        XCTAssertEqual(try storedRow("carol")?.updatedAt, first.updatedAt, "the same document: not written again")

        again.updateContext("plan", "pro")
        try await again.fetchFlags()
        await flagship.flushCaches()
        let changed = try XCTUnwrap(try storedRow("carol"))
        XCTAssertEqual(changed.updatedAt, first.updatedAt + 3_600_000, "a new context: written")
        XCTAssertTrue(changed.document.contains("\"plan\":\"pro\""), changed.document)

        again.setConsent(hasConsented: false)
        await flagship.flushCaches()
        XCTAssertNil(try storedRow("carol"))
        again.setConsent(hasConsented: true)
        try await again.fetchFlags()
        await flagship.flushCaches()
        XCTAssertNotNil(try storedRow("carol"), "consent given again: written again, though the document is the same")
    }

    func testAVisitorWhoseStoreReadIsLateIsNotDecidedAgainWithoutItsHistory() async throws {
        // Everyone in the original variation, then everyone in the new one: only history keeps blue.
        try server.setBucketingFile(BucketingModeTests.bucketingFile(greenShare: 0), lastModified: Date(timeIntervalSince1970: 1_763_000_000))
        start(bucketingBuilder())
        let first = await returning("alice")
        try await first.fetchFlags()
        XCTAssertEqual(first.getFlag(key: "btnColor").value(defaultValue: "none"), "blue")
        await flagship.close()
        XCTAssertEqual(try decisionRows("alice"), 1)

        try server.setBucketingFile(BucketingModeTests.bucketingFile(greenShare: 100), lastModified: Date(timeIntervalSince1970: 1_763_000_600))
        start(bucketingBuilder())
        await flagship.pollBucketingFileNow()
        let caches = try XCTUnwrap(flagship.currentRuntime?.caches)
        // The store's reads are held back, as by a starved machine.
        let release = DispatchSemaphore(value: 0)
        caches.visitorCache.queue.async { release.wait() }

        let visitor = await returning("alice")
        do {
            try await visitor.fetchFlags()
            XCTFail("a visitor whose history could not be read is not decided")
        } catch let error as FlagshipError where error.fetchFailure?.code == .storeUnavailable {
            let bound = try XCTUnwrap(error.fetchFailure?.waited)
            XCTAssertEqual(bound, 0.3)
        }
        XCTAssertEqual(visitor.fetchStatus, .FETCH_REQUIRED)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none"), "none", "nothing decided meanwhile")
        XCTAssertTrue(log.allText.contains("could not be read from the store within 300 ms"), log.allText)

        release.signal()
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none"), "blue", "decided with its history")
        let newcomer = await returning("bob")
        try await newcomer.fetchFlags()
        XCTAssertEqual(newcomer.getFlag(key: "btnColor").value(defaultValue: "none"), "green", "the new allocation, for a new visitor")
        await flagship.close()
        XCTAssertEqual(try decisionRows("alice"), 1, "no second decision for alice")
    }
}
