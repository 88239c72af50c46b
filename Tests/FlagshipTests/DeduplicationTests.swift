import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// What the platform hears about a returning visitor (`FSDeduplication`): a server's request of a
/// known visitor whose state did not change sends only the app's own hit, across a restart too;
/// a changed context, consent or exposure window is reported again, and `.reference` reports
/// everything again as the reference does.
final class DeduplicationTests: TrackingTestCase {
    private let deduplicated = DeduplicationCounts()

    private func builder(_ deduplication: FSDeduplication? = nil, instance clock: ManualClock? = nil) -> FSConfigBuilder {
        let builder = trackingBuilder(clock: clock)
            .Bucketing()
            .withBucketingBaseURL(server.bucketingBaseURL)
            .withBucketingPollingIntervals(3_600)
            .withInstrumentation(deduplicated)
        return deduplication.map { builder.withDeduplication($0) } ?? builder
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
    }

    /// One request as a server serves it: a visitor built, fetched, a flag read, one event sent.
    @discardableResult
    private func request(_ visitorId: String, context: [String: Any] = ["plan": "pro"], hasConsented: Bool = true,
                         sendsEvent: Bool = true, on instance: Flagship? = nil) async throws -> FSVisitor {
        let visitor = await (instance ?? flagship).newVisitor(visitorId: visitorId, hasConsented: hasConsented, instanceType: .NEW_INSTANCE)
            .withContext(context: context).buildAsync()
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "none")
        if sendsEvent { try await visitor.sendHit(click(1)) }
        return visitor
    }

    /// What the server received since the last call, by kind: consent, segment, activate, event.
    private func received(_ instance: Flagship? = nil, on server: LocalFlagshipServer? = nil) async -> Received {
        await (instance ?? flagship).waitUntilTrackingIsIdle()
        let server = server ?? self.server!
        defer { server.clearReceived() }
        let hits = server.hits
        return Received(consent: hits.filter { $0["ea"] == "fs_consent" }.count,
                        segment: hits.filter { $0["t"] == "SEGMENT" }.count,
                        activate: server.activates.count,
                        event: hits.filter { $0["ea"] == "click" }.count)
    }

    private func expect(_ expected: Received, _ message: String = "", file: StaticString = #filePath, line: UInt = #line) async {
        let actual = await received()
        XCTAssertEqual(actual, expected, message, file: file, line: line)
    }

    private func expect(activates expected: Int, _ message: String = "", file: StaticString = #filePath, line: UInt = #line) async {
        let actual = await received().activate
        XCTAssertEqual(actual, expected, message, file: file, line: line)
    }

    private func storedVisitor(_ id: String) throws -> (document: VisitorCacheDocument, updatedAt: Int64)? {
        let store = try inspectStore()
        defer { store.close() }
        guard let record = try store.read({ try $0.visitors.visitor(id: id) }) else { return nil }
        return (try VisitorCacheDocument(data: Data(record.document.utf8), expectedVisitorId: id), record.updatedAt)
    }

    // MARK: A returning visitor

    func testAReturningVisitorWhoseStateDidNotChangeSendsOnlyTheAppsHitAndWritesNoDocument() async throws {
        start(builder())
        try await request("alice")
        let first = await received()
        XCTAssertEqual(first, Received(consent: 1, segment: 1, activate: 1, event: 1), "a new visitor: each thing once")
        let stored = try XCTUnwrap(try storedVisitor("alice"))

        clock.advance(by: 5)
        for _ in 0..<3 { try await request("alice") }
        await expect(Received(consent: 0, segment: 0, activate: 0, event: 3))
        let after = try XCTUnwrap(try storedVisitor("alice"))
        XCTAssertEqual(after.updatedAt, stored.updatedAt, "nothing changed: the document is not written again")
        XCTAssertEqual(deduplicated.counts, [.consent: 3, .segment: 3, .activate: 3])
    }

    func testTheStoredDocumentSaysWhatThePlatformWasToldAndWhichCampaignWasActivated() async throws {
        start(builder())
        let visitor = try await request("bea")
        await flagship.waitUntilTrackingIsIdle()
        let document = try XCTUnwrap(try storedVisitor("bea")).document
        let variation = try XCTUnwrap(visitor.getFlag(key: "btnColor").metadata().variationId)
        XCTAssertEqual(document.reported.consent, true)
        XCTAssertEqual(document.reported.contextDigest?.count, 32)
        XCTAssertEqual(document.reported.exposures["vg_checkout"],
                       ReportedFacts.Exposure(variationId: variation, sentAt: clock.now().unixMilliseconds))
        XCTAssertEqual(document.campaigns.first { $0.variationGroupId == "vg_checkout" }?.activated, true)
    }

    func testWhatWasReportedSurvivesARestart() async throws {
        start(builder())
        try await request("carl")
        _ = await received()
        await flagship.close()

        // The store's second and third starts: `sdk_firstTimeInit` turns false at the second, a
        // fact of the installation that the context's digest leaves out.
        var seen: [Received] = []
        for _ in 0..<2 {
            let restarted = Flagship()
            restarted.start(envId: Self.envId, apiKey: Self.apiKey, config: builder().build())
            try await request("carl", on: restarted)
            seen.append(await received(restarted))
            await restarted.close()
        }
        XCTAssertEqual(seen, Array(repeating: Received(consent: 0, segment: 0, activate: 0, event: 1), count: 2))
    }

    func testAReadOnlyRequestOfAReturningVisitorSendsNothing() async throws {
        start(builder())
        try await request("dora")
        _ = await received()
        for _ in 0..<3 { try await request("dora", sendsEvent: false) }
        await expect(Received(consent: 0, segment: 0, activate: 0, event: 0))
    }

    // MARK: What changes is reported

    func testAChangedContextSendsOneSegmentAndTheSameContextAgainNone() async throws {
        start(builder())
        try await request("eve", context: ["plan": "pro"])
        _ = await received()
        try await request("eve", context: ["plan": "free"])
        await expect(Received(consent: 0, segment: 1, activate: 0, event: 1))
        try await request("eve", context: ["plan": "free"])
        await expect(Received(consent: 0, segment: 0, activate: 0, event: 1))
    }

    func testAWithdrawalIsAlwaysSentAndAVisitorWhoConsentsAgainIsReportedAgain() async throws {
        start(builder())
        let visitor = try await request("fay")
        _ = await received()
        visitor.setConsent(hasConsented: false)
        await expect(Received(consent: 1, segment: 0, activate: 0, event: 0))
        try await request("fay", hasConsented: false, sendsEvent: false)
        await expect(Received(consent: 1, segment: 0, activate: 0, event: 0),
                       "a withdrawal is never deduplicated")
        XCTAssertNil(try storedVisitor("fay"), "the erasure took the record with the rest")

        try await request("fay")
        await expect(Received(consent: 1, segment: 1, activate: 1, event: 1))
    }

    func testTheSameInstanceWithdrawingAndConsentingAgainReportsBoth() async throws {
        start(builder())
        let visitor = try await request("gil")
        _ = await received()
        visitor.setConsent(hasConsented: false)
        visitor.setConsent(hasConsented: true)
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "none")
        // The instance exposed the flag already (the reference's rule); the segment and consent are new.
        await expect(Received(consent: 2, segment: 1, activate: 0, event: 0))
    }

    func testSetConsentTrueOnAVisitorWhoseConsentIsRecordedSendsNothing() async throws {
        start(builder())
        let visitor = try await request("gus")
        _ = await received()
        visitor.setConsent(hasConsented: true)
        await expect(Received(consent: 0, segment: 0, activate: 0, event: 0))
    }

    func testAConsentHitRefusedForItsVisitorIdIsNotRecordedAsReported() async throws {
        start(builder())
        let tooLong = String(repeating: "x", count: FSVisitor.maximumIdBytes + 1)
        let visitor = await flagship.newVisitor(visitorId: tooLong, hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        XCTAssertNil(visitor.withState { $0.reported.consent }, "refused, so never told: a later consent must not be deduplicated")
        await expect(Received(consent: 0, segment: 0, activate: 0, event: 0))
        XCTAssertEqual(deduplicated.counts[.consent] ?? 0, 0)
    }

    func testAnActivateIsSentAgainOnceTheExposureWindowHasPassed() async throws {
        start(builder(.exposureWindow(600)))
        try await request("hal")
        _ = await received()
        clock.advance(by: 599)
        try await request("hal", sendsEvent: false)
        await expect(activates: 0, "within the window")
        clock.advance(by: 1)
        try await request("hal", sendsEvent: false)
        await expect(activates: 1, "the window has passed")
        try await request("hal", sendsEvent: false)
        await expect(activates: 0, "a new window from the activate just sent")
    }

    func testAnAuthenticatedVisitorIsReportedUnderItsNewId() async throws {
        try server.setBucketingFile(BucketingModeTests.bucketingFile(enabledXPC: true))
        start(builder())
        let visitor = try await request("anon-1")
        _ = await received()
        visitor.authenticate(visitorId: "user-1")
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "none")
        let received = await received()
        XCTAssertEqual(received.segment, 1)
        XCTAssertEqual(received.activate, 1, "nothing is recorded for the logged-in id yet")
    }

    // MARK: One write per request

    /// A document waits for the coalescing window, but never past the commit of an activate:
    /// once a flag was exposed, the assignment history is in the store with the activate or before.
    func testTheCommitOfAnActivateWritesTheVisitorsDocumentHoweverYoung() async throws {
        start(builder()
            .withDecisionBaseURL(Self.deadURL)          // activates stay in the store, unsent
            .withEventsBaseURL(Self.deadURL)
            .withTrackingSettings { $0.documentCoalescing = 3_600 })
        let visitor = await flagship.newVisitor(visitorId: "kim", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "none")
        try await waitUntil("the activate is committed") { try self.storedHits().contains { $0.type == "ACTIVATE" } }
        let stored = try XCTUnwrap(try storedVisitor("kim"), "the document went with the activate, an hour before its window")
        XCTAssertEqual(stored.document.reported.exposures.count, 1)
    }

    // MARK: The reference's behaviour

    func testTheReferenceSettingSendsEverythingAgainAtEachRequest() async throws {
        start(builder(.reference))
        try await request("ivy")
        _ = await received()
        try await request("ivy")
        await expect(Received(consent: 1, segment: 1, activate: 1, event: 1))
        XCTAssertEqual(deduplicated.counts, [:])
    }

    func testAWindowOfZeroSendsAnActivatePerVisitorInstanceAndDeduplicatesTheRest() async throws {
        start(builder(.exposureWindow(0)))
        try await request("jo")
        _ = await received()
        try await request("jo")
        await expect(Received(consent: 0, segment: 0, activate: 1, event: 1))
    }
}

