import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// A server's API: one call per request (`fetchedVisitor`) and a page's flags in one read
/// (`flagsSnapshot`), with its exposure policy, and as Flagship's JavaScript SDK takes them.
final class ServerRequestTests: TrackingTestCase {
    func testFetchedVisitorIsReadyAndNeverTheSharedVisitor() async throws {
        start(trackingBuilder())
        let visitor = await flagship.fetchedVisitor(visitorId: "alice", hasConsented: true, context: ["plan": "pro"])
        XCTAssertEqual(visitor.fetchStatus, .FETCHED)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none"), "red")
        XCTAssertEqual(visitor.getContext()["plan"] as? String, "pro")
        XCTAssertNil(flagship.sharedVisitor)
    }

    func testAFailedFetchDoesNotThrowAndTheVisitorServesWhatTheStoreHeld() async throws {
        start(trackingBuilder())
        _ = await flagship.fetchedVisitor(visitorId: "bob", hasConsented: true)
        await flagship.waitUntilTrackingIsIdle()
        server.injectFault(.status(500), on: .campaigns)

        let visitor = await flagship.fetchedVisitor(visitorId: "bob", hasConsented: true)
        XCTAssertEqual(visitor.fetchStatus, .FETCH_REQUIRED)
        XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none"), "red", "from the store")
    }

    func testWithoutConsentNothingIsFetchedAndFlagsGiveTheirDefaults() async throws {
        start(trackingBuilder())
        let visitor = await flagship.fetchedVisitor(visitorId: "carol", hasConsented: false)
        XCTAssertEqual(server.received(.campaigns).count, 0)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none"), "none")
    }

    // MARK: A page's snapshot

    func testASnapshotHoldsEveryFlagAtOnceAndReportsEachExposureWhenAsked() async throws {
        start(trackingBuilder())
        let visitor = await flagship.fetchedVisitor(visitorId: "dan", hasConsented: true)
        let snapshot = visitor.flagsSnapshot(exposure: .now)

        XCTAssertEqual(snapshot.visitorId, "dan")
        XCTAssertEqual(snapshot.fetchStatus, .FETCHED)
        XCTAssertEqual(snapshot.flags.map(\.key), ["banner", "btnColor", "config", "count", "enabled", "list", "nothing", "price", "whole"])
        XCTAssertEqual(snapshot.value("btnColor", defaultValue: "none"), "red")
        XCTAssertEqual(snapshot.value("price", defaultValue: 0.0), 9.99)
        XCTAssertEqual(snapshot.value("nothing", defaultValue: "default"), "default", "null gives the default")
        XCTAssertEqual(snapshot.value("missing", defaultValue: 7), 7)
        XCTAssertEqual(snapshot["btnColor"]?.metadata.variationId, "var2")
        let activates = try await server.waitForActivates(count: 2)
        XCTAssertEqual(Set(activates.compactMap { $0["caid"]?.stringValue }), ["vg1", "vg2"], "one per variation group")
    }

    func testASnapshotLeftToTheClientReportsNothing() async throws {
        start(trackingBuilder())
        let visitor = await flagship.fetchedVisitor(visitorId: "eve", hasConsented: true)
        _ = visitor.flagsSnapshot(exposure: .byTheClient)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(server.activates.count, 0)
        // The server can still report one later.
        visitor.getFlag(key: "btnColor").visitorExposed()
        let activates = try await server.waitForActivates(count: 1)
        XCTAssertEqual(activates.count, 1)
    }

    func testInitialFlagsDataIsWhatTheJavaScriptSDKReadsBack() throws {
        let metadata = FSFlagMetadata(campaignId: "c1", campaignName: "Campaign", variationGroupId: "vg1", variationGroupName: "VG",
                                      variationId: "v1", variationName: "Variation", isReference: false, campaignType: "ab", slug: "")
        let snapshot = FSFlagsSnapshot(visitorId: "v", flags: [
            .init(key: "greeting", rawValue: JSONValueSnapshot(value: .string("Olá € 😀")), metadata: metadata),
            .init(key: "limits", rawValue: JSONValueSnapshot(value: .object(["max": .int(3), "ratio": .double(0.5)])), metadata: metadata),
        ], fetchStatus: .FETCHED, exposure: .byTheClient)

        let entries = try XCTUnwrap(try JSONSerialization.jsonObject(with: snapshot.initialFlagsData()) as? [[String: Any]])
        XCTAssertEqual(entries.count, 2)
        XCTAssertEqual(Set(entries[0].keys), ["key", "campaignId", "campaignName", "variationGroupId", "variationGroupName",
                                               "variationId", "variationName", "isReference", "campaignType", "slug", "hex"])
        XCTAssertTrue(entries[0]["slug"] is NSNull)
        XCTAssertEqual(entries[1]["hex"] as? String, "7b2276223a7b226d6178223a332c22726174696f223a302e357d7d")  // {"v":{"max":3,"ratio":0.5}}
        // Read back as their decoder does: two hex digits a character code, then JSON.parse.
        for (entry, expected) in zip(entries, ["Olá € 😀" as Any, ["max": 3, "ratio": 0.5] as Any]) {
            let hex = Array(try XCTUnwrap(entry["hex"] as? String))
            var characters = ""
            for index in stride(from: 0, to: hex.count, by: 2) {
                let code = try XCTUnwrap(UInt8(String(hex[index...index + 1]), radix: 16))
                characters.unicodeScalars.append(Unicode.Scalar(code))
            }
            let decoded = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(characters.utf8)) as? [String: Any])
            XCTAssertEqual(decoded["v"] as? NSObject, expected as? NSObject)
        }
    }
}
