import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// The reference's second spellings (`ReferenceNames.swift`) and the 3.2 forwards
/// (`Deprecated.swift`) do what the reference says of them. The tests of 3.2 calls are marked
/// deprecated themselves: a deprecated context may call deprecated API without a warning.
final class ReferenceNamesTests: SDKTestCase {
    private func fetchedVisitor(_ builder: FSConfigBuilder? = nil) async throws -> FSVisitor {
        start(builder)
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()
        return visitor
    }

    // MARK: The current reference's second spellings

    func testWithTrackingConfigSetsTheTrackingManagerConfig() {
        let tracking = FSTrackingManagerConfig(poolMaxSize: 20, batchIntervalTimer: 20, strategy: .PERIODIC_CACHING)

        let config: FSConfig = FSConfigBuilder().withTrackingConfig(tracking).build()

        XCTAssertEqual(config.trackingConfig, tracking)
    }

    func testGetCurrentContextIsTheVisitorsContext() {
        start()
        let visitor = flagship.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["age": 32]).build()

        visitor.updateContext("isVip", true)
        let context = visitor.getCurrentContext()

        XCTAssertEqual(context["age"] as? Int, 32)
        XCTAssertEqual(context["isVip"] as? Bool, true)
        XCTAssertEqual(context.keys.sorted(), visitor.getContext().keys.sorted())
    }

    func testTheReferencesTypeNamesTakeTheSDKsValues() async throws {
        let exposures = Collected<String>()
        let callback: @Sendable (_ visitorExposed: VisitorExposed, _ fromFlag: ExposedFlag) -> Void = { visitor, flag in
            exposures.append("\(visitor.id)|\(flag.key)|\(flag.value)")
        }
        let visitor = try await fetchedVisitor(configBuilder().withOnVisitorExposed(callback))
        let status: FetchStatus = visitor.fetchStatus

        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        await flagship.close()

        XCTAssertEqual(status, .FETCHED)
        XCTAssertEqual(exposures.values, ["v1|btnColor|red"])
    }

    func testACacheManagerMadeFromAnotherUsesItsCachesAndTimeouts() async throws {
        let visitors = RecordingVisitorCache()
        let hits = MemoryHitCache()
        let custom = FSCacheManager(visitors, hits, visitorLookupTimeOut: 0.5, hitCacheLookupTimeout: 0.7)

        let copy = FSCacheManager(custom)
        _ = try await fetchedVisitor(configBuilder().withCacheManager(copy))
        await flagship.flushCaches()

        XCTAssertTrue(copy.visitorCache === custom.visitorCache, "the copy calls the visitor cache on the same queue")
        XCTAssertTrue(copy.hitCache === custom.hitCache, "the copy calls the hit cache on the same queue")
        XCTAssertEqual(copy.visitorLookupTimeOut, 0.5)
        XCTAssertEqual(copy.hitCacheLookupTimeout, 0.7)
        XCTAssertEqual(visitors.savedIds, ["v1"], "the fetched visitor went to the custom cache")
    }

    func testSettingAFlagOfACollectionChangesThatCollectionOnly() async throws {
        let visitor = try await fetchedVisitor()
        var flags = visitor.getFlags()
        let count = flags.count

        flags["alias"] = visitor.getFlag(key: "btnColor")
        flags["price"] = visitor.getFlag(key: "banner")

        XCTAssertEqual(flags.count, count + 1)
        XCTAssertEqual(flags["alias"].value(defaultValue: "", visitorExposed: false), "red")
        XCTAssertEqual(flags["price"].value(defaultValue: "", visitorExposed: false), "summer")
        XCTAssertEqual(visitor.getFlags().count, count, "the visitor's flags are unchanged")
        XCTAssertEqual(visitor.getFlags()["price"].value(defaultValue: 0.0, visitorExposed: false), 9.99)
    }

    // MARK: The 3.2 forwards

    @available(*, deprecated, message: "tests the 3.2 names")
    func testThe32StatusNamesAreTheCurrentStatuses() {
        let names: [FStatus] = [.NOT_INITIALIZED, .POLLING, .READY, .PANIC]

        XCTAssertEqual(names, [.SDK_NOT_INITIALIZED, .SDK_INITIALIZING, .SDK_INITIALIZED, .SDK_PANIC])
        XCTAssertEqual(flagship.getStatus(), .NOT_INITIALIZED)
        start()
        XCTAssertEqual(flagship.getStatus(), .READY)
    }

    @available(*, deprecated, message: "tests the 3.2 names")
    func testThe32NewVisitorHasConsentedUnlessTheBuilderSaysOtherwise() {
        start()

        let shared = flagship.newVisitor("v1").build()
        let withdrawn = flagship.newVisitor("v2", instanceType: .NEW_INSTANCE).hasConsented(hasConsented: false).build()

        XCTAssertEqual(shared.visitorId, "v1")
        XCTAssertTrue(shared.hasConsented)
        XCTAssertTrue(flagship.sharedVisitor === shared, "SHARED_INSTANCE is the default")
        XCTAssertFalse(withdrawn.hasConsented)
        XCTAssertTrue(flagship.sharedVisitor === shared, "a NEW_INSTANCE visitor is not kept")
    }

    @available(*, deprecated, message: "tests the 3.2 names")
    func testGetVisitorGivesTheSharedInstancesVisitor() async {
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "shared-v1", hasConsented: true).buildAsync()

        XCTAssertTrue(Flagship.getVisitor() === visitor)
        await Flagship.sharedInstance.close()
        XCTAssertNil(Flagship.getVisitor())
    }

    @available(*, deprecated, message: "tests the 3.2 names")
    func testThe32GetFlagGivesTheFlagOfThatKey() async throws {
        let visitor = try await fetchedVisitor()

        let flag = visitor.getFlag(key: "btnColor", defaultValue: "blue")

        XCTAssertEqual(flag.key, "btnColor")
        XCTAssertTrue(flag.exists())
        XCTAssertEqual(flag.metadata().campaignId, "c2")
        XCTAssertEqual(flag.value(defaultValue: "blue", visitorExposed: false), "red")
    }

    @available(*, deprecated, message: "tests the 3.2 names")
    func testValueGivesTheFlagOrTheDefaultGivenToGetFlagAndExposesUnlessToldNot() async throws {
        let visitor = try await fetchedVisitor()

        let unexposed = visitor.getFlag(key: "price", defaultValue: 0.0).value(visitorExposed: false)
        let missing = visitor.getFlag(key: "missing", defaultValue: "fallback").value()
        let null = visitor.getFlag(key: "nothing", defaultValue: "fallback").value(visitorExposed: false)
        let mismatch = visitor.getFlag(key: "btnColor", defaultValue: 7).value()
        let raw = visitor.getFlag(key: "price").value(visitorExposed: false)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(server.activates, [], "value(visitorExposed: false) and a missing flag report nothing")

        let exposed = visitor.getFlag(key: "btnColor", defaultValue: "blue").value()
        await flagship.close()

        XCTAssertEqual(unexposed as? Double, 9.99)
        XCTAssertEqual(missing as? String, "fallback", "3.2 gave the default given to getFlag")
        XCTAssertEqual(null as? String, "fallback")
        XCTAssertEqual(mismatch as? Int, 7, "a string flag read with an Int default: the default, no exposure")
        XCTAssertEqual(raw as? Double, 9.99, "a flag got without a default gives its raw value")
        XCTAssertEqual(exposed as? String, "red")
        XCTAssertEqual(server.activates.map { $0["caid"]?.stringValue }, ["vg2"])
    }

    @available(*, deprecated, message: "tests the 3.2 names")
    func testUserExposedReportsTheExposure() async throws {
        let visitor = try await fetchedVisitor()

        visitor.getFlag(key: "price").userExposed()
        await flagship.close()

        XCTAssertEqual(server.activates.map { $0["caid"]?.stringValue }, ["vg1"])
    }

    @available(*, deprecated, message: "tests the 3.2 names")
    func testSendHitConsentRecordsTheConsentAndSendsTheConsentHit() async throws {
        start()
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        await flagship.waitUntilTrackingIsIdle()
        server.clearReceived()

        visitor.sendHitConsent(false)
        await flagship.close()

        XCTAssertFalse(visitor.hasConsented)
        XCTAssertEqual(server.hits.map { $0["ea"] }, ["fs_consent"])
        XCTAssertEqual(server.hits.first?["el"], .string("\(SDKInfo.clientName):false"))
    }
}

/// A custom visitor cache that keeps what it is given.
private final class RecordingVisitorCache: FSVisitorCacheDelegate {
    private let saved = Locked<[String: Data]>([:])

    var savedIds: [String] { saved.withLock { $0.keys.sorted() } }

    func cacheVisitor(visitorId: String, _ visitorData: Data) {
        saved.withLock { $0[visitorId] = visitorData }
    }

    func lookupVisitor(visitorId: String) -> Data? {
        saved.withLock { $0[visitorId] }
    }

    func flushVisitor(visitorId: String) {
        saved.withLock { $0[visitorId] = nil }
    }
}
