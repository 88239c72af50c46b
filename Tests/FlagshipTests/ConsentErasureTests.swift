import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// `setConsent(false)` leaves nothing of the visitor on disk, checked on the raw bytes of the
/// database file, its WAL and its shared memory file, with the SDK still running and after close.
///
/// "Nothing of the visitor" cannot mean that its id is gone at once: the consent hit saying
/// `false` must still reach Flagship, and it carries the visitor id by design (as does the one
/// saying `true`, if still unsent). So the decision is: once consent is withdrawn, the visitor's
/// context, its campaigns and flags, its exposures and its other hits are gone from every byte;
/// its id is left only in its consent hits, which the SQL view confirms; and once those are
/// delivered, the id itself is gone from every byte as well.
final class ConsentErasureTests: TrackingTestCase {
    private static let visitorId = "erasure-visitor-6a1f0c"
    /// Values only this visitor's data holds, each a place where it could linger.
    private static let traces = [
        "context": "ultramarine-7d41c9",
        "flag value": "flag-value-5d2e7a",
        "campaign id": "campaign-9b3c1f",
        "variation group id": "group-4e8d2a",
        "variation id": "variation-1c7b6e",
        "hit label": "basket-3f8e2a",
    ]

    private static let erasureDecision: FSJSONValue = [
        "visitorId": "placeholder",
        "campaigns": [[
            "id": "campaign-9b3c1f", "name": "Erasure", "type": "ab",
            "variationGroupId": "group-4e8d2a", "variationGroupName": "Everyone",
            "variation": [
                "id": "variation-1c7b6e", "name": "Treatment", "reference": false,
                "modifications": ["type": "FLAG", "value": ["shade": "flag-value-5d2e7a"]],
            ],
        ]],
    ]

    /// The traces found on disk, by name.
    private func tracesOnDisk() throws -> [String: [String]] {
        try Self.traces.compactMapValues { value in
            let files = try storeFilesHolding(value)
            return files.isEmpty ? nil : files
        }
    }

    func testWithdrawnConsentLeavesOnlyTheConsentHitsAndThenNothing() async throws {
        server.decision = .echoingVisitorId(Self.erasureDecision)
        server.injectFault(.status(503), on: .events)
        server.injectFault(.status(503), on: .activate)
        start(trackingBuilder())
        let visitor = await flagship.newVisitor(visitorId: Self.visitorId, hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["favourite": Self.traces["context"]!]).buildAsync()
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "shade").value(defaultValue: ""), Self.traces["flag value"])
        let basket = FSEvent(eventCategory: .Action_Tracking, eventAction: "add-to-basket")
        basket.label = Self.traces["hit label"]
        try await visitor.sendHit(basket)
        await flagship.flushCaches()
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try tracesOnDisk().keys.sorted(), Self.traces.keys.sorted(), "each trace is found before")

        visitor.setConsent(hasConsented: false)
        await flagship.flushCaches()
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(try tracesOnDisk(), [:], "while running")
        let left = try storedHits()
        XCTAssertEqual(left.map(\.visitorId), [Self.visitorId, Self.visitorId])
        XCTAssertEqual(left.map(\.isConsent), [true, true], "the visitor's rows are its two consent hits")
        let store = try inspectStore()
        let row = try await store.read { try $0.visitors.visitor(id: Self.visitorId) }
        XCTAssertNil(row)
        store.close()
        await flagship.close()
        XCTAssertEqual(try tracesOnDisk(), [:], "after close")
        XCTAssertEqual(try storeFilesHolding(Self.visitorId), ["file"], "in the consent hits, until they are sent")

        server.clearFaults()
        flagship = Flagship()
        start(trackingBuilder())
        let consents = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()
        await flagship.close()

        XCTAssertEqual(consents.map { $0["el"]?.stringValue }, ["\(SDKInfo.clientName):true", "\(SDKInfo.clientName):false"])
        XCTAssertEqual(try storeFilesHolding(Self.visitorId), [], "nothing at all once the consent hits are delivered")
        XCTAssertEqual(try tracesOnDisk(), [:])
    }

    func testAnAuthenticatedVisitorWithdrawingConsentLeavesNeitherItsLoggedInNorItsAnonymousData() async throws {
        server.decision = .echoingVisitorId(Self.erasureDecision)
        start(trackingBuilder())
        let visitor = await flagship.newVisitor(visitorId: "anon-\(Self.visitorId)", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["favourite": Self.traces["context"]!]).buildAsync()
        try await visitor.fetchFlags()
        visitor.authenticate(visitorId: Self.visitorId)
        try await visitor.fetchFlags()
        await flagship.flushCaches()
        let before = try inspectStore()
        let cached = try await before.read { db in
            (try db.visitors.visitor(id: "anon-\(Self.visitorId)"), try db.visitors.visitor(id: Self.visitorId))
        }
        XCTAssertNotNil(cached.0, "the anonymous visitor was cached")
        XCTAssertNotNil(cached.1, "and the logged-in one")
        before.close()

        visitor.setConsent(hasConsented: false)
        await flagship.flushCaches()
        await flagship.waitUntilTrackingIsIdle()

        let after = try inspectStore()
        let left = try await after.read { db in
            (try db.visitors.visitor(id: "anon-\(Self.visitorId)"), try db.visitors.visitor(id: Self.visitorId))
        }
        XCTAssertNil(left.0)
        XCTAssertNil(left.1)
        after.close()
        XCTAssertEqual(try tracesOnDisk(), [:])
    }
}
