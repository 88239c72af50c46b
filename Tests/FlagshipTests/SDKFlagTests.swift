import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

final class SDKFlagTests: SDKTestCase {
    private var exposures: Collected<String>!

    private func fetchedVisitor(_ id: String = "v1") async throws -> FSVisitor {
        exposures = Collected<String>()
        let collected = exposures!
        start(configBuilder().withOnVisitorExposed { visitor, flag in
            collected.append("\(visitor.id)|\(flag.key)|\(flag.metadata.variationId)")
        })
        let visitor = await flagship.newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()
        return visitor
    }

    // MARK: Values

    func testEveryJSONKindReadsBack() async throws {
        let visitor = try await fetchedVisitor()

        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue", visitorExposed: false), "red", "the later campaign wins")
        XCTAssertEqual(visitor.getFlag(key: "price").value(defaultValue: 0.0, visitorExposed: false), 9.99)
        XCTAssertEqual(visitor.getFlag(key: "count").value(defaultValue: 0, visitorExposed: false), 3)
        XCTAssertEqual(visitor.getFlag(key: "enabled").value(defaultValue: false, visitorExposed: false), true)
        let config = try XCTUnwrap(visitor.getFlag(key: "config").value(defaultValue: [String: Any](), visitorExposed: false))
        XCTAssertEqual(config["size"] as? Int, 2)
        XCTAssertEqual(config["tags"] as? [String], ["a", "b"])
        XCTAssertEqual(visitor.getFlag(key: "list").value(defaultValue: [Int](), visitorExposed: false), [1, 2, 3])
        XCTAssertEqual(visitor.getFlag(key: "banner").value(defaultValue: nil as String?, visitorExposed: false), "summer", "a nil default gives the raw value")
    }

    func testIntegersAndDoublesInterchangeWhenTheyFit() async throws {
        let visitor = try await fetchedVisitor()

        XCTAssertEqual(visitor.getFlag(key: "count").value(defaultValue: 0.5, visitorExposed: false), 3.0)
        XCTAssertEqual(visitor.getFlag(key: "whole").value(defaultValue: 0, visitorExposed: false), 4)
        XCTAssertEqual(visitor.getFlag(key: "price").value(defaultValue: 7, visitorExposed: false), 7, "9.99 does not fit an Int")
    }

    func testANullFlagExistsAndGivesTheDefault() async throws {
        let visitor = try await fetchedVisitor()
        let flag = visitor.getFlag(key: "nothing")

        XCTAssertTrue(flag.exists())
        XCTAssertEqual(flag.value(defaultValue: "fallback", visitorExposed: false), "fallback")
        XCTAssertEqual(flag.metadata().campaignId, "c1")
    }

    func testAnUnknownFlagGivesItsDefaultAndReportsNotFound() async throws {
        let visitor = try await fetchedVisitor()
        let flag = visitor.getFlag(key: "missing")

        XCTAssertFalse(flag.exists())
        XCTAssertEqual(flag.value(defaultValue: 5), 5)
        XCTAssertEqual(flag.status, .NOT_FOUND)
        XCTAssertEqual(flag.metadata(), .empty)
        flag.visitorExposed()
        await flagship.close()
        XCTAssertEqual(server.activates, [])
    }

    // MARK: Exposure

    func testReadingAFlagSendsOneActivatePerVariationThenCallsOnVisitorExposed() async throws {
        let visitor = try await fetchedVisitor()

        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue"), "red")
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        _ = visitor.getFlag(key: "banner").value(defaultValue: "")  // same variation group and variation
        _ = visitor.getFlag(key: "price").value(defaultValue: 0.0)   // another one
        await flagship.close()

        let activates = server.activates
        XCTAssertEqual(activates.count, 2)
        XCTAssertEqual(Set(activates.compactMap { $0["caid"]?.stringValue }), ["vg1", "vg2"])
        for activate in activates {
            XCTAssertEqual(activate["vid"], "v1")
            XCTAssertEqual(activate["aid"] ?? .null, .null)
            XCTAssertNotNil(activate["qt"]?.intValue)
        }
        XCTAssertEqual(Set(exposures.values), ["v1|btnColor|var2", "v1|price|var1"])
    }