/// Hits of each kind a server received.
private struct Received: Equatable, CustomStringConvertible {
    var consent: Int
    var segment: Int
    var activate: Int
    var event: Int

    var description: String { "consent \(consent), segment \(segment), activate \(activate), event \(event)" }
}

/// `hitsDeduplicated` as the SDK told it.
private final class DeduplicationCounts: FlagshipInstrumentation, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [FSDeduplicatedHit: Int] = [:]

    func hitsDeduplicated(kind: FSDeduplicatedHit, count: Int) {
        lock.withLock { stored[kind, default: 0] += count }
    }

    var counts: [FSDeduplicatedHit: Int] { lock.withLock { stored } }
}

// MARK: What a returning request does not redo

final class ReturningRequestWorkTests: XCTestCase {
    func testTheDigestMemoGivesWhatHashingGivesAndMissesWhenTheContextChanges() {
        let digests = ContextDigests(limit: 8)
        let context: [String: FSJSONValue] = ["plan": .string("pro"), "age": .int(31), "sdk_firstTimeInit": .bool(true)]
        let first = digests.digest(of: context, visitorId: "ann")
        XCTAssertEqual(first, ReportedFacts.digest(of: context))
        XCTAssertEqual(digests.digest(of: context, visitorId: "ann"), first)
        XCTAssertEqual(digests.counts.hits, 1, "the same context again: from memory")

        var changed = context
        changed["plan"] = .string("free")
        let other = digests.digest(of: changed, visitorId: "ann")
        XCTAssertEqual(other, ReportedFacts.digest(of: changed), "a changed context is hashed again, never answered from the old entry")
        XCTAssertNotEqual(other, first)
        XCTAssertEqual(digests.counts.misses, 2)
        // Another visitor with the first context: its own entry, the same digest.
        XCTAssertEqual(digests.digest(of: context, visitorId: "bob"), first)
    }

