import Foundation
import XCTest

@testable import Flagship

/// Reading the Decision API's answer: the official SDKs' fixtures, the lenient rules of
/// PROTOCOL.md section 1, and bodies that are not a decision at all.
final class DecisionResponseTests: XCTestCase {
    // MARK: The official SDKs' fixtures

    /// The seven campaigns of `android_api_response_1.json` (and `_3`), in response order.
    private let androidCampaigns = [
        AssignedCampaign(campaignId: "bmsorfe4jaeg0g000000", variationGroupId: "bmsorfe4jaeg0g1111111",
                         variationId: "bmsorfe4jaeg0g222222", flags: ["featureEnabled": .bool(false)]),
        AssignedCampaign(campaignId: "bu6lgeu3bdt014333333", variationGroupId: "bu6lgeu3bdt014444444",
                         variationId: "bu6lgeu3bdt01555555", flags: ["target": .string("is")]),
        AssignedCampaign(campaignId: "bv6vpqjh6h101f666666", variationGroupId: "bv6vpqjh6h101f777777",
                         variationId: "bv6vpqjh6h101f888888", flags: ["isref": .string("nope")]),
        AssignedCampaign(campaignId: "c04bed3m649g0h999999", campaignName: "my_release_campaign",
                         variationGroupId: "c04bed3m649g0hAAAAAA", variationGroupName: "my_release_variation_group_name",
                         variationId: "c04bed3m649g0hBBBBBB", variationName: "my_release_variation_name",
                         type: "ab", slug: "my_release_slug", flags: ["release": .int(100)]),
        AssignedCampaign(campaignId: "c0vlhkc8tbo3s7CCCCCC", variationGroupId: "c0vlhkc8tbo3sDDDDDD",
                         variationId: "c0vlhkc8tbo3s7EEEEEE", flags: ["all_users": .int(1)]),
        AssignedCampaign(campaignId: "c27tejc3fk9jdbFFFFFF", variationGroupId: "c27tejc3fk9jdbGGGGGG",
                         variationId: "c27tfn8bcahim7HHHHHH", flags: ["ab10_variation": .int(7)]),
        AssignedCampaign(campaignId: "c348750k33nnjIIIIII", variationGroupId: "c348750k33nnjpJJJJJJ",
                         variationId: "c348750k33nnjpKKKKKK", isReference: true,
                         flags: ["json": .object(["variation": .int(0)]), "string": .null]),
    ]

    func testAndroidResponse1GivesItsSevenCampaignsWithDefaultsForWhatTheyLeaveOut() throws {
        let response = try DecisionResponse(json: Conformance.fixture("android_api_response_1.json"))

        XCTAssertEqual(response, DecisionResponse(visitorId: "_ENV_ID_", panic: false, campaigns: androidCampaigns,
                                                  accountSettings: nil, skippedCampaigns: []))
    }

