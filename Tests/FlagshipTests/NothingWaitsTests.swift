import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Nothing synchronous waits (issue 19, point 1): with the store locked by another process (a
/// `BEGIN IMMEDIATE` held on a second connection, which makes every write of the SDK wait its
/// busy timeout), a flag read with exposure, the fire-and-forget `sendHit`, the synchronous
/// `build()` and the acceptance of a new bucketing file return at once, or within the lookup
/// timeout; backpressure is left to the `async` forms.
final class NothingWaitsTests: TrackingTestCase {
    private var holder: Database?

    override func tearDown() async throws {
        releaseTheStore()
        try await super.tearDown()
    }

    /// Takes the store's write lock on a connection of the test's own, as another process would.
    private func lockTheStore() throws {
        let holder = try Database(path: StoreLocation.databaseFile(envId: Self.envId, in: directory.url).path)
        try holder.withConnection { _ = try $0.execute("BEGIN IMMEDIATE") }
        self.holder = holder
    }

    private func releaseTheStore() {
        guard let holder else { return }
        _ = try? holder.withConnection { try $0.execute("ROLLBACK") }
        holder.close()
        self.holder = nil
    }

    func testAFlagReadWithExposureAndFireAndForgetHitsNeverWaitForAStoreThatIsLockedAndFarBehind() async throws {
        start(trackingBuilder().withTrackingSettings { settings in
            settings.jitter = { 1 }
            settings.ingressLimit = 5
            settings.ingressCap = 20
        })
        let visitor = makeVisitor()
        try await visitor.fetchFlags()
        await flagship.flushCaches()
        try lockTheStore()

        let started = Date()
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none"), "red")
        for number in 1...100 { fireAndForget(visitor, click(number)) }
        let elapsed = Date().timeIntervalSince(started)

        XCTAssertLessThan(elapsed, 0.5, "a flag read and 100 hits took \(elapsed) s: they waited for the disk")
        let footprint = try XCTUnwrap(flagship.currentRuntime?.tracking.memoryFootprint())
        XCTAssertLessThanOrEqual(footprint.ingress, 20, "the ingress stays within its cap")
        // Said when dropping starts, not per hit (the writer taking its batch may make room once).
        let said = log.messages(at: .error).filter { $0.hasPrefix("Hits arrive faster than the hit cache takes them") }.count
        XCTAssertTrue((1...2).contains(said), "said \(said) times")

        releaseTheStore()
        let closed = await flagship.closeReporting()
        let statistics = try XCTUnwrap(closed)
        XCTAssertGreaterThan(statistics.lost, 0, "the hits past the cap are counted")
        let arrived = Set(deliveredClickLabels() + (try storedClickLabels()))
        XCTAssertEqual(arrived.count + statistics.lost, 100, "every hit is delivered, cached or counted as lost: \(statistics)")
        XCTAssertEqual(server.activates.count, 1, "the exposure's activate was accepted before the cap and delivered")
    }

    func testBuildingAnAuthenticatedVisitorReturnsWithinTheLookupTimeoutWithTheStoreLocked() async throws {
        start(trackingBuilder().withCacheManager(FSCacheManager(visitorLookupTimeOut: 0.2)))
        await flagship.flushCaches()
        try lockTheStore()

        let instance = flagship!
        let started = Date()
        let visitor = buildSynchronously(instance, visitorId: "user-7")
        let elapsed = Date().timeIntervalSince(started)

        XCTAssertLessThan(elapsed, 1, "build() took \(elapsed) s with the store locked")
        XCTAssertNotNil(visitor.anonymousId, "an authenticated visitor has its anonymous id at once")
        releaseTheStore()
        await flagship.flushCaches()
        let again = await instance.newVisitor(visitorId: "user-7", hasConsented: true, instanceType: .NEW_INSTANCE)
            .isAuthenticated(true).buildAsync()
        XCTAssertEqual(again.anonymousId, visitor.anonymousId, "the id made while the store was locked was stored in the background")
    }

    func testANewBucketingFileIsServedAtOnceWithTheStoreLocked() async throws {
        server.bucketingFile = nil
        start(configBuilder().Bucketing().withBucketingBaseURL(server.bucketingBaseURL)
            .withBucketingPollingIntervals(60).withClock(clock))
        try await waitForSleepers(2)
        try lockTheStore()
        try server.setBucketingFile(BucketingModeTests.bucketingFile(greenShare: 100))

        let started = Date()
        clock.advance(by: 60)
        try await waitUntil("the new file decides", timeout: 3) { self.flagship.getStatus() == .SDK_INITIALIZED }
        let elapsed = Date().timeIntervalSince(started)

        XCTAssertLessThan(elapsed, 1, "the file was served after \(elapsed) s: it waited for the locked store")
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none", visitorExposed: false), "green")
    }

    func testAsyncCodeCanFireAndForgetAHitByName() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        try lockTheStore()

        let started = Date()
        visitor.sendHitInBackground(click(1))
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.5, "returned without waiting for the commit")

        releaseTheStore()
        await flagship.flushCaches()
        // Committed, and perhaps delivered already (then deleted, or not yet): there, once at least.
        XCTAssertEqual(Set(try storedClickLabels() + deliveredClickLabels()), ["hit-1"])
    }

    /// The synchronous `build()`, from a synchronous function, as the reference calls it.
    private func buildSynchronously(_ instance: Flagship, visitorId: String) -> FSVisitor {
        instance.newVisitor(visitorId: visitorId, hasConsented: true, instanceType: .NEW_INSTANCE).isAuthenticated(true).build()
    }
}
