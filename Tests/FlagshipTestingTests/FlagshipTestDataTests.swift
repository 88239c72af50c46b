import Flagship
import FlagshipTesting
import XCTest

/// The test data alone: which value a visitor gets, and the ids its variation has.
final class FlagshipTestDataTests: XCTestCase {
    func testAVisitorIdValueWinsOverAMatchingContextRuleWhichWinsOverTheDefault() {
        let flags = FlagshipTestData()
        flags.setValue("blue", for: "btnColor")
        flags.setValue("gold", for: "btnColor", when: { $0["plan"] == "pro" })
        flags.setValue("green", for: "btnColor", visitorId: "alice")

        XCTAssertEqual(flags.value(for: "btnColor", visitorId: "alice", context: ["plan": "pro"]), "green")
        XCTAssertEqual(flags.value(for: "btnColor", visitorId: "bob", context: ["plan": "pro"]), "gold")
        XCTAssertEqual(flags.value(for: "btnColor", visitorId: "bob", context: ["plan": "free"]), "blue")
        XCTAssertEqual(flags.value(for: "btnColor", visitorId: "carol"), "blue")
        XCTAssertNil(flags.value(for: "missing", visitorId: "alice"))
    }

    func testTheFirstMatchingContextRuleWinsInTheOrderTheyWereSet() {
        let flags = FlagshipTestData()
        flags.setValue(10, for: "discount", when: { ($0["age"]?.doubleValue ?? 0) >= 18 })
        flags.setValue(20, for: "discount", when: { ($0["age"]?.doubleValue ?? 0) >= 65 })

        XCTAssertEqual(flags.value(for: "discount", visitorId: "v", context: ["age": 70]), 10)
        XCTAssertEqual(flags.value(for: "discount", visitorId: "v", context: ["age": 30]), 10)
        XCTAssertNil(flags.value(for: "discount", visitorId: "v", context: ["age": 12]), "no default: no value")
    }

    func testSettingAVisitorValueAgainReplacesItAndRemovingItFallsBackToTheRules() {
        let flags = FlagshipTestData()
        flags.setValue(false, for: "checkout")
        flags.setValue(true, for: "checkout", visitorId: "alice")
        flags.setValue(nil, for: "checkout", visitorId: "alice")
        XCTAssertEqual(flags.value(for: "checkout", visitorId: "alice"), .null)

        flags.removeValue(for: "checkout", visitorId: "alice")
        XCTAssertEqual(flags.value(for: "checkout", visitorId: "alice"), false)
    }

    func testRemovingEachPartOfAFlagLeavesTheOthersAndRemovingTheLastDropsTheKey() {
        let flags = FlagshipTestData()
        flags.setValue("a", for: "k")
        flags.setValue("b", for: "k", when: { _ in true })
        flags.setValue("c", for: "other")

        flags.removeDefault(for: "k")
        XCTAssertEqual(flags.value(for: "k", visitorId: "v"), "b")
        XCTAssertEqual(flags.flagKeys, ["k", "other"])

        flags.removeContextRules(for: "k")
        XCTAssertNil(flags.value(for: "k", visitorId: "v"))
        XCTAssertEqual(flags.flagKeys, ["other"], "a key with nothing left is no key")

        flags.setValue("d", for: "k")
        flags.removeFlag("k")
        XCTAssertEqual(flags.flagKeys, ["other"])

        flags.panic = true
        flags.removeAll()
        XCTAssertEqual(flags.flagKeys, [])
        XCTAssertFalse(flags.panic)
    }

    func testTypedKeysTakeValuesOfTheirType() {
        let flags = FlagshipTestData()
        let checkout = FlagKey("checkout", default: false)
        let tags = FlagKey("tags", default: [String]())
        let limits = FlagKey("limits", default: ["cart": 10])
        flags.setValue(true, for: checkout)
        flags.setValue(["new", "sale"], for: tags, visitorId: "alice")
        flags.setValue(["cart": 3], for: limits, when: { $0["vip"] == true })

        XCTAssertEqual(flags.value(for: "checkout", visitorId: "bob"), .bool(true))
        XCTAssertEqual(flags.value(for: "tags", visitorId: "alice"), .array([.string("new"), .string("sale")]))
        XCTAssertEqual(flags.value(for: "limits", visitorId: "bob", context: ["vip": true]), .object(["cart": .int(3)]))
        XCTAssertNil(flags.value(for: "limits", visitorId: "bob", context: ["vip": false]))
    }

    func testValuesReadAsJSONWithIntegersApartFromDoubles() {
        let value: FSJSONValue = ["steps": 2, "express": true, "fee": 1.5, "methods": ["card"], "promo": nil]
        XCTAssertEqual(value.description, #"{"express":true,"fee":1.5,"methods":["card"],"promo":null,"steps":2}"#)
        XCTAssertEqual(value["steps"]?.intValue, 2)
        XCTAssertEqual(value["steps"]?.doubleValue, 2.0)
        XCTAssertNil(value["fee"]?.intValue)
        XCTAssertEqual(value["promo"]?.isNull, true)
        XCTAssertNotEqual(FSJSONValue.int(3), FSJSONValue.double(3))
    }

    func testVariationIdsAreDerivedFromTheKeyAndTheValueAlone() {
        let green = TestVariation(flagKey: "btnColor", value: "green")
        XCTAssertEqual(green.campaignId, "c-btnColor")
        XCTAssertEqual(green.variationGroupId, "vg-btnColor")
        // FNV-1a of `"green"`, the value's JSON text: the same in every run and on every machine.
        XCTAssertEqual(green.variationId, "v-btnColor-f4d62455d78e")
        XCTAssertEqual(green.variationName, #""green""#)
        XCTAssertEqual(TestVariation(flagKey: "checkout", value: ["steps": 2, "express": true]).variationId,
                       "v-checkout-5c9d4e6c3f06")
        XCTAssertEqual(TestVariation(flagKey: "n", value: 3).variationId, "v-n-af63ae4c8601")
        XCTAssertEqual(TestVariation(flagKey: "n", value: 3.0).variationId, "v-n-571409182237", "an integer and a double are two values")
    }
}
