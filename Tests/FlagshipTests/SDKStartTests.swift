import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

final class SDKStartTests: SDKTestCase {
    func testStartInitializesAndSaysSoOnce() {
        XCTAssertEqual(flagship.getStatus(), .SDK_NOT_INITIALIZED)

        start()
        drainCallbacks()

        XCTAssertEqual(flagship.getStatus(), .SDK_INITIALIZED)
        XCTAssertEqual(sdkStatuses.values, [.SDK_INITIALIZED])
    }

    func testEmptyOrMalformedCredentialsLeaveTheSDKNotInitialized() {
        for (envId, apiKey, reason) in [
            ("", "key", "the env id is empty"),
            ("env", "", "the API key is empty"),
            ("env/../x", "key", "the env id may hold only letters, digits, '-' and '_'"),
            ("env", "key\r\nx-injected: 1", "the API key holds spaces or characters a header cannot carry"),
        ] {
            flagship.start(envId: envId, apiKey: apiKey, config: configBuilder().build())
            XCTAssertEqual(flagship.getStatus(), .SDK_NOT_INITIALIZED, reason)
            XCTAssertTrue(log.messages(at: .error).contains("Flagship not started: \(reason)"), log.allText)
        }
    }

    func testAVisitorOfAnSDKNotStartedGetsDefaultsAndSendsNothing() async throws {
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true).withContext(context: ["plan": "pro"]).buildAsync()

        visitor.updateContext("age", 32)
        do {
            try await visitor.fetchFlags()
            XCTFail("fetchFlags should throw")
        } catch let error as FlagshipError {
            XCTAssertEqual(error, .sdkNotInitialized)
        }
        let value = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")

