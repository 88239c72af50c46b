import Flagship
import FlagshipTesting
import XCTest

/// The README's example ("Testing your app without a server"), statement for statement, with
/// what it prints collected: the output the README shows is what it prints.
final class ReadmeExampleTests: XCTestCase {
    func testTheReadmeExamplePrintsWhatTheReadmeShows() async throws {
        var printed: [String] = []
        func print(_ items: Any...) { printed.append(items.map { "\($0)" }.joined(separator: " ")) }

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
        print("btnColor:", visitor.getFlag(key: "btnColor").value(defaultValue: "red") ?? "red")
        print("freeShipping:", visitor.getFlag(key: "freeShipping").value(defaultValue: false) ?? false)
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "checkout"))

        // An outage: the screen hit waits in the store, and goes once the network is back.
        environment.network = .unreachable
        try await visitor.sendHit(FSScreen("receipt"))
        await environment.waitUntilIdle()                // its send failed: it waits for a retry
        environment.network = .available

        try await environment.waitUntilDelivered()       // everything queued has arrived
        for activate in environment.activates {
            print("activate:", activate.visitorId, activate.flagKey ?? "?", activate.value?.description ?? "?", activate.variationId)
        }
        for hit in environment.hits where !hit.isConsent {
            print("hit:", hit.type, hit.eventAction ?? hit.location ?? "")
        }
        await environment.close()                        // the SDK closed, its directory removed

        XCTAssertEqual(printed, [
            "btnColor: gold",
            "freeShipping: true",
            #"activate: alice btnColor "gold" v-btnColor-c043608bcf05"#,
            "activate: alice freeShipping true v-freeShipping-5b5c98ef514d",
            "hit: EVENT checkout",
            "hit: SCREENVIEW receipt",
        ])
        XCTAssertEqual(TestVariation(flagKey: "btnColor", value: "gold").variationId, "v-btnColor-c043608bcf05")
        XCTAssertGreaterThanOrEqual(environment.failedRequestCount, 1, "the receipt's first send failed")
    }
}