    func testATypeMismatchGivesTheDefaultAndSendsNoActivate() async throws {
        let visitor = try await fetchedVisitor()

        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: 0), 0)
        XCTAssertEqual(visitor.getFlag(key: "enabled").value(defaultValue: "no"), "no")
        await flagship.close()

        XCTAssertEqual(server.activates, [])
        XCTAssertTrue(log.messages(at: .warning).contains("Flag 'btnColor' holds a string, not Int: the default value is returned and no exposure is sent (said once for this flag)"), log.allText)
    }

    func testReadingWithoutExposureThenExposingSendsTheActivateOnce() async throws {
        let visitor = try await fetchedVisitor()
        let flag = visitor.getFlag(key: "btnColor")

        _ = flag.value(defaultValue: "blue", visitorExposed: false)
        flag.visitorExposed()
        flag.visitorExposed()
        await flagship.close()

        XCTAssertEqual(server.activates.map { $0["vaid"] }, ["var2"])
    }

    func testAnExposedVariationIsNotExposedAgainAfterANewFetchButIsForANewVisitorId() async throws {
        let visitor = try await fetchedVisitor("anon-1")
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")  // same variation, new flags
        visitor.authenticate(visitorId: "user-42")
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")  // a new id: exposed again
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        visitor.unauthenticate()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")  // anon-1 saw it already
        await flagship.close()

        XCTAssertEqual(server.activates.map { $0["vid"]?.stringValue ?? "" }, ["anon-1", "user-42"])
    }

    func testAReadWithoutConsentExposesNothingAndConsentLaterExposesOnce() async throws {
        let visitor = try await fetchedVisitor()
        visitor.setConsent(hasConsented: false)
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        visitor.setConsent(hasConsented: true)
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        await flagship.close()

        XCTAssertEqual(server.activates.map { $0["vaid"] }, ["var2"])
    }

    func testTheCollectionListsExposesAndDescribesEveryFlag() async throws {
        let visitor = try await fetchedVisitor()
        let flags = visitor.getFlags()

        XCTAssertEqual(flags.keys(), ["banner", "btnColor", "config", "count", "enabled", "list", "nothing", "price", "whole"])
        XCTAssertEqual(flags.count, 9)
        XCTAssertFalse(flags.isEmpty)
        XCTAssertEqual(flags.filter { _, flag in flag.metadata().variationName == "Variation 2" }.keys(), ["banner", "btnColor"])
        XCTAssertEqual(flags["btnColor"].metadata().campaignId, "c2")
        XCTAssertFalse(flags["missing"].exists())
        XCTAssertEqual(flags.metadatas().count, 9)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(flags.toJson().utf8)) as? [[String: Any]])
        XCTAssertEqual(json.first?["key"] as? String, "banner")
        XCTAssertEqual(json.first?["variationGroupId"] as? String, "vg2")

        flags.exposeAll()
        await flagship.close()
        XCTAssertEqual(Set(server.activates.compactMap { $0["caid"]?.stringValue }), ["vg1", "vg2"])
    }

    // MARK: What is sent

    func testTheDecisionRequestCarriesTheContextAndConsent() async throws {
        start()
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true).withContext(context: ["plan": "pro", "age": 32]).buildAsync()
        try await visitor.fetchFlags()

        let body = try XCTUnwrap(server.received(.campaigns).last?.json)
        XCTAssertEqual(body["visitorId"], "v1")
        XCTAssertEqual(body["anonymousId"], .null)
        XCTAssertEqual(body["trigger_hit"], false)
        XCTAssertEqual(body["visitor_consent"], true)
        XCTAssertEqual(body["context"]?["plan"], "pro")
        XCTAssertEqual(body["context"]?["age"], 32)
        XCTAssertEqual(body["context"]?["sdk_osName"], "linux")
        XCTAssertEqual(body["context"]?["fs_client"], .string(SDKInfo.clientName))
        XCTAssertEqual(body["context"]?["fs_version"], .string(SDKInfo.version))
    }

    func testExperienceContinuityIdentifiesTheVisitorInDecisionsActivatesAndHits() async throws {
        let visitor = try await fetchedVisitor("anon-1")
        visitor.authenticate(visitorId: "user-42")
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        try await visitor.sendHit(FSScreen("home"))

        let body = try XCTUnwrap(server.received(.campaigns).last?.json)
        XCTAssertEqual(body["visitorId"], "user-42")
        XCTAssertEqual(body["anonymousId"], "anon-1")
        visitor.unauthenticate()
        XCTAssertEqual(visitor.visitorId, "anon-1")
        XCTAssertNil(visitor.anonymousId)
        try await visitor.fetchFlags()
        XCTAssertEqual(server.received(.campaigns).last?.json?["anonymousId"], .null)
        await flagship.close()

        let activate = try XCTUnwrap(server.activates.first)
        XCTAssertEqual(activate["vid"], "user-42")
        XCTAssertEqual(activate["aid"], "anon-1")
        let screen = try XCTUnwrap(server.hits.first { $0["t"] == "SCREENVIEW" })
        XCTAssertEqual(screen["vid"], "anon-1")
        XCTAssertEqual(screen["cuid"], "user-42")
        XCTAssertEqual(screen["dl"], "home")
        XCTAssertEqual(screen["cid"], .string(Self.envId))
        XCTAssertEqual(screen["ds"], "APP")
    }

    // MARK: Bad input

    func testAContextReadByJSONSerializationKeepsBooleansApartFromNumbers() throws {
        start()
        let parsed = try XCTUnwrap(try JSONSerialization.jsonObject(
            with: Data(#"{"isVip": true, "beta": false, "age": 32, "ratio": 2.5, "plan": "pro"}"#.utf8)) as? [String: Any])
        let visitor = flagship.newVisitor(visitorId: "v1", hasConsented: true).withContext(context: parsed).build()
        visitor.updateContext(try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(#"{"late": true}"#.utf8)) as? [String: Any]))

        let state = visitor.contextValues
        XCTAssertEqual(state["isVip"], .bool(true))
        XCTAssertEqual(state["beta"], .bool(false))
        XCTAssertEqual(state["late"], .bool(true))
        XCTAssertEqual(state["age"], .int(32))
        XCTAssertEqual(state["ratio"], .double(2.5))
        XCTAssertEqual(state["plan"], .string("pro"))
    }

    func testContextValuesThatAreNotPrimitiveAreRefusedNamingTheKey() async throws {
        start()
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true).withContext(context: ["ok": 1, "list": [1, 2]]).buildAsync()

        visitor.updateContext("when", Date())
        visitor.updateContext(["nested": ["a": 1], "plan": "pro"])
        visitor.updateContext(.APP_VERSION_CODE, "forty")

        let context = visitor.getContext()
        XCTAssertEqual(context["ok"] as? Int, 1)
        XCTAssertEqual(context["plan"] as? String, "pro")
        XCTAssertNil(context["list"])
        XCTAssertNil(context["when"])
        XCTAssertNil(context["nested"])
        XCTAssertNil(context["sdk_versionCode"])
        let errors = log.messages(at: .error)
        XCTAssertTrue(errors.contains("Context value not set: context key 'list' refused: a Array<Int> is not a String, Bool, Int or Double"), errors.description)
        XCTAssertTrue(errors.contains { $0.hasPrefix("Context unchanged: context key 'when' refused") }, errors.description)
        XCTAssertTrue(errors.contains { $0.hasPrefix("Context value not set: context key 'nested' refused") }, errors.description)
        XCTAssertTrue(errors.contains("Context unchanged: context key 'sdk_versionCode' refused: it takes an Int, not a String"), errors.description)
    }

    func testAnInvalidHitIsRefusedNamingTheFieldAndNeverSent() async throws {
        start()
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true).buildAsync()

        do {
            try await visitor.sendHit(FSPage("not a url"))
            XCTFail("the hit should be refused")
        } catch let error as FlagshipError {
            guard let reason = error.hitValidation else { return XCTFail("\(error)") }
            guard reason.code == .invalidValue, reason.hitType == "PAGEVIEW", reason.field == "dl" else { return XCTFail("\(reason)") }
        }
        // The logging form, as code that cannot await calls it.
        let sendAndForget = { visitor.sendHit(FSTransaction(transactionId: "", affiliation: "basket")) }
        sendAndForget()
        await flagship.close()

        XCTAssertEqual(server.hits.map { $0["t"] }, ["EVENT"], "only the consent hit")
        XCTAssertTrue(log.messages(at: .error).contains { $0.hasPrefix("Hit not sent: TRANSACTION hit refused: required field tid") }, log.allText)
    }
}
