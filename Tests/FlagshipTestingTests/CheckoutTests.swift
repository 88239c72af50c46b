import Flagship
import FlagshipTesting
import XCTest

final class CheckoutTests: XCTestCase {
    func testAProVisitorGetsTheGoldButtonAndItsHitsArriveAfterAnOutage() async throws {
        // The flag values: a default, a rule on the visitor's context, one visitor's own.
        let flags = FlagshipTestData()
        flags.setValue("blue", for: "btnColor")
        flags.setValue("gold", for: "btnColor", when: { $0["plan"] == "pro" })
        flags.setValue(true, for: "freeShipping", visitorId: "alice")

        // The real SDK (an instance of its own, its SQLite store in a temporary directory), no server.
        let environment = try FlagshipTestEnvironment(flags)
        let visitor = await environment.flagship.newVisitor(visitorId: "alice", hasConsented: true)
            .withContext(context: ["plan": "pro"])
            .buildAsync()
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "red"), "gold")
        XCTAssertEqual(visitor.getFlag(key: "freeShipping").value(defaultValue: false), true)
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "checkout"))

        // An outage: the screen hit waits in the store, and goes once the network is back.
        environment.network = .unreachable
        try await visitor.sendHit(FSScreen("receipt"))
        await environment.waitUntilIdle()                // its send failed: it waits for a retry
        environment.network = .available
        try await environment.waitUntilDelivered()       // everything queued has arrived

        XCTAssertEqual(environment.activates.map(\.flagKey), ["btnColor", "freeShipping"])
        XCTAssertEqual(environment.hits.filter { !$0.isConsent }.map(\.type), [.event, .screenView])
        await environment.close()                        // the SDK closed, its directory removed
    }
}
