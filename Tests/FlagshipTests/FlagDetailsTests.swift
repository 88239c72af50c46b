import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// `FSFlag.details(defaultValue:)`: the same value as `value(defaultValue:)`, and why, for each
/// reason a read can have; on the SDK in bucketing mode against the local server, a real store.
final class FlagDetailsTests: SDKTestCase {
    private func bucketing() -> FSConfigBuilder {
        configBuilder().Bucketing().withBucketingBaseURL(server.bucketingBaseURL).withBucketingPollingIntervals(3600)
    }

    private func visitor(_ id: String, context: [String: Any] = [:], on instance: Flagship? = nil) async -> FSVisitor {
        await (instance ?? flagship).newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: context).buildAsync()
    }

    func testAnABTestGivesSplitAToggleTargetingMatchAndEachValueIsThePlainReadsValue() async throws {
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
        start(bucketing())
        let vip = await visitor("alice", context: ["isVip": true])
        try await vip.fetchFlags()

        let color = vip.getFlag(key: "btnColor").details(defaultValue: "none", visitorExposed: false)
        XCTAssertEqual(color.reason, .SPLIT)
        XCTAssertEqual(color.value, vip.getFlag(key: "btnColor").value(defaultValue: "none", visitorExposed: false))
        XCTAssertEqual(color.metadata.campaignId, "c_checkout")
        XCTAssertTrue(["v_blue", "v_green"].contains(color.variationId))
        XCTAssertEqual(color.source, .bucketingFile)
        XCTAssertNil(color.errorCode)
        XCTAssertNil(color.errorMessage)

        let shipping = vip.getFlag(key: "shipping").details(defaultValue: "standard", visitorExposed: false)
        XCTAssertEqual(shipping.reason, .TARGETING_MATCH)
        XCTAssertEqual(shipping.value, "free")
        XCTAssertEqual(shipping.variationId, "v_vip")
        XCTAssertEqual(shipping.variationName, "On")
    }

    func testAMissingFlagAWrongTypeAndAnUndecidedVisitorGiveTheDefaultWithAnErrorCode() async throws {
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
        start(bucketing())
        let visitor = await visitor("bob")

        let early = visitor.getFlag(key: "btnColor").details(defaultValue: "none")
        XCTAssertEqual(early.reason, .ERROR)
        XCTAssertEqual(early.errorCode, .PROVIDER_NOT_READY)
        XCTAssertEqual(early.value, "none")
        XCTAssertNil(early.source)

        try await visitor.fetchFlags()
        let missing = visitor.getFlag(key: "nope").details(defaultValue: 7)
        XCTAssertEqual(missing.reason, .DEFAULT)
        XCTAssertEqual(missing.errorCode, .FLAG_NOT_FOUND)
        XCTAssertEqual(missing.value, 7)
        XCTAssertEqual(missing.metadata, .empty)

        let mismatch = visitor.getFlag(key: "btnColor").details(defaultValue: 42)
        XCTAssertEqual(mismatch.reason, .ERROR)
        XCTAssertEqual(mismatch.errorCode, .TYPE_MISMATCH)
        XCTAssertEqual(mismatch.value, 42)
        XCTAssertEqual(mismatch.errorMessage, "the flag's value (a string) is not a Int")
        XCTAssertEqual(mismatch.metadata.campaignId, "c_checkout", "the campaign is still named")
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: 42), 42, "as the plain read")
    }

    /// A cached document the SDK cannot read (a version it does not know): until a fetch
    /// decides, every flag says so.
    func testAnUnreadableCachedDecisionGivesParseErrorUntilAFetch() async throws {
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
        start(bucketing())
        let store = try XCTUnwrap(flagship.currentRuntime?.caches?.store)
        func writeUnreadableRow() throws {
            try store.write { try $0.visitors.save(VisitorRecord(visitorId: "frank", anonymousId: nil, consent: true, document: #"{"version": 42}"#, updatedAt: 1)) }
        }
        try writeUnreadableRow()

        let visitor = await visitor("frank")
        let details = visitor.getFlag(key: "btnColor").details(defaultValue: "none")
        XCTAssertEqual(details.reason, .ERROR)
        XCTAssertEqual(details.errorCode, .PARSE_ERROR)
        XCTAssertEqual(details.value, "none")
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "btnColor").details(defaultValue: "none").reason, .SPLIT)
    }

    func testAChangedContextMakesTheValueStaleAndTheCacheGivesCachedUntilTheNextFetch() async throws {
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
        start(bucketing())
        let visitor = await visitor("carol")
        try await visitor.fetchFlags()
        visitor.updateContext("plan", "pro")
        XCTAssertEqual(visitor.getFlag(key: "btnColor").details(defaultValue: "none").reason, .STALE)
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "btnColor").details(defaultValue: "none").reason, .SPLIT)
        await flagship.currentRuntime?.flushCaches()

        let again = await self.visitor("carol")
        let cached = again.getFlag(key: "btnColor").details(defaultValue: "none")
        XCTAssertEqual(cached.reason, .CACHED)
        XCTAssertEqual(cached.source, .cache)
        XCTAssertEqual(cached.value, visitor.getFlag(key: "btnColor").value(defaultValue: "none"))
        try await again.fetchFlags()
        XCTAssertEqual(again.getFlag(key: "btnColor").details(defaultValue: "none").reason, .SPLIT)
    }

    func testInPanicEveryFlagIsDisabled() async throws {
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
        start(bucketing())
        let visitor = await visitor("dan")
        try await visitor.fetchFlags()
        try server.setBucketingFile(Data(#"{"panic": true}"#.utf8), lastModified: Date().addingTimeInterval(60))
        await flagship.currentRuntime?.bucketing?.poll()   // the next poll, now
        XCTAssertEqual(flagship.getStatus(), .SDK_PANIC)
        let details = visitor.getFlag(key: "btnColor").details(defaultValue: "none")
        XCTAssertEqual(details.reason, .DISABLED)
        XCTAssertEqual(details.value, "none")
    }

    func testReadingDetailsReportsTheExposureOnceAsTheValueDoes() async throws {
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
        start(bucketing().withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 1, batchIntervalTimer: 0.05)))
        let visitor = await visitor("erin")
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").details(defaultValue: "none")
        _ = visitor.getFlag(key: "btnColor").details(defaultValue: "none")
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "none")
        let activates = try await server.waitForActivates(count: 1, timeout: .seconds(10))
        try await Task.sleep(for: .milliseconds(200))
        XCTAssertEqual(activates.count, 1)
        XCTAssertEqual(server.activates.count, 1, "one activate for the variation, however many reads")
    }
}
