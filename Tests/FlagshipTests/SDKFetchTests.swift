import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

final class SDKFetchTests: SDKTestCase {
    private func visitor(_ id: String = "v1", consent: Bool = true, context: [String: Any] = [:],
                         statuses: Collected<String>? = nil) -> FSVisitor {
        let builder = flagship.newVisitor(visitorId: id, hasConsented: consent, instanceType: .NEW_INSTANCE).withContext(context: context)
        if let statuses {
            builder.withFetchFlagsStatus { statuses.append("\($0.rawValue)/\($1.rawValue)") }
        }
        return builder.build()
    }

    // MARK: The fetch status table

    func testFetchStatusesFollowTheReferenceTableWithOneCallbackPerChange() async throws {
        start()
        let statuses = Collected<String>()
        let visitor = visitor(statuses: statuses)
        XCTAssertEqual(visitor.fetchStatus, .FETCH_REQUIRED)
        XCTAssertEqual(visitor.requiredFetchReason, .VISITOR_CREATE)

        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.fetchStatus, .FETCHED)
        XCTAssertEqual(visitor.requiredFetchReason, .NONE)

        visitor.updateContext("plan", "pro")
        XCTAssertEqual(visitor.requiredFetchReason, .UPDATE_CONTEXT)
        visitor.updateContext("plan", "pro")  // no change, no callback
        try await visitor.fetchFlags()

        visitor.authenticate(visitorId: "user-42")
        XCTAssertEqual(visitor.requiredFetchReason, .AUTHENTICATE)
        try await visitor.fetchFlags()

        visitor.unauthenticate()
        XCTAssertEqual(visitor.requiredFetchReason, .UNAUTHENTICATE)

