import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// An SDK started with its network disabled (`fetch --offline`) makes no transport that could
/// reach a host, the public ones included: nothing leaves the process, hits wait in the cache.
final class HostileNetworkDisabledTests: TrackingTestCase {
    func testNothingIsSentAndTheHitsWaitUntried() async throws {
        start(trackingBuilder().withNetworkDisabled())
        let visitor = makeVisitor()

        try await visitor.sendHit(click(1))
        do {
            try await visitor.fetchFlags()
            XCTFail("an offline fetch cannot succeed")
        } catch let error as FlagshipError where error.code == .fetchFailed {
            let reason = try XCTUnwrap(error.fetchFailure)
            XCTAssertTrue(reason.description.contains("the network is disabled"), "\(reason)")
        }
        clock.advance(by: 600)
        await flagship.waitUntilTrackingIsIdle()
        await flagship.close()

        XCTAssertEqual(server.received.count, 0)
        let hits = try storedHits()
        XCTAssertEqual(hits.map(\.isConsent), [true, false])
        XCTAssertEqual(hits.map(\.attempts), [0, 0], "not even tried")
        XCTAssertEqual(try storedClickLabels(), ["hit-1"])
    }

    func testWithTheDefaultPublicHostsNoTransportCanReachThem() async throws {
        flagship.start(envId: Self.envId, apiKey: Self.apiKey,
                       config: FSConfigBuilder().withCacheDirectory(directory.url).withNetworkDisabled().build())
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()

        let runtime = try XCTUnwrap(flagship.currentRuntime)
        XCTAssertTrue(runtime.transport is DisabledTransport, "\(type(of: runtime.transport))")
        await runtime.tracking.waitUntilIdle()
        await flagship.close()

        XCTAssertEqual(visitor.visitorId, "v1")
        XCTAssertEqual(try storedHits().map(\.isConsent), [true], "the consent hit waits")
        XCTAssertEqual(try storedHits().map(\.attempts), [0])
    }
}
