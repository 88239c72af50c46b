import Flagship
import FlagshipStore
import FlagshipTesting
import Foundation
import XCTest

/// The real SDK against test data: decisions, changes, activates, hits, outages, restarts.
final class FlagshipTestEnvironmentTests: XCTestCase {
    private var flags = FlagshipTestData()
    private var environment: FlagshipTestEnvironment?

    override func tearDown() async throws {
        await environment?.close()
        environment = nil
    }

    /// An environment closed by `tearDown`; the SDK logs nothing.
    private func start(envId: String = "flagship_testing") throws -> FlagshipTestEnvironment {
        let started = try FlagshipTestEnvironment(flags, envId: envId) { $0.withLogLevel(.NONE) }
        environment = started
        return started
    }

    private func visitor(_ id: String, context: [String: Any] = [:], in environment: FlagshipTestEnvironment) async -> FSVisitor {
        await environment.flagship.newVisitor(visitorId: id, hasConsented: true).withContext(context: context).buildAsync()
    }

    // MARK: Decisions

    func testEachVisitorGetsItsValueByVisitorIdThenContextRuleThenDefault() async throws {
        flags.setValue("blue", for: "btnColor")
        flags.setValue("gold", for: "btnColor", when: { $0["plan"] == "pro" })
        flags.setValue("green", for: "btnColor", visitorId: "alice")
        let environment = try start()

        var colors: [String] = []
        for (id, plan) in [("alice", "pro"), ("bob", "pro"), ("carol", "free")] {
            let visitor = await visitor(id, context: ["plan": plan], in: environment)
            try await visitor.fetchFlags()
            XCTAssertEqual(visitor.fetchStatus, .FETCHED)
            colors.append(visitor.getFlag(key: "btnColor").value(defaultValue: "red", visitorExposed: false) ?? "")
        }

        XCTAssertEqual(colors, ["green", "gold", "blue"])
        XCTAssertEqual(environment.decisionRequests.map(\.visitorId), ["alice", "bob", "carol"])
        XCTAssertEqual(environment.decisionRequests.map { $0.flags["btnColor"] }, ["green", "gold", "blue"])
    }

    func testTheContextRuleSeesTheContextAsSentWithTheSDKsOwnKeys() async throws {
        let seen = Locked<[[String: FSJSONValue]]>([])
        flags.setValue(true, for: "vip", when: { context in
            seen.withLock { $0.append(context) }
            return context["age"]?.intValue == 34
        })
        let environment = try start()

        let visitor = await visitor("alice", context: ["plan": "pro", "age": 34], in: environment)
        try await visitor.fetchFlags()

        XCTAssertEqual(visitor.getFlag(key: "vip").value(defaultValue: false, visitorExposed: false), true)
        let context = try XCTUnwrap(seen.withLock { $0.last })
        XCTAssertEqual(context["plan"], "pro")
        XCTAssertEqual(context["age"], 34)
        XCTAssertEqual(context["sdk_osName"], "linux")
        XCTAssertNotNil(context["fs_client"])
        XCTAssertEqual(environment.decisionRequests.last?.context, context)
        XCTAssertEqual(environment.decisionRequests.last?.hasConsented, true)
    }

    func testAFlagCarriesTheSynthesizedCampaignAndVariationAndAMissingKeyIsNotFound() async throws {
        flags.setValue(["steps": 2, "express": true], for: "checkout")
        let environment = try start()
        let visitor = await visitor("alice", in: environment)
        try await visitor.fetchFlags()

        let checkout = visitor.getFlag(key: "checkout")
        let value = try XCTUnwrap(checkout.value(defaultValue: [String: Any](), visitorExposed: false))
        XCTAssertEqual(value["steps"] as? Int, 2)
        XCTAssertEqual(value["express"] as? Bool, true)
        let expected = TestVariation(flagKey: "checkout", value: ["steps": 2, "express": true])
        let metadata = checkout.metadata()
        XCTAssertEqual(metadata.campaignId, expected.campaignId)
        XCTAssertEqual(metadata.variationGroupId, "vg-checkout")
        XCTAssertEqual(metadata.variationId, expected.variationId)
        XCTAssertEqual(metadata.campaignType, "toggle")
        XCTAssertEqual(metadata.slug, "checkout")

        let missing = visitor.getFlag(key: "nothing")
        XCTAssertFalse(missing.exists())
        XCTAssertEqual(missing.details(defaultValue: 7).errorCode, .FLAG_NOT_FOUND)
    }

