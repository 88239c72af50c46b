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
        let visitor = flagship.newVisitor(visitorId: "v1", hasConsented: true).withContext(context: ["plan": "pro"]).build()

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
        let visitor = flagship.newVisitor(visitorId: "v1", hasConsented: true).build()
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
        let visitor = flagship.newVisitor(visitorId: "v1", hasConsented: true).build()
        try await visitor.fetchFlags()

        let request = try XCTUnwrap(server.received(.campaigns).last)
        XCTAssertEqual(request.headers["x-api-key"], Self.apiKey)
        XCTAssertEqual(request.headers["x-sdk-client"], SDKInfo.clientName)
        XCTAssertEqual(request.headers["x-sdk-version"], SDKInfo.version)
        XCTAssertEqual(request.request.queryValues("exposeAllKeys"), ["true"])
    }
}