    func testAndroidResponse2GivesNamesSlugsTypesAndAnEmptyFlagCampaign() throws {
        let response = try DecisionResponse(json: Conformance.fixture("android_api_response_2.json"))

        XCTAssertEqual(response.visitorId, "Visitor-A")
        XCTAssertFalse(response.panic)
        XCTAssertNil(response.accountSettings)
        XCTAssertEqual(response.campaigns, [
            AssignedCampaign(campaignId: "cagt08da51hg078aaaaa", campaignName: "qa tracking manager",
                             variationGroupId: "cagt08da51hg078bbbbb", variationGroupName: "Default",
                             variationId: "cagt08da51hg078ccccc", variationName: "Variation 3", type: "ab",
                             flags: ["my_flag": .string("value3")]),
            AssignedCampaign(campaignId: "caaa7e0djnu00cqddddd", campaignName: "Avoid flickering with NextJs SSR",
                             variationGroupId: "caaa7e0djnu00cqeeeee", variationGroupName: "Original",
                             variationId: "caaa86fgqtrg23cfffff", variationName: "New variation", type: "ab",
                             flags: ["my_flag_key": .string("value 2")]),
            AssignedCampaign(campaignId: "c710r4k7fg302uvggggg", campaignName: "xpc",
                             variationGroupId: "c710r4k7fg302uvhhhhh", variationGroupName: "Original",
                             variationId: "c710r4k7fg302uviiiii", variationName: "Original", isReference: true,
                             type: "ab", flags: ["xpc1": .string("xpcOriginal")]),
            AssignedCampaign(campaignId: "c6dpdp982h0h3gfjjjjj", campaignName: "Flutter QA ",
                             variationGroupId: "c6dpdp982h0h3gfkkkkk", variationGroupName: "Default",
                             variationId: "c6dpdp982h0h3gflllll", variationName: "Original", isReference: true,
                             type: "ab", flags: ["key1": .string("Original"), "key2": .null, "key3": .null]),
            AssignedCampaign(campaignId: "c4sdu9a25dg0179mmmmm", campaignName: "testt (cloned)",
                             variationGroupId: "c4sdu9a25dg0179nnnnn", variationGroupName: "Deployment",
                             variationId: "c4sdu9a25dg0179ooooo", variationName: "Deployment", type: "deployment",
                             flags: [:]),
            AssignedCampaign(campaignId: "bp6a7tnld0j0060ppppp", campaignName: "NewFeatureRollout",
                             variationGroupId: "bp6a7tnld0j0060qqqqq", variationGroupName: "Deployment",
                             variationId: "bp6a7tnld0j0060rrrrr", variationName: "Variation 2", type: "deployment",
                             slug: "zz", flags: ["chatbox": .double(1.2)]),
            AssignedCampaign(campaignId: "blo2dpebclcg0shsssss", campaignName: "New Pre-Roll Ads",
                             variationGroupId: "blo2dpebclcg0shttttt", variationGroupName: "Deployment",
                             variationId: "blo2dpebclcg0shuuuuu", variationName: "Variation 2", type: "deployment",
                             flags: ["preroll_algo": .bool(true)]),
        ])
    }

    func testAndroidResponse3GivesAccountSettingsThatOnlyHaveTroubleshootingAsAllDisabled() throws {
        let response = try DecisionResponse(json: Conformance.fixture("android_api_response_3.json"))

        XCTAssertEqual(response, DecisionResponse(visitorId: "_ENV_ID_", panic: false, campaigns: androidCampaigns,
                                                  accountSettings: AccountSettings(enabledXPC: false, enabled1V1T: false)))
    }

    func testAndroidPanicResponseIsPanicWithNoCampaigns() throws {
        let response = try DecisionResponse(json: Conformance.fixture("android_api_panic_response.json"))

        XCTAssertEqual(response, DecisionResponse(visitorId: "visitor_12345", panic: true, campaigns: []))
    }

    func testPythonResponse1GivesToggleAndABCampaignsWithNestedAndNullFlags() throws {
        let response = try DecisionResponse(json: Conformance.fixture("python_api_response_1.json"))

        XCTAssertEqual(response, DecisionResponse(visitorId: "_visitor_id_x", panic: false, campaigns: [
            AssignedCampaign(campaignId: "c348750k33nnjpzzzzzz", variationGroupId: "c348750k33nnjpaaaaaa",
                             variationId: "c348750k33nnjpeeeeee", type: "ab",
                             flags: ["json": .object(["string": .string("a"), "variation": .int(1)]), "string": .null]),
            AssignedCampaign(campaignId: "bmsorfe4jaeg0gtttttt", variationGroupId: "bmsorfe4jaeg0grrrrrr",
                             variationId: "bmsorfe4jaeg0gyyyyyy", type: "toggle", slug: "enableFeatureVIP",
                             flags: ["featureEnabled": .bool(true)]),
            AssignedCampaign(campaignId: "bmsor064jaeg0giiiiii", variationGroupId: "bmsor064jaeg0guuuuuu",
                             variationId: "bmsor064jaeg0goooooo", type: "ab",
                             flags: ["visitorIdColor": .string("#E5B21D"), "title": .string("Hello")]),
        ]))
    }

    func testPythonResponse3IsPanicWithNoCampaigns() throws {
        let response = try DecisionResponse(json: Conformance.fixture("python_api_response_3.json"))

        XCTAssertEqual(response, DecisionResponse(visitorId: "visitor_xxx", panic: true, campaigns: []))
    }

