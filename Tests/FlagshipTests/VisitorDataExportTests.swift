import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// `Flagship.visitorData(visitorId:)` and `FSVisitorData.read`: everything the store holds for a
/// visitor (an access request), from a running SDK in bucketing mode, and nothing after erasure
/// but the consent hits, until they are sent.
final class VisitorDataExportTests: TrackingTestCase {
    private static let file = BucketingModeTests.bucketingFile(greenShare: 50)

    private func startInBucketingMode() async throws {
        try server.setBucketingFile(Self.file)
        start(trackingBuilder().Bucketing().withBucketingBaseURL(server.bucketingBaseURL).withBucketingPollingIntervals(3600))
        await flagship.currentRuntime?.bucketing?.poll()
    }

    private var storeFile: URL {
        StoreLocation.databaseFile(envId: Self.envId, in: directory.url)
    }

    func testTheAnswerHoldsTheDocumentTheDecisionsWithTheirFileVersionAndTheWaitingHits() async throws {
        server.injectFault(.status(503), on: .events)
        server.injectFault(.status(503), on: .activate)
        try await startInBucketingMode()
        let alice = await flagship.newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["isVip": true, "plan": "pro"]).buildAsync()
        try await alice.fetchFlags()
        _ = alice.getFlag(key: "btnColor").value(defaultValue: "")
        let basket = FSEvent(eventCategory: .Action_Tracking, eventAction: "add-to-basket")
        basket.label = "basket-of-alice"
        try await alice.sendHit(basket)
        let bob = await flagship.newVisitor(visitorId: "bob", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await bob.fetchFlags()

        // No flush first: the call writes what was accepted before it.
        let data = try await flagship.visitorData(visitorId: "alice")

        XCTAssertEqual(data.visitorId, "alice")
        let visitor = try XCTUnwrap(data.visitor)
        XCTAssertTrue(visitor.consent)
        let document = try FSJSONValue(parsing: Data(visitor.document.utf8))
        XCTAssertEqual(document["data"]?["context"]?["plan"], .string("pro"), "the context")
        guard case .array(let campaigns)? = document["data"]?["campaigns"] else { return XCTFail("no campaigns in \(document)") }
        XCTAssertEqual(campaigns.count, 2, "the campaigns")
        XCTAssertEqual(data.decisions.map(\.variationGroupId), ["vg_checkout", "vg_vip"])
        XCTAssertEqual(Set(data.decisions.map(\.fileVersion)), [SHA256.hex(of: Self.file)], "each with the file it was decided on")
        XCTAssertEqual(Set(data.decisions.map(\.source)), ["bucketing_file"])
        XCTAssertEqual(data.decisions.first?.variationId, alice.getFlag(key: "btnColor").metadata().variationId)
        let label = data.hits.first { $0.type == "EVENT" && !$0.isConsent }.flatMap { try? FSJSONValue(parsing: Data($0.document.utf8)) }
        XCTAssertEqual(label?["data"]?["content"]?["el"], .string("basket-of-alice"), "the waiting event")
        XCTAssertTrue(data.hits.contains { $0.type == "ACTIVATE" }, "the waiting activate")
        XCTAssertTrue(data.hits.contains { $0.isConsent }, "the consent hit")
        XCTAssertFalse(data.hits.contains { $0.document.contains("bob") }, "nothing of another visitor")
        XCTAssertEqual(data.unreadableRows, 0)
        XCTAssertFalse(data.isEmpty)

        // The same, read from the file while the SDK has it open (and its sender retries: a
        // hit's attempts may have moved between the two reads), and as JSON.
        let fromFile = try FSVisitorData.read(visitorId: "alice", storeFile: storeFile)
        XCTAssertEqual(fromFile.visitor, data.visitor)
        XCTAssertEqual(fromFile.decisions, data.decisions)
        XCTAssertEqual(fromFile.hits.map(\.id), data.hits.map(\.id))
        XCTAssertEqual(fromFile.hits.map(\.document), data.hits.map(\.document))
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: data.jsonData()) as? [String: Any])
        XCTAssertEqual(json["visitorId"] as? String, "alice")
        let context = ((json["visitor"] as? [String: Any])?["document"] as? [String: Any])
            .flatMap { $0["data"] as? [String: Any] }.flatMap { $0["context"] as? [String: Any] }
        XCTAssertEqual(context?["plan"] as? String, "pro", "documents are embedded as JSON, not as strings")
        XCTAssertEqual((json["decisions"] as? [[String: Any]])?.compactMap { $0["fileVersion"] as? String },
                       [SHA256.hex(of: Self.file), SHA256.hex(of: Self.file)])
        XCTAssertEqual((json["hits"] as? [Any])?.count, data.hits.count)
    }

    func testAfterErasureOnlyTheConsentHitsAreLeftThenNothing() async throws {
        server.injectFault(.status(503), on: .events)
        server.injectFault(.status(503), on: .activate)
        try await startInBucketingMode()
        let alice = await flagship.newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["isVip": true]).buildAsync()
        try await alice.fetchFlags()
        try await alice.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "click"))
        let before = try await flagship.visitorData(visitorId: "alice")
        XCTAssertFalse(before.decisions.isEmpty)

        alice.setConsent(hasConsented: false)
        await flagship.waitUntilTrackingIsIdle()
        let erased = try await flagship.visitorData(visitorId: "alice")

        XCTAssertNil(erased.visitor)
        XCTAssertEqual(erased.decisions, [])
        XCTAssertEqual(erased.hits.map(\.isConsent), [true, true], "only the consent hits, which tell Flagship")
        await flagship.close()

        server.clearFaults()
        flagship = Flagship()
        start(trackingBuilder())
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()
        let delivered = try await flagship.visitorData(visitorId: "alice")
        XCTAssertTrue(delivered.isEmpty, "\(delivered)")
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: delivered.jsonData()) as? NSDictionary)
        XCTAssertEqual(json, ["visitorId": "alice", "visitor": NSNull(), "decisions": [Any](), "hits": [Any](), "unreadableRows": 0, "damagedRows": 0] as NSDictionary)
    }

    func testBeforeStartTheCallSaysTheSDKIsNotStarted() async {
        do {
            _ = try await Flagship().visitorData(visitorId: "alice")
            XCTFail("answered before start")
        } catch {
            XCTAssertEqual(error as? FlagshipError, .sdkNotInitialized)
        }
    }

    func testReadingAFileThatIsNotThereIsAClearErrorThatCreatesNothing() {
        let missing = directory.url.appendingPathComponent("nowhere.sqlite")

        XCTAssertThrowsError(try FSVisitorData.read(visitorId: "alice", storeFile: missing)) { error in
            XCTAssertEqual((error as? FSCacheError)?.code, .fileSystem)
            XCTAssertTrue("\(error)".contains("no store file there"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing.path))
    }
}