    func testTheDigestMemoKeepsAtMostTwoGenerationsAndKeepsAVisitorSeenOften() {
        let digests = ContextDigests(limit: 4)
        let context: [String: FSJSONValue] = ["plan": .string("pro")]
        for index in 0..<100 {
            _ = digests.digest(of: context, visitorId: "visitor-\(index)")
            _ = digests.digest(of: context, visitorId: "regular")
            XCTAssertLessThanOrEqual(digests.counts.entries, 8, "two generations of 4 at most")
        }
        let before = digests.counts.hits
        _ = digests.digest(of: context, visitorId: "regular")
        XCTAssertEqual(digests.counts.hits, before + 1, "seen at each step: never dropped")
    }

    func testADecisionThatGivesTheSameCampaignsKeepsTheFlagsAndOneThatDiffersRebuildsThem() {
        let campaign = AssignedCampaign(campaignId: "c1", variationGroupId: "vg1", variationId: "v1", type: "ab",
                                        flags: ["color": .string("blue")])
        var state = VisitorState(visitorId: "ann", anonymousId: nil, context: [:], hasConsented: true)
        state.assign([campaign])
        let entry = try! XCTUnwrap(state.flags["color"])
        _ = state.recordExposure(of: entry)
        XCTAssertTrue(state.isExposureReported(entry))

        var activated = campaign
        activated.activated = true
        state.assignDecision([activated])
        XCTAssertTrue(state.flags["color"] === entry, "the same decision (but `activated`): the flags already built")
        XCTAssertFalse(state.isExposureReported(entry), "a new decision: its exposures are asked again, as after any fetch")
        XCTAssertEqual(state.campaigns, [activated])

        var other = campaign
        other.flags["color"] = .string("red")
        state.assignDecision([other])
        XCTAssertEqual(state.flags["color"]?.value, .string("red"), "another value: rebuilt")
        XCTAssertFalse(state.flags["color"] === entry)

        var moved = other
        moved.variationId = "v2"
        state.assignDecision([moved])
        XCTAssertEqual(state.flags["color"]?.metadata.variationId, "v2", "another variation: rebuilt")
        XCTAssertEqual(state.assignmentsHistory["vg1"], "v2")
    }
}