    func testIOSDecisionGivesOneCampaignWithAnObjectFlagHoldingAnArray() throws {
        let response = try DecisionResponse(json: Conformance.fixture("ios_decisionApi.json"))

        func list(_ color: String, _ name: String, _ count: Int64, favorite: String? = nil) -> FSJSONValue {
            var entry: [String: FSJSONValue] = ["categoryNameHexColor": .string(color), "name": .string(name),
                                              "numberOfItem": .int(count)]
            if let favorite {
                entry["favoriteBackGroundHexColor"] = .string(favorite)
                entry["isFavorite"] = .bool(true)
            }
            return .object(entry)
        }
        XCTAssertEqual(response, DecisionResponse(visitorId: "azoiuezro", panic: false, campaigns: [
            AssignedCampaign(campaignId: "bvcdqksmicqghldq9agg", campaignName: "campaign_name",
                             variationGroupId: "bvcdqksmicqghldq9ahg", variationGroupName: "varGroup_name",
                             variationId: "bvcdqksmicqghldq9aig", variationName: "variation_name", type: "",
                             slug: "cmapForTest", flags: [
                                "background_color": .string("#000000"),
                                "btnTitle": .string("Alpha_demoApp"),
                                "config": .object(["lists": .array([
                                    list("#180C18", "Current Demo11", 3),
                                    list("#3B033B", "Inspirations22", 3),
                                    list("#555555", "Promo33", 4, favorite: "#f58a42"),
                                ])]),
                                "isMenuUpdateVisible": .bool(false),
                             ]),
        ]))
    }

    func testIOSPanicDecisionIsPanicWithNoCampaigns() throws {
        let response = try DecisionResponse(json: Conformance.fixture("ios_decisionApiPanic.json"))

        XCTAssertEqual(response, DecisionResponse(visitorId: "aliasPanic", panic: true, campaigns: []))
    }

    // MARK: Lenient reading

    func testUnknownFieldsAreIgnoredAtEveryLevel() throws {
        let response = try parse("""
            {"visitorId": "v1", "panic": false, "newTopLevel": {"x": 1}, "requestId": 42,
             "campaigns": [{"id": "c1", "variationGroupId": "vg1", "futureField": [1, 2], "priority": 3,
                            "variation": {"id": "v1", "allocation": 50, "reference": true,
                                          "modifications": {"type": "FLAG", "value": {"k": "v"}, "extra": null}}}],
             "extras": {"accountSettings": {"enabledXPC": true, "enabled1V1T": true, "newSetting": "x"}, "other": 1}}
            """)

        XCTAssertEqual(response, DecisionResponse(
            visitorId: "v1", panic: false,
            campaigns: [AssignedCampaign(campaignId: "c1", variationGroupId: "vg1", variationId: "v1",
                                         isReference: true, flags: ["k": .string("v")])],
            accountSettings: AccountSettings(enabledXPC: true, enabled1V1T: true)))
    }

    func testMissingOptionalFieldsTakeEmptyFalseAndNullDefaults() throws {
        let response = try parse("""
            {"campaigns": [{"id": "c1", "variationGroupId": "vg1", "variation": {"id": "v1"}}]}
            """)

        XCTAssertEqual(response, DecisionResponse(visitorId: nil, panic: false, campaigns: [
            AssignedCampaign(campaignId: "c1", campaignName: "", variationGroupId: "vg1", variationGroupName: "",
                             variationId: "v1", variationName: "", isReference: false, type: "", slug: nil,
                             activated: false, flags: [:]),
        ], accountSettings: nil))
    }

    func testOptionalFieldsOfTheWrongTypeTakeTheirDefaults() throws {
        let response = try parse("""
            {"visitorId": 12, "panic": "yes",
             "campaigns": [{"id": "c1", "name": 5, "type": false, "slug": 3, "variationGroupId": "vg1",
                            "variationGroupName": [], "variation": {"id": "v1", "name": null, "reference": "true",
                            "modifications": {"type": "FLAG", "value": {"k": 1}}}}],
             "extras": {"accountSettings": {"enabledXPC": "true", "enabled1V1T": 1}}}
            """)

        XCTAssertEqual(response, DecisionResponse(
            visitorId: nil, panic: false,
            campaigns: [AssignedCampaign(campaignId: "c1", variationGroupId: "vg1", variationId: "v1", flags: ["k": .int(1)])],
            accountSettings: AccountSettings(enabledXPC: false, enabled1V1T: false)))
    }

