import Foundation
import XCTest

@testable import Flagship

/// Merging a decision's campaigns into the visitor's flags (PROTOCOL.md section 1).
final class DecisionFlagMergeTests: XCTestCase {
    private let first = AssignedCampaign(
        campaignId: "c1", campaignName: "Campaign 1", variationGroupId: "vg1", variationGroupName: "VG 1",
        variationId: "v1", variationName: "Variation 1", isReference: false, type: "ab", slug: "home-test",
        flags: ["btnColor": .string("green"), "price": .double(9.99)])
    private let second = AssignedCampaign(
        campaignId: "c2", campaignName: "Campaign 2", variationGroupId: "vg2", variationGroupName: "VG 2",
        variationId: "v2", variationName: "Original", isReference: true, type: "deployment", slug: nil,
        flags: ["btnColor": .string("red"), "banner": .bool(true)])

    func testLaterCampaignWinsForTheSameKey() {
        let flags = FlagEntry.merge([first, second])

        XCTAssertEqual(flags["btnColor"], FlagEntry(key: "btnColor", value: .string("red"), metadata: FSFlagMetadata(second)))
        XCTAssertEqual(FlagEntry.merge([second, first])["btnColor"],
                       FlagEntry(key: "btnColor", value: .string("green"), metadata: FSFlagMetadata(first)))
    }

    func testKeysOfEveryCampaignAreKeptWithTheirOwnCampaign() {
        let flags = FlagEntry.merge([first, second])

        XCTAssertEqual(flags, [
            "btnColor": FlagEntry(key: "btnColor", value: .string("red"), metadata: FSFlagMetadata(second)),
            "price": FlagEntry(key: "price", value: .double(9.99), metadata: FSFlagMetadata(first)),
            "banner": FlagEntry(key: "banner", value: .bool(true), metadata: FSFlagMetadata(second)),
        ])
    }

    func testNullValuesAreKeptAsFlagsThatExist() {
        var sibling = second
        sibling.flags = ["price": .null, "hidden": .null]

        let flags = FlagEntry.merge([first, sibling])

        XCTAssertEqual(flags["hidden"], FlagEntry(key: "hidden", value: .null, metadata: FSFlagMetadata(sibling)))
        // A later null wins over an earlier value, as any later value does.
        XCTAssertEqual(flags["price"], FlagEntry(key: "price", value: .null, metadata: FSFlagMetadata(sibling)))
        XCTAssertEqual(Set(flags.keys), ["btnColor", "price", "hidden"])
    }

    func testOriginCarriesEveryMetadataFieldOfTheCampaign() {
        let origin = FlagEntry.merge([first])["price"]?.metadata

        XCTAssertEqual(origin?.campaignId, "c1")
        XCTAssertEqual(origin?.campaignName, "Campaign 1")
        XCTAssertEqual(origin?.variationGroupId, "vg1")
        XCTAssertEqual(origin?.variationGroupName, "VG 1")
        XCTAssertEqual(origin?.variationId, "v1")
        XCTAssertEqual(origin?.variationName, "Variation 1")
        XCTAssertEqual(origin?.isReference, false)
        XCTAssertEqual(origin?.campaignType, "ab")
        XCTAssertEqual(origin?.slug, "home-test")
    }

    func testNoCampaignsGiveNoFlagsAndACampaignWithoutFlagsAddsNone() {
        XCTAssertEqual(FlagEntry.merge([]), [:])
        let empty = AssignedCampaign(campaignId: "c3", variationGroupId: "vg3", variationId: "v3")
        XCTAssertEqual(FlagEntry.merge([empty]), [:])
        XCTAssertEqual(FlagEntry.merge([first, empty]), FlagEntry.merge([first]))
    }

    func testAndroidResponse2MergesIntoEightFlagsWithNullsKept() throws {
        let response = try DecisionResponse(json: Conformance.fixture("android_api_response_2.json"))

        let flags = FlagEntry.merge(response.campaigns)

        XCTAssertEqual(flags.mapValues(\.value), [
            "my_flag": .string("value3"), "my_flag_key": .string("value 2"), "xpc1": .string("xpcOriginal"),
            "key1": .string("Original"), "key2": .null, "key3": .null, "chatbox": .double(1.2),
            "preroll_algo": .bool(true),
        ])
        XCTAssertEqual(flags["key2"]?.metadata.variationGroupId, "c6dpdp982h0h3gfkkkkk")
        XCTAssertEqual(flags["chatbox"]?.metadata.slug, "zz")
        XCTAssertEqual(flags["chatbox"]?.metadata.campaignType, "deployment")
    }

    func testPythonResponse1MergesNestedObjectsWhole() throws {
        let response = try DecisionResponse(json: Conformance.fixture("python_api_response_1.json"))

        let flags = FlagEntry.merge(response.campaigns)

        XCTAssertEqual(flags.mapValues(\.value), [
            "json": .object(["string": .string("a"), "variation": .int(1)]), "string": .null,
            "featureEnabled": .bool(true), "visitorIdColor": .string("#E5B21D"), "title": .string("Hello"),
        ])
        XCTAssertEqual(flags["featureEnabled"]?.metadata.slug, "enableFeatureVIP")
    }
}