        XCTAssertEqual(value, "blue")
        XCTAssertEqual(visitor.fetchStatus, .FETCH_REQUIRED)
        XCTAssertEqual(visitor.getContext()["age"] as? Int, nil, "context updates are ignored")
        do {
            try await visitor.sendHit(FSScreen("home"))
            XCTFail("sendHit should throw")
        } catch let error as FlagshipError {
            XCTAssertEqual(error, .sdkNotInitialized)
        }
        XCTAssertEqual(server.received.count, 0)
    }

    func testCloseIsSafeTwiceAndLeavesTheSDKNotInitialized() async {
        start()
        await flagship.close()
        await flagship.close()
        XCTAssertEqual(flagship.getStatus(), .SDK_NOT_INITIALIZED)
    }

    func testTheAPIKeyNeverAppearsInTheLog() async throws {
        start()
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true).buildAsync()
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        try await visitor.sendHit(FSScreen("home"))
        server.injectFault(.status(500))
        try? await visitor.fetchFlags()
        server.injectFault(.dropConnection)
        try? await visitor.fetchFlags()
        await flagship.close()

        XCTAssertGreaterThan(log.entries.count, 5, "the run did log")
        XCTAssertFalse(log.allText.contains(Self.apiKey))
    }

    func testTheRequestsCarryTheAPIKeyAndSDKHeaders() async throws {
        start()
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true).buildAsync()
        try await visitor.fetchFlags()

        let request = try XCTUnwrap(server.received(.campaigns).last)
        XCTAssertEqual(request.headers["x-api-key"], Self.apiKey)
        XCTAssertEqual(request.headers["x-sdk-client"], SDKInfo.clientName)
        XCTAssertEqual(request.headers["x-sdk-version"], SDKInfo.version)
        XCTAssertEqual(request.request.queryValues("exposeAllKeys"), ["true"])
    }

    func testASharedVisitorIsKeptAndANewInstanceIsNot() {
        start()
        let shared = flagship.newVisitor(visitorId: "v1", hasConsented: true).build()
        _ = flagship.newVisitor(visitorId: "v2", hasConsented: true, instanceType: .NEW_INSTANCE).build()

        XCTAssertTrue(flagship.sharedVisitor === shared)
    }

    func testAnEmptyVisitorIdGetsAGeneratedOne() {
        start()
        let visitor = flagship.newVisitor(visitorId: "", hasConsented: true).build()

        XCTAssertNotNil(UUID(uuidString: visitor.visitorId), visitor.visitorId)
    }

    func testAnAuthenticatedVisitorGetsAnAnonymousIdKeptAcrossRuns() async {
        start()
        let first = await flagship.newVisitor(visitorId: "user-42", hasConsented: true).isAuthenticated(true).buildAsync()
        await flagship.close()
        start()
        let second = await flagship.newVisitor(visitorId: "user-42", hasConsented: true).isAuthenticated(true).buildAsync()

        XCTAssertNotNil(first.anonymousId)
        XCTAssertEqual(first.anonymousId, second.anonymousId)
    }

    func testTheFirstStartWithAStoreIsTheFirstTimeInit() async {
        start()
        let first = await flagship.newVisitor(visitorId: "v1", hasConsented: true).buildAsync()
        await flagship.close()
        start()
        let second = await flagship.newVisitor(visitorId: "v1", hasConsented: true).buildAsync()

        XCTAssertEqual(first.getContext()["sdk_firstTimeInit"] as? Bool, true)
        XCTAssertEqual(second.getContext()["sdk_firstTimeInit"] as? Bool, false)
    }

    func testNothingIsEverSentToTheUsageTelemetryEndpoints() async throws {
        start(configBuilder().withDisableDeveloperUsageTracking(true))
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true).buildAsync()
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        await flagship.close()

        XCTAssertEqual(server.received(.analytics).count + server.received(.troubleshooting).count, 0)
        XCTAssertGreaterThan(server.received.count, 2, "the run did talk to the server")
    }

    func testExposureCallbacksDescribeTheVisitorAndTheFlagAsJSON() async throws {
        let exposed = Collected<String>()
        start(configBuilder().withOnVisitorExposed { visitor, flag in
            exposed.append(visitor.toJson() ?? "")
            exposed.append(flag.toJson() ?? "")
        })
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true).withContext(context: ["plan": "pro"]).buildAsync()
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "banner").value(defaultValue: "none")
        await flagship.close()
        drainCallbacks()

        let values = exposed.values
        XCTAssertEqual(values.count, 2)
        let visitorJSON = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(values[0].utf8)) as? [String: Any])
        XCTAssertEqual(visitorJSON["id"] as? String, "v1")
        XCTAssertTrue(visitorJSON["anonymousId"] is NSNull)
        XCTAssertEqual((visitorJSON["context"] as? [String: Any])?["plan"] as? String, "pro")
        let flagJSON = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(values[1].utf8)) as? [String: Any])
        XCTAssertEqual(flagJSON["key"] as? String, "banner")
        XCTAssertEqual(flagJSON["value"] as? String, "summer")
        XCTAssertEqual(flagJSON["defaultValue"] as? String, "none")
        XCTAssertEqual((flagJSON["metadata"] as? [String: Any])?["variationGroupId"] as? String, "vg2")
    }

    func testUnauthenticatingAVisitorThatIsNotAuthenticatedChangesNothing() {
        start()
        let statuses = Collected<String>()
        let visitor = flagship.newVisitor(visitorId: "v1", hasConsented: true)
            .withFetchFlagsStatus { statuses.append("\($0.rawValue)/\($1.rawValue)") }
            .build()

        visitor.unauthenticate()
        visitor.authenticate(visitorId: "")
        drainCallbacks()

        XCTAssertEqual(visitor.visitorId, "v1")
        XCTAssertEqual(statuses.values, ["FETCH_REQUIRED/VISITOR_CREATE"])
        XCTAssertTrue(log.messages(at: .error).contains("unauthenticate ignored: the visitor is not authenticated"), log.allText)
        XCTAssertTrue(log.messages(at: .error).contains("authenticate ignored: the visitor id is empty"), log.allText)
    }
}
