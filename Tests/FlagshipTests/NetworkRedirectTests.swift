import FlagshipLocalServer
import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship

/// A redirect to another origin is never followed: every request the SDK makes, and the API key
/// in the Decision API's, goes only to the hosts it was configured with. `elsewhere` is a second
/// local server on its own port, answering like the first: it must never receive a request.
/// The request fails as a network failure would, so the SDK goes on as it does offline.
final class NetworkRedirectTests: TrackingTestCase {
    private var elsewhere: LocalFlagshipServer!

    override func setUpWithError() throws {
        try super.setUpWithError()
        elsewhere = LocalFlagshipServer(envId: Self.envId, apiKey: Self.apiKey, decision: .echoingVisitorId(Self.decision))
        try elsewhere.start()
    }

    override func tearDown() async throws {
        try await super.tearDown()
        elsewhere?.stop()
    }

    /// `http://127.0.0.1:PORT`: how a refusal names an origin.
    private func origin(_ server: LocalFlagshipServer) throws -> String {
        "http://127.0.0.1:\(try XCTUnwrap(server.port))"
    }

    private func campaignsURL(on server: LocalFlagshipServer) -> URL {
        server.decisionBaseURL.flagshipEndpoint(path: [Self.envId, "campaigns"])
    }

    private func campaignsRequest() -> FSHTTPRequest {
        FSHTTPRequest.flagshipPOST(url: campaignsURL(on: server), body: Data(#"{"visitorId":"v1"}"#.utf8),
                                 apiKey: Self.apiKey, sdkVersion: "9.9.9", timeout: 2)
    }

    private func assertRefused(_ request: FSHTTPRequest, on transport: URLSessionTransport, to target: String,
                               file: StaticString = #filePath, line: UInt = #line) async throws {
        do {
            let response = try await transport.send(request)
            XCTFail("followed to an answer with status \(response.status)", file: file, line: line)
        } catch {
            XCTAssertEqual(error, .redirectRefused(from: try origin(server), to: target), file: file, line: line)
        }
    }

    // MARK: The transport

    func testEveryRedirectStatusToAnotherPortFailsTheRequestAndTheOtherServerGetsNothing() async throws {
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        for status in [301, 302, 303, 307, 308] {
            server.injectFault(.redirect(status, location: campaignsURL(on: elsewhere).absoluteString), on: .campaigns, share: .next(1))
            try await assertRefused(campaignsRequest(), on: transport, to: try origin(elsewhere))
        }

        XCTAssertEqual(server.received(.campaigns).map(\.status), [301, 302, 303, 307, 308])
        XCTAssertEqual(elsewhere.received.count, 0)
    }

    func testAnotherHostOrSchemeOnTheSamePortIsAnotherOriginToo() async throws {
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        let port = try XCTUnwrap(server.port)
        for target in ["http://localhost:\(port)", "https://127.0.0.1:\(port)", "HTTP://LOCALHOST:\(port)"] {
            server.injectFault(.redirect(307, location: target + "/v2/\(Self.envId)/campaigns"), on: .campaigns, share: .next(1))
            try await assertRefused(campaignsRequest(), on: transport, to: target.lowercased())
        }

        XCTAssertEqual(server.received.count, 3, "one request each, none followed")
    }

    func testARedirectWithinTheOriginIsFollowedAndTheKeyGoesNowhereElse() async throws {
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        server.injectFault(.redirect(307, location: "/v2/\(Self.envId)/campaigns?moved=1"), on: .campaigns, share: .next(1))

        let response = try await transport.send(campaignsRequest())

        XCTAssertEqual(response.status, 200)
        let requests = server.received(.campaigns)
        XCTAssertEqual(requests.map(\.status), [307, 200])
        XCTAssertEqual(requests.last?.request.queryValues("moved"), ["1"])
        XCTAssertEqual(requests.last?.headers["x-api-key"], Self.apiKey)
        XCTAssertEqual(requests.last?.request.body, Data(#"{"visitorId":"v1"}"#.utf8), "307 keeps the method and the body")
        XCTAssertEqual(elsewhere.received.count, 0)
    }

    func testARedirectLoopWithinTheOriginEndsAfterFiveRedirects() async throws {
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        server.injectFault(.redirect(307, location: "/v2/\(Self.envId)/campaigns"), on: .campaigns)

        do {
            let response = try await transport.send(campaignsRequest())
            XCTFail("a loop has no answer, got \(response.status)")
        } catch {
            XCTAssertEqual(error, .connectionFailed("\(try origin(server).dropFirst(7)) redirected the request more than 5 times"))
        }
        XCTAssertEqual(server.received(.campaigns).map(\.request.method), Array(repeating: "POST", count: 6),
                       "a 307 keeps the POST")
    }

    func testAnotherOriginIsRefusedEvenAfterARedirectWithinTheOrigin() async throws {
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        server.injectFault(.redirect(307, location: "/v2/\(Self.envId)/campaigns?hop=1"), on: .campaigns, share: .next(1))
        server.injectFault(.redirect(307, location: campaignsURL(on: elsewhere).absoluteString), on: .campaigns, share: .next(1))

        try await assertRefused(campaignsRequest(), on: transport, to: try origin(elsewhere))

        XCTAssertEqual(server.received(.campaigns).map(\.status), [307, 307])
        XCTAssertEqual(elsewhere.received.count, 0)
    }

    // MARK: The SDK

    func testADecisionRedirectedElsewhereIsAFetchErrorThatKeepsTheFlags() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        try await visitor.fetchFlags()
        server.injectFault(.redirect(307, location: campaignsURL(on: elsewhere).absoluteString), on: .campaigns)

        do {
            try await visitor.fetchFlags()
            XCTFail("the fetch should fail")
        } catch let error as FlagshipError where error.code == .fetchFailed {
            let reason = try XCTUnwrap(error.fetchFailure)
            XCTAssertTrue(reason.description.contains(try origin(elsewhere)), "\(reason)")
        }

        XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue", visitorExposed: false), "red", "kept")
        XCTAssertEqual(elsewhere.received.count, 0)
        try assertLogNamesTheRefusal(atLeast: .debug)
    }

    func testAnActivateRedirectedElsewhereStaysCachedAndGoesToTheRightServerLater() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        try await visitor.fetchFlags()
        await flagship.waitUntilTrackingIsIdle()
        server.injectFault(.redirect(307, location: elsewhere.decisionBaseURL.appendingPathComponent("activate").absoluteString),
                           on: .activate)

        XCTAssertEqual(visitor.getFlag(key: "banner").value(defaultValue: "none"), "summer")
        try await waitUntil("the refused activate") { self.server.received(.activate).count == 1 }
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try storedHits().filter { $0.type == "ACTIVATE" }.map(\.attempts), [1], "kept for a retry")
        try assertLogNamesTheRefusal()

        server.clearFaults()
        clock.advance(by: 1)
        let activates = try await server.waitForActivates(count: 1)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(activates.map { $0["vaid"]?.stringValue }, ["var2"])
        XCTAssertEqual(try storedHits().filter { $0.type == "ACTIVATE" }, [])
        XCTAssertEqual(elsewhere.received.count, 0)
    }