    func testPanicMayComeWithoutAnyCampaignsField() throws {
        XCTAssertEqual(try parse(#"{"panic": true}"#), DecisionResponse(visitorId: nil, panic: true, campaigns: []))
        XCTAssertEqual(try parse(#"{"panic": true, "campaigns": null}"#), DecisionResponse(panic: true))
    }

    func testAnEmptyObjectIsADecisionWithNoCampaigns() throws {
        XCTAssertEqual(try parse("{}"), DecisionResponse(visitorId: nil, panic: false, campaigns: [], accountSettings: nil))
    }

    func testAccountSettingsThatAreNotAnObjectAreAbsent() throws {
        XCTAssertNil(try parse(#"{"extras": {"accountSettings": "on"}}"#).accountSettings)
        XCTAssertNil(try parse(#"{"extras": []}"#).accountSettings)
    }

    func testModificationsWithoutTypeOrValueGiveACampaignWithNoFlags() throws {
        let response = try parse("""
            {"campaigns": [
              {"id": "c1", "variationGroupId": "vg1", "variation": {"id": "v1", "modifications": {"value": {"a": 1}}}},
              {"id": "c2", "variationGroupId": "vg2", "variation": {"id": "v2", "modifications": {"type": "FLAG"}}},
              {"id": "c3", "variationGroupId": "vg3", "variation": {"id": "v3", "modifications": {"type": null, "value": {"b": 2}}}},
              {"id": "c4", "variationGroupId": "vg4", "variation": {"id": "v4", "modifications": {"type": "FLAG", "value": [1, 2]}}},
              {"id": "c5", "variationGroupId": "vg5", "variation": {"id": "v5", "modifications": "FLAG"}},
              {"id": "c6", "variationGroupId": "vg6", "variation": {"id": "v6", "modifications": {"type": "TEXT", "value": {"c": "3"}}}}
            ]}
            """)

        XCTAssertEqual(response.campaigns.map(\.campaignId), ["c1", "c2", "c3", "c4", "c5", "c6"])
        XCTAssertEqual(response.campaigns.map(\.flags), [[:], [:], [:], [:], [:], ["c": .string("3")]])
        XCTAssertEqual(response.skippedCampaigns, [])
    }

    func testCampaignsWithoutTheirIdsAreSkippedAndSaidWhy() throws {
        let response = try parse("""
            {"campaigns": [
              {"variationGroupId": "vg1", "variation": {"id": "v1"}},
              {"id": "c2", "variationGroupId": "vg2", "variation": {"id": "v2", "modifications": {"type": "FLAG", "value": {"kept": true}}}},
              {"id": "c3", "variation": {"id": "v3"}},
              {"id": "c4", "variationGroupId": "vg4", "variation": {"name": "no id"}},
              {"id": "c5", "variationGroupId": "vg5"},
              {"id": "", "variationGroupId": "vg6", "variation": {"id": "v6"}},
              {"id": 7, "variationGroupId": "vg7", "variation": {"id": "v7"}},
              "not a campaign",
              null
            ]}
            """)

        XCTAssertEqual(response.campaigns, [
            AssignedCampaign(campaignId: "c2", variationGroupId: "vg2", variationId: "v2", flags: ["kept": .bool(true)]),
        ])
        XCTAssertEqual(response.skippedCampaigns, [
            #"campaign #1 was skipped: it has no "id""#,
            #"campaign #3 (id "c3") was skipped: it has no "variationGroupId""#,
            #"campaign #4 (id "c4") was skipped: it has no "variation.id""#,
            #"campaign #5 (id "c5") was skipped: it has no "variation.id""#,
            #"campaign #6 (id "") was skipped: it has no "id""#,
            #"campaign #7 was skipped: it has no "id""#,
            "campaign #8 was skipped: it is not an object",
            "campaign #9 was skipped: it is not an object",
        ])
    }

    func testCampaignsAreKeptInResponseOrder() throws {
        let entries = (1...30).map { #"{"id": "c\#($0)", "variationGroupId": "vg\#($0)", "variation": {"id": "v\#($0)"}}"# }
        let response = try parse(#"{"campaigns": [\#(entries.joined(separator: ","))]}"#)

        XCTAssertEqual(response.campaigns.map(\.campaignId), (1...30).map { "c\($0)" })
    }

    // MARK: Bodies that are not a decision

    func testBodiesThatAreNotADecisionObjectAreMalformed() {
        let cases: [(body: String, reason: String)] = [
            ("", "the body is empty"),
            ("<html>502 Bad Gateway</html>", "the body (28 bytes) is not valid JSON, or is truncated"),
            (#"{"visitorId": "v1", "campaigns": [{"id": "c1""#, "the body (45 bytes) is not valid JSON, or is truncated"),
            ("[]", "the body is JSON but not an object"),
            (#"[{"panic": true}]"#, "the body is JSON but not an object"),
            ("42", "the body is JSON but not an object"),
            (#""campaigns""#, "the body is JSON but not an object"),
            ("null", "the body is JSON but not an object"),
            (#"{"campaigns": {"id": "c1"}}"#, #""campaigns" is not an array"#),
            (#"{"campaigns": "none"}"#, #""campaigns" is not an array"#),
            (#"{"panic": true, "campaigns": 0}"#, #""campaigns" is not an array"#),
        ]
        for (body, reason) in cases {
            XCTAssertThrowsError(try DecisionResponse(json: Data(body.utf8)), body) { error in
                XCTAssertEqual(error as? DecisionError, .malformedBody(reason), body)
            }
        }
    }

    func testEveryTruncationOfAFixtureIsMalformedNeverACrash() throws {
        let full = try Conformance.fixture("android_api_response_2.json")
        // The last byte is the closing brace: every shorter prefix is cut inside the object.
        for length in stride(from: 0, to: full.count - 1, by: 7) {
            XCTAssertThrowsError(try DecisionResponse(json: full.prefix(length)), "prefix \(length)") { error in
                guard case .malformedBody? = error as? DecisionError else {
                    return XCTFail("prefix \(length): \(error)")
                }
            }
        }
    }

    func testNonUTF8BytesAreMalformed() {
        XCTAssertThrowsError(try DecisionResponse(json: Data([0x7B, 0xFF, 0xFE, 0x7D]))) { error in
            XCTAssertEqual(error as? DecisionError, .malformedBody("the body (4 bytes) is not valid JSON, or is truncated"))
        }
    }

    func testAHugeBodyIsReadWhole() throws {
        // 10,000 campaigns of 10 flags each: about 4.5 MB, far beyond any real account.
        let count = 10_000
        var text = #"{"visitorId": "big", "campaigns": ["#
        for index in 0..<count {
            if index > 0 { text += "," }
            let flags = (0..<10).map { #""flag_\#(index)_\#($0)": "\#(String(repeating: "x", count: 20))""# }
            text += #"{"id": "c\#(index)", "name": "Campaign \#(index)", "variationGroupId": "vg\#(index)", "#
                + #""variation": {"id": "v\#(index)", "modifications": {"type": "FLAG", "value": {\#(flags.joined(separator: ","))}}}}"#
        }
        text += "]}"
        XCTAssertGreaterThan(text.utf8.count, 4_000_000)

        let response = try parse(text)

        XCTAssertEqual(response.campaigns.count, count)
        XCTAssertEqual(response.campaigns.last?.campaignId, "c9999")
        XCTAssertEqual(response.campaigns.last?.flags["flag_9999_9"], .string(String(repeating: "x", count: 20)))
        XCTAssertEqual(FlagEntry.merge(response.campaigns).count, count * 10)
    }

    func testDeeplyNestedJSONIsRefusedOrReadNeverACrash() {
        let depth = 100_000
        let body = #"{"campaigns": "# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"

        do {
            _ = try DecisionResponse(json: Data(body.utf8))
            XCTFail("a nested array is not a list of campaigns")
        } catch {
            guard case .malformedBody = error else { return XCTFail("\(error)") }
        }
    }

    private func parse(_ text: String) throws -> DecisionResponse {
        try DecisionResponse(json: Data(text.utf8))
    }
}