        server.injectFault(.status(500), on: .campaigns, share: .next(1))
        try? await visitor.fetchFlags()
        XCTAssertEqual(visitor.fetchStatus, .FETCH_REQUIRED)
        XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR)

        server.decision = .panic
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.fetchStatus, .PANIC)
        XCTAssertEqual(visitor.requiredFetchReason, .NONE)
        drainCallbacks()

        XCTAssertEqual(statuses.values, [
            "FETCH_REQUIRED/VISITOR_CREATE", "FETCHING/NONE", "FETCHED/NONE",
            "FETCH_REQUIRED/UPDATE_CONTEXT", "FETCHING/NONE", "FETCHED/NONE",
            "FETCH_REQUIRED/AUTHENTICATE", "FETCHING/NONE", "FETCHED/NONE",
            "FETCH_REQUIRED/UNAUTHENTICATE", "FETCHING/NONE", "FETCH_REQUIRED/FETCH_ERROR",
            "FETCHING/NONE", "PANIC/NONE",
        ])
    }

    func testTheCompletionHandlerRunsOnceWhateverTheOutcome() async throws {
        start()
        let visitor = visitor()
        server.injectFault(.status(503), on: .campaigns)
        let completions = Collected<Int>()

        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            visitor.fetchFlags {
                completions.append(1)
                done.resume()
            }
        }
        drainCallbacks()

        XCTAssertEqual(completions.values, [1])
        XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR)
    }

    // MARK: Store first

    func testAVisitorCachedByAnEarlierRunHasItsFlagsAtBuildWhileTheServerIsDown() async throws {
        start()
        try await visitor(context: ["plan": "pro"]).fetchFlags()
        await flagship.close()
        server.stop()

        let secondRun = Flagship()
        secondRun.start(envId: Self.envId, apiKey: Self.apiKey, config: configBuilder(timeout: 300).build())
        let statuses = Collected<String>()
        let again = await secondRun.newVisitor(visitorId: "v1", hasConsented: true)
            .withFetchFlagsStatus { statuses.append("\($0.rawValue)/\($1.rawValue)") }
            .buildAsync()

        XCTAssertEqual(again.fetchStatus, .FETCH_REQUIRED)
        XCTAssertEqual(again.requiredFetchReason, .FETCHED_FROM_CACHE)
        let flag = again.getFlag(key: "btnColor")
        XCTAssertEqual(flag.value(defaultValue: "blue", visitorExposed: false), "red")
        XCTAssertEqual(flag.status, .FETCH_REQUIRED)
        XCTAssertEqual(flag.metadata(), FSFlagMetadata(
            campaignId: "c2", campaignName: "Campaign 2", variationGroupId: "vg2", variationGroupName: "VG 2",
            variationId: "var2", variationName: "Variation 2", isReference: true, campaignType: "toggle", slug: ""))
        XCTAssertEqual(again.getFlag(key: "price").value(defaultValue: 0.0, visitorExposed: false), 9.99)

        try? await again.fetchFlags()
        XCTAssertEqual(again.requiredFetchReason, .FETCH_ERROR)
        XCTAssertEqual(again.getFlag(key: "btnColor").value(defaultValue: "blue", visitorExposed: false), "red", "kept on failure")
        secondRun.currentRuntime?.callbacks.sync {}
        XCTAssertEqual(statuses.values.first, "FETCH_REQUIRED/FETCHED_FROM_CACHE")
        await secondRun.close()
    }

    func testASuccessfulFetchWritesTheVisitorCacheRow() async throws {
        start()
        try await visitor(context: ["plan": "pro"]).fetchFlags()
        await flagship.close()

        let store = try inspectStore()
        defer { store.close() }
        let stored = try await store.read { try $0.visitors.visitor(id: "v1") }
        let row = try XCTUnwrap(stored)
        XCTAssertTrue(row.consent)
        let document = try VisitorCacheDocument(data: Data(row.document.utf8), expectedVisitorId: "v1")
        XCTAssertEqual(document.campaigns.map(\.campaignId), ["c1", "c2"])
        XCTAssertEqual(document.assignmentsHistory, ["vg1": "var1", "vg2": "var2"])
        XCTAssertEqual(document.context["plan"], .string("pro"))
    }

    // MARK: Failures

    func testAServerSlowerThanTheTimeoutLeavesThePreviousFlagsAndReturnsOnTime() async throws {
        start(configBuilder(timeout: 200))
        let visitor = visitor()
        try await visitor.fetchFlags()
        server.decision = .fixed(Data(#"{"campaigns": []}"#.utf8))
        server.injectFault(.latency(.seconds(3)), on: .campaigns)

        let started = ContinuousClock.now
        do {
            try await visitor.fetchFlags()
            XCTFail("the fetch should time out")
        } catch let error as FlagshipError {
            guard case .fetchFailed = error else { return XCTFail("\(error)") }
        }
        let elapsed = ContinuousClock.now - started

        // On time means at the 200 ms timeout, not when the server answers (3 s): a bound halfway
        // tells them apart, however busy the machine.
        XCTAssertLessThan(elapsed, .milliseconds(1_500))
        XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue", visitorExposed: false), "red")
    }

    func testMalformedTruncatedAndWrongShapeDecisionsAreFetchErrors() async throws {
        start()
        let visitor = visitor()
        try await visitor.fetchFlags()
        for body in [MalformedBody.truncatedJSON, .notJSON, .wrongShape] {
            server.injectFault(.malformedBody(body), on: .campaigns, share: .next(1))
            try? await visitor.fetchFlags()
            XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR, "\(body)")
            XCTAssertEqual(visitor.getFlag(key: "banner").value(defaultValue: "", visitorExposed: false), "summer", "\(body)")
        }
        server.injectFault(.cutOffBody, on: .campaigns, share: .next(1))
        try? await visitor.fetchFlags()
        XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR)
        server.injectFault(.dropConnection, on: .campaigns, share: .next(1))
        try? await visitor.fetchFlags()
        XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR)
    }

    func testACampaignWithoutItsIdsIsLeftOutAndLoggedWhileTheOthersApply() async throws {
        start()
        server.decision = .fixed(Data(#"""
            {"campaigns": [
              {"id": "c1", "variationGroupId": "vg1",
               "variation": {"id": "var1", "modifications": {"type": "FLAG", "value": {"ok": true}}}},
              {"id": "c2", "variation": {"id": "var2", "modifications": {"type": "FLAG", "value": {"lost": 1}}}}
            ]}
            """#.utf8))
        let visitor = visitor()

        try await visitor.fetchFlags()

        XCTAssertEqual(visitor.getFlag(key: "ok").value(defaultValue: false, visitorExposed: false), true)
        XCTAssertFalse(visitor.getFlag(key: "lost").exists())
        XCTAssertTrue(log.messages(at: .warning).contains { $0.hasPrefix("Decision for a visitor: campaign #2 (id \"c2\") was skipped") },
                      log.allText)
    }

    // MARK: Panic

    func testPanicGivesDefaultsSendsNothingAndEndsWithTheNextGoodFetch() async throws {
        start()
        let visitor = visitor()
        try await visitor.fetchFlags()
        // The consent hit of the visitor's creation, accepted before the panic, is delivered
        // first: only what the visitor does in panic is counted below.
        _ = try await server.waitForHits(count: 1)
        await flagship.waitUntilTrackingIsIdle()
        server.decision = .panic
        try await visitor.fetchFlags()
        server.clearReceived()

        XCTAssertEqual(flagship.getStatus(), .SDK_PANIC)
        let flag = visitor.getFlag(key: "btnColor")
        XCTAssertEqual(flag.value(defaultValue: "blue"), "blue")
        XCTAssertEqual(flag.status, .PANIC)
        flag.visitorExposed()
        try? await visitor.sendHit(FSScreen("home"))
        visitor.updateContext("plan", "pro")
        XCTAssertNil(visitor.getContext()["plan"], "no context change in panic")
        do {
            try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "click"))
            XCTFail("no hit in panic")
        } catch let error as FlagshipError {
            XCTAssertEqual(error, .panic)
        }

        server.decision = .echoingVisitorId(Self.decision)
        try await visitor.fetchFlags()
        drainCallbacks()

        XCTAssertEqual(flagship.getStatus(), .SDK_INITIALIZED)
        XCTAssertEqual(sdkStatuses.values, [.SDK_INITIALIZED, .SDK_PANIC, .SDK_INITIALIZED])
        XCTAssertEqual(server.received.filter { $0.route != .campaigns }.count, 0, "no hit or activate reached the server")
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue", visitorExposed: false), "red")
    }

    // MARK: Consent

    func testWithoutConsentOnlyTheConsentHitIsSentAndTheVisitorIsForgotten() async throws {
        start()
        let visitor = visitor()
        try await visitor.fetchFlags()
        _ = try await server.waitForHits(count: 1)  // the consent hit sent at creation
        server.clearReceived()

        visitor.setConsent(hasConsented: false)
        let value = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        visitor.getFlag(key: "banner").visitorExposed()
        do {
            try await visitor.sendHit(FSScreen("home"))
            XCTFail("no hit without consent")
        } catch let error as FlagshipError {
            XCTAssertEqual(error, .consentNotGiven(visitorId: "v1"))
        }
        await flagship.close()

        XCTAssertEqual(value, "red", "flags still work without consent")
        XCTAssertEqual(server.activates, [])
        XCTAssertEqual(server.hits.count, 1)
        XCTAssertEqual(server.hits.first?["ea"], "fs_consent")
        XCTAssertEqual(server.hits.first?["el"], .string("\(SDKInfo.clientName):false"))
        let store = try inspectStore()
        defer { store.close() }
        let row = try await store.read { try $0.visitors.visitor(id: "v1") }
        XCTAssertNil(row, "the visitor row is deleted")
    }

    func testAVisitorCreatedWithoutConsentIsNotCachedAfterAFetch() async throws {
        start()
        let visitor = visitor(consent: false)
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.fetchStatus, .FETCHED)
        await flagship.close()

        let store = try inspectStore()
        defer { store.close() }
        let count = try await store.read { try $0.visitors.count() }
        XCTAssertEqual(count, 0)
        XCTAssertEqual(server.hits.map { $0["el"] }, [.string("\(SDKInfo.clientName):false")])
    }
}