    func testEveryKindOfValueReachesTheVisitorAsTheSDKReadsIt() async throws {
        flags.setValue(true, for: "bool")
        flags.setValue(42, for: "int")
        flags.setValue(9.99, for: "double")
        flags.setValue("text", for: "string")
        flags.setValue([1, 2, 3], for: "list")
        flags.setValue(nil, for: "nothing")
        let environment = try start()
        let visitor = await visitor("alice", in: environment)
        try await visitor.fetchFlags()

        XCTAssertEqual(visitor.getFlag(key: "bool").value(defaultValue: false, visitorExposed: false), true)
        XCTAssertEqual(visitor.getFlag(key: "int").value(defaultValue: 0, visitorExposed: false), 42)
        XCTAssertEqual(visitor.getFlag(key: "double").value(defaultValue: 0.0, visitorExposed: false), 9.99)
        XCTAssertEqual(visitor.getFlag(key: "string").value(defaultValue: "", visitorExposed: false), "text")
        XCTAssertEqual(visitor.getFlag(key: "list").value(defaultValue: [Int](), visitorExposed: false), [1, 2, 3])
        XCTAssertTrue(visitor.getFlag(key: "nothing").exists(), "a null flag exists")
        XCTAssertEqual(visitor.getFlag(key: "nothing").value(defaultValue: "default", visitorExposed: false), "default")
    }