    func testHitsRedirectedElsewhereStayCachedAndGoToTheRightServerLater() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        _ = try await server.waitForHits(count: 1)  // the consent hit
        await flagship.waitUntilTrackingIsIdle()
        server.injectFault(.redirect(308, location: elsewhere.eventsBaseURL.absoluteString + "/"), on: .events)

        try await visitor.sendHit(click(1))
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(try storedClickLabels(), ["hit-1"])
        XCTAssertEqual(try storedHits().map(\.attempts), [1])
        try assertLogNamesTheRefusal()

        server.clearFaults()
        clock.advance(by: 1)
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(deliveredClickLabels(), ["hit-1"])
        XCTAssertEqual(try storedHits(), [])
        XCTAssertEqual(elsewhere.received.count, 0)
    }

    func testABucketingDownloadRedirectedElsewhereKeepsTheCurrentFile() async throws {
        try server.setBucketingFile(BucketingModeTests.bucketingFile(vipValue: "free"))
        try elsewhere.setBucketingFile(BucketingModeTests.bucketingFile(vipValue: "from elsewhere"))
        start(configBuilder().Bucketing().withBucketingBaseURL(server.bucketingBaseURL)
            .withBucketingPollingIntervals(60).withClock(clock))
        try await waitUntil("the first download") { self.flagship.getStatus() == .SDK_INITIALIZED }
        server.injectFault(.redirect(302, location: elsewhere.bucketingBaseURL.flagshipEndpoint(path: [Self.envId, "bucketing.json"]).absoluteString),
                           on: .bucketing)

        // An advance made before the poller's wait is armed would be lost: the tracking
        // manager's interval and the poller's.
        try await waitForSleepers(2)
        clock.advance(by: 60)
        try await waitUntil("the refusal logged") { self.log.allText.contains("Bucketing file not downloaded") }

        let vip = await flagship.newVisitor(visitorId: "vip", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["isVip": true]).buildAsync()
        try await vip.fetchFlags()
        XCTAssertEqual(vip.getFlag(key: "shipping").value(defaultValue: "", visitorExposed: false), "free")
        XCTAssertEqual(server.received(.bucketing).map(\.status), [200, 302])
        XCTAssertEqual(elsewhere.received.count, 0)
        try assertLogNamesTheRefusal()
    }

    /// A warning or error names the origin refused, and no line holds the key.
    /// `level`: the least a refusal is logged at; a failed `try await fetchFlags()` is thrown
    /// to its caller, so it is only a debug line.
    private func assertLogNamesTheRefusal(atLeast level: Logger.Level = .warning, file: StaticString = #filePath, line: UInt = #line) throws {
        let elsewhereOrigin = try origin(elsewhere)
        let refusals = log.entries.filter { $0.message.contains("redirected the request to another origin, \(elsewhereOrigin)") }
        XCTAssertFalse(refusals.isEmpty, log.allText, file: file, line: line)
        XCTAssertTrue(refusals.allSatisfy { $0.level >= level }, "\(refusals)", file: file, line: line)
        XCTAssertFalse(log.allText.contains(Self.apiKey), file: file, line: line)
    }
}