    func testAValueChangedWhileTheSDKRunsIsSeenByTheNextFetch() async throws {
        flags.setValue("blue", for: "btnColor")
        let environment = try start()
        let visitor = await visitor("alice", in: environment)
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "", visitorExposed: false), "blue")

        flags.setValue("green", for: "btnColor", visitorId: "alice")
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "", visitorExposed: false), "blue",
                       "a flag read never goes to the network")
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "", visitorExposed: false), "green")

        flags.removeFlag("btnColor")
        try await visitor.fetchFlags()
        XCTAssertFalse(visitor.getFlag(key: "btnColor").exists())
    }

    func testTypedKeysReadTheirValueAndAValueOfAnotherTypeIsATypeMismatch() async throws {
        let checkout = FlagKey("checkout", default: false)
        let color = FlagKey("btnColor", default: "blue")
        flags.setValue(true, for: checkout)
        flags.setValue(3, for: color.name)
        let environment = try start()
        let visitor = await visitor("alice", in: environment)
        try await visitor.fetchFlags()

        XCTAssertTrue(visitor.value(of: checkout, visitorExposed: false))
        let details = visitor.details(of: color, visitorExposed: false)
        XCTAssertEqual(details.value, "blue")
        XCTAssertEqual(details.errorCode, .TYPE_MISMATCH)
    }

    func testPanicGivesEveryFlagItsDefaultUntilAFetchAfterItEnds() async throws {
        flags.setValue("green", for: "btnColor")
        flags.panic = true
        let environment = try start()
        let visitor = await visitor("alice", in: environment)
        try await visitor.fetchFlags()

        XCTAssertEqual(environment.flagship.getStatus(), .SDK_PANIC)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "red"), "red")
        XCTAssertEqual(environment.decisionRequests.last?.panic, true)

        flags.panic = false
        try await visitor.fetchFlags()
        XCTAssertEqual(environment.flagship.getStatus(), .SDK_INITIALIZED)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "red"), "green")
        try await environment.waitUntilDelivered()
        XCTAssertEqual(environment.activates.map(\.flagKey), ["btnColor"], "no exposure was reported while in panic")
    }

    // MARK: What the SDK sent

    func testAFlagReadWithExposureSendsOneActivateNamingTheFlagAndValue() async throws {
        flags.setValue("blue", for: "btnColor")
        flags.setValue("green", for: "btnColor", visitorId: "alice")
        let environment = try start()
        let alice = await visitor("alice", in: environment)
        try await alice.fetchFlags()

        _ = alice.getFlag(key: "btnColor").value(defaultValue: "red")
        _ = alice.getFlag(key: "btnColor").value(defaultValue: "red")   // once per variation
        _ = alice.getFlag(key: "missing").value(defaultValue: "red")     // no activate for a missing flag
        try await environment.waitUntilDelivered()

        let green = TestVariation(flagKey: "btnColor", value: "green")
        XCTAssertEqual(environment.activates.count, 1)
        let activate = try XCTUnwrap(environment.activates.first)
        XCTAssertEqual(activate.visitorId, "alice")
        XCTAssertNil(activate.anonymousId)
        XCTAssertEqual(activate.variationGroupId, green.variationGroupId)
        XCTAssertEqual(activate.variationId, green.variationId)
        XCTAssertEqual(activate.variation, green)
        XCTAssertEqual(activate.flagKey, "btnColor")
        XCTAssertEqual(activate.value, "green")
        XCTAssertEqual(activate.campaignId, "c-btnColor")
        XCTAssertEqual(activate.envId, "flagship_testing")
        XCTAssertTrue(activate.json.contains(#""vaid":"\#(green.variationId)""#), activate.json)
    }

    func testHitsAreReadBackInOrderWithTheirFieldsConsentHitFirst() async throws {
        let environment = try start()
        let visitor = await visitor("alice", in: environment)

        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "add_to_cart")
        event.label = "cta"
        event.eventValue = 3
        try await visitor.sendHit(event)
        try await visitor.sendHit(FSScreen("home"))
        let transaction = FSTransaction(transactionId: "T-1", affiliation: "shop")
        transaction.revenue = 19.99
        transaction.currency = "EUR"
        try await visitor.sendHit(transaction)
        let item = FSItem(transactionId: "T-1", name: "socks", code: "SKU-9")
        item.quantity = 2
        try await visitor.sendHit(item)
        try await environment.waitUntilDelivered()

        let hits = environment.hits
        XCTAssertEqual(hits.map(\.type), [.event, .event, .screenView, .transaction, .item])
        XCTAssertTrue(hits[0].isConsent)
        XCTAssertEqual(hits[0].eventLabel, "swift-linux:true")
        XCTAssertEqual(Set(hits.map(\.visitorId)), ["alice"])
        XCTAssertEqual(Set(hits.map(\.envId)), ["flagship_testing"])
        XCTAssertFalse(hits[1].isConsent)
        XCTAssertEqual(hits[1].eventCategory, "Action Tracking")
        XCTAssertEqual(hits[1].eventAction, "add_to_cart")
        XCTAssertEqual(hits[1].eventLabel, "cta")
        XCTAssertEqual(hits[1].eventValue, 3)
        XCTAssertNotNil(hits[1].queueTime)
        XCTAssertEqual(hits[2].location, "home")
        XCTAssertEqual(hits[3].transactionId, "T-1")
        XCTAssertEqual(hits[3].affiliation, "shop")
        XCTAssertEqual(hits[3].revenue, 19.99)
        XCTAssertEqual(hits[3].currency, "EUR")
        XCTAssertEqual(hits[4].itemName, "socks")
        XCTAssertEqual(hits[4].itemCode, "SKU-9")
        XCTAssertEqual(hits[4].itemQuantity, 2)
        XCTAssertEqual(hits[4]["tid"], "T-1")
        XCTAssertTrue(hits[1].json.contains(#""ea":"add_to_cart""#), hits[1].json)
        XCTAssertNil(hits[1].customerId)
    }

    func testAnAuthenticatedVisitorGetsTheValueOfItsNewIdAndItsHitsCarryBothIds() async throws {
        flags.setValue("member", for: "greeting", visitorId: "user-42")
        flags.setValue("guest", for: "greeting")
        let environment = try start()
        let visitor = await visitor("anon-1", in: environment)
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "greeting").value(defaultValue: "", visitorExposed: false), "guest")

        visitor.authenticate(visitorId: "user-42")
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "greeting").value(defaultValue: ""), "member")
        try await visitor.sendHit(FSScreen("account"))
        try await environment.waitUntilDelivered()

        XCTAssertEqual(environment.decisionRequests.last?.visitorId, "user-42")
        XCTAssertEqual(environment.decisionRequests.last?.anonymousId, "anon-1")
        let screen = try XCTUnwrap(environment.hits.last)
        XCTAssertEqual(screen.visitorId, "anon-1")
        XCTAssertEqual(screen.customerId, "user-42")
        let activate = try XCTUnwrap(environment.activates.last)
        XCTAssertEqual(activate.visitorId, "user-42")
        XCTAssertEqual(activate.anonymousId, "anon-1")
        XCTAssertEqual(activate.value, "member")
    }

    func testClearRecordsForgetsWhatWasSentButActivatesStillNameTheirFlag() async throws {
        flags.setValue(true, for: "checkout")
        let environment = try start()
        let visitor = await visitor("alice", in: environment)
        try await visitor.fetchFlags()
        try await environment.waitUntilDelivered()
        XCTAssertEqual(environment.hits.count, 1)   // the consent hit

        environment.clearRecords()
        XCTAssertEqual(environment.hits, [])
        XCTAssertEqual(environment.decisionRequests, [])
        _ = visitor.getFlag(key: "checkout").value(defaultValue: false)
        try await environment.waitUntilDelivered()
        XCTAssertEqual(environment.activates.map(\.flagKey), ["checkout"])
    }

    // MARK: Outages and restarts

    func testDuringAnOutageTheVisitorKeepsItsFlagsAndHitsWaitInTheStoreUntilTheNetworkReturns() async throws {
        flags.setValue("blue", for: "btnColor")
        let environment = try start()
        let visitor = await visitor("alice", in: environment)
        try await visitor.fetchFlags()
        try await environment.waitUntilDelivered()
        environment.clearRecords()

        environment.network = .unreachable
        flags.setValue("green", for: "btnColor")
        do {
            try await visitor.fetchFlags()
            XCTFail("a fetch during the outage succeeded")
        } catch {}
        XCTAssertEqual(visitor.fetchStatus, .FETCH_REQUIRED)
        XCTAssertEqual(visitor.requiredFetchReason, .FETCH_ERROR)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "red"), "blue", "the flags of the last fetch")
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "offline_click"))

        do {
            try await environment.waitUntilDelivered()
            XCTFail("hits were delivered during the outage")
        } catch let error as FlagshipTestingError {
            XCTAssertEqual(error, .undelivered(waiting: 2, network: .unreachable), "the activate and the event")
            XCTAssertEqual(error.code, .undelivered)
        }
        XCTAssertGreaterThanOrEqual(environment.failedRequestCount, 2, "the fetch and at least one send")
        XCTAssertEqual(environment.hits, [])
        XCTAssertEqual(environment.activates, [])
        XCTAssertEqual(environment.decisionRequests, [])

        environment.network = .available
        try await environment.waitUntilDelivered()
        XCTAssertEqual(environment.hits.map(\.eventAction), ["offline_click"])
        XCTAssertEqual(environment.activates.map(\.value), ["blue"])
    }

    func testAnAnswerWithAServerErrorIsRetriedAndAClientErrorDropsTheHits() async throws {
        let environment = try start()
        let visitor = await visitor("alice", in: environment)
        try await environment.waitUntilDelivered()
        environment.clearRecords()

        environment.network = .failing(status: 503)
        try await visitor.sendHit(FSScreen("retried"))
        await environment.waitUntilIdle()
        do {
            try await environment.waitUntilDelivered()
            XCTFail("delivered while every answer is 503")
        } catch let error as FlagshipTestingError {
            XCTAssertEqual(error, .undelivered(waiting: 1, network: .failing(status: 503)))
        }
        XCTAssertGreaterThanOrEqual(environment.failedRequestCount, 1)
        environment.network = .available
        try await environment.waitUntilDelivered()
        XCTAssertEqual(environment.hits.map(\.location), ["retried"])
        environment.clearRecords()

        environment.network = .failing(status: 400)
        try await visitor.sendHit(FSScreen("refused"))
        try await environment.waitUntilDelivered()   // nothing waits: the 400 dropped it
        XCTAssertEqual(environment.failedRequestCount, 1, "sent once, not retried")
        environment.network = .available
        try await environment.waitUntilDelivered()
        XCTAssertEqual(environment.hits, [])
    }

    func testARestartReplaysTheHitsLeftInTheStoreAndReadsTheVisitorBackFromIt() async throws {
        flags.setValue("blue", for: "btnColor")
        let environment = try start()
        let visitor = await visitor("alice", in: environment)
        try await visitor.fetchFlags()
        try await environment.waitUntilDelivered()
        XCTAssertTrue(FileManager.default.fileExists(atPath: environment.storeDirectory
            .appendingPathComponent("flagship-flagship_testing.sqlite").path), "a real SQLite store")
        environment.clearRecords()

        environment.network = .unreachable
        try await visitor.sendHit(FSEvent(eventCategory: .User_Engagement, eventAction: "before_restart"))
        await environment.waitUntilIdle()
        try await environment.restart()   // the close cannot send it either: it stays in SQLite
        XCTAssertEqual(environment.hits, [])

        environment.network = .available
        try await environment.waitUntilDelivered()
        XCTAssertEqual(environment.hits.map(\.eventAction), ["before_restart"])

        let again = await environment.flagship.newVisitor(visitorId: "alice", hasConsented: true).buildAsync()
        XCTAssertEqual(again.requiredFetchReason, .FETCHED_FROM_CACHE)
        XCTAssertEqual(again.getFlag(key: "btnColor").value(defaultValue: "red", visitorExposed: false), "blue")
    }

    // MARK: Instances and lifecycle

    func testTwoEnvironmentsRunSideBySideWithoutMeeting() async throws {
        let first = FlagshipTestData()
        first.setValue("one", for: "which")
        let second = FlagshipTestData()
        second.setValue("two", for: "which")

        async let one = Self.readAndSend(first, visitorId: "v1")
        async let two = Self.readAndSend(second, visitorId: "v2")
        let (a, b) = try await (one, two)

        XCTAssertEqual(a.value, "one")
        XCTAssertEqual(b.value, "two")
        XCTAssertEqual(a.hitVisitors, ["v1"])
        XCTAssertEqual(b.hitVisitors, ["v2"])
        XCTAssertNotEqual(a.directory, b.directory)
        XCTAssertFalse(FileManager.default.fileExists(atPath: a.directory.path), "run removed the store's directory")
        XCTAssertFalse(FileManager.default.fileExists(atPath: b.directory.path))
    }

    private struct ReadAndSent: Sendable {
        let value: String
        let hitVisitors: Set<String>
        let directory: URL
    }

    private static func readAndSend(_ flags: FlagshipTestData, visitorId: String) async throws -> ReadAndSent {
        try await FlagshipTestEnvironment.run(flags, configure: { $0.withLogLevel(.NONE) }) { environment in
            let visitor = await environment.flagship.newVisitor(visitorId: visitorId, hasConsented: true).buildAsync()
            try await visitor.fetchFlags()
            let value = visitor.getFlag(key: "which").value(defaultValue: "") ?? ""
            try await visitor.sendHit(FSScreen("home"))
            try await environment.waitUntilDelivered()
            return ReadAndSent(value: value, hitVisitors: Set(environment.hits.map(\.visitorId) + environment.activates.map(\.visitorId)),
                               directory: environment.storeDirectory)
        }
    }

    func testRunClosesTheEnvironmentWhenTheBodyThrows() async throws {
        struct Expected: Error {}
        let directory = Locked<URL?>(nil)
        do {
            try await FlagshipTestEnvironment.run(flags, configure: { $0.withLogLevel(.NONE) }) { environment in
                directory.withLock { $0 = environment.storeDirectory }
                XCTAssertEqual(environment.flagship.getStatus(), .SDK_INITIALIZED)
                throw Expected()
            }
            XCTFail("run did not rethrow")
        } catch is Expected {}
        let removed = try XCTUnwrap(directory.withLock { $0 })
        XCTAssertFalse(FileManager.default.fileExists(atPath: removed.path))
    }

    func testTheSharedInstanceCanBeTheOneStartedAndCloseStopsItOnce() async throws {
        flags.setValue("shared", for: "which")
        let environment = try FlagshipTestEnvironment(flags, usingSharedInstance: true) { $0.withLogLevel(.NONE) }
        XCTAssertTrue(environment.flagship === Flagship.sharedInstance)
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "alice", hasConsented: true).buildAsync()
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "which").value(defaultValue: ""), "shared")
        try await environment.waitUntilDelivered()
        XCTAssertEqual(environment.activates.map(\.value), ["shared"])

        await environment.close()
        await environment.close()
        XCTAssertEqual(Flagship.sharedInstance.getStatus(), .SDK_NOT_INITIALIZED)
        XCTAssertFalse(FileManager.default.fileExists(atPath: environment.storeDirectory.path))
        do {
            try await environment.restart()
            XCTFail("a closed environment restarted")
        } catch let error as FlagshipTestingError {
            XCTAssertEqual(error, .closed)
        }
    }

    func testAnEnvIdTheSDKWouldRefuseIsRefusedAtOnce() {
        XCTAssertThrowsError(try FlagshipTestEnvironment(flags, envId: "not valid")) { error in
            guard let error = error as? FlagshipTestingError, error.code == .invalidEnvId, let reason = error.reason else {
                return XCTFail("\(error)")
            }
            XCTAssertTrue(reason.contains("env id"), reason)
        }
    }

    /// The error is a struct with a code to switch on (a `default` for codes added later), its
    /// details as properties, and the same failure message as when it was an enum.
    func testTheTestingErrorHasACodeToSwitchOnItsDetailsAndItsMessage() {
        func kind(_ error: FlagshipTestingError) -> String {
            switch error.code {
            case .invalidEnvId: "invalidEnvId"
            case .undelivered: "undelivered"
            case .timedOut: "timedOut"
            case .closed: "closed"
            default: "unknown"
            }
        }
        let invalid = FlagshipTestingError.invalidEnvId("the env id holds a space")
        let undelivered = FlagshipTestingError.undelivered(waiting: 2, network: .failing(status: 503))
        let timedOut = FlagshipTestingError.timedOut(waiting: 3)
        let closed = FlagshipTestingError.closed

        XCTAssertEqual([invalid, undelivered, timedOut, closed].map(kind), ["invalidEnvId", "undelivered", "timedOut", "closed"])
        XCTAssertEqual(invalid.description, "the env id is refused: the env id holds a space")
        XCTAssertEqual(undelivered.description, "2 hit(s) wait to be sent, and the network is failing(status: 503): none can be delivered")
        XCTAssertEqual(FlagshipTestingError.undelivered(waiting: 1, network: .unreachable).description,
                       "1 hit(s) wait to be sent, and the network is unreachable: none can be delivered")
        XCTAssertEqual(timedOut.description, "3 hit(s) still wait to be sent at the timeout")
        XCTAssertEqual(closed.description, "the test environment is closed")

        XCTAssertEqual(invalid.reason, "the env id holds a space")
        XCTAssertEqual(undelivered.waiting, 2)
        XCTAssertEqual(undelivered.network, .failing(status: 503))
        XCTAssertEqual(timedOut.waiting, 3)
        XCTAssertNil(timedOut.network)
        XCTAssertNil(closed.waiting)

        XCTAssertTrue(closed.code == .closed)
        XCTAssertEqual(timedOut.code, FlagshipTestingError.timedOut(waiting: 9).code)
        XCTAssertNotEqual(timedOut.code, undelivered.code)
        XCTAssertEqual(Set([invalid, undelivered, timedOut, closed].map(\.code)).count, 4)
        XCTAssertEqual("\(FlagshipTestingError.Code.invalidEnvId)", "invalidEnvId")
        XCTAssertNotEqual(timedOut, .timedOut(waiting: 9))
    }
}
