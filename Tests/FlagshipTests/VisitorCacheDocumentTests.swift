import Foundation
import XCTest

@testable import Flagship

final class VisitorCacheDocumentTests: XCTestCase {
    func testIOSFixtureReadsEveryField() throws {
        let document = try VisitorCacheDocument(data: Conformance.fixture("ios_visitorCache.json"), expectedVisitorId: "visitor_1")

        XCTAssertEqual(document.visitorId, "visitor_1")
        XCTAssertEqual(document.anonymousId, "anonym_0")
        XCTAssertTrue(document.consent)
        XCTAssertEqual(document.context, ["vip": .bool(false)])
        XCTAssertEqual(document.campaigns, [AssignedCampaign(
            campaignId: "bmsor064jaeg0gm41het", variationGroupId: "bmsor064jaeg0gm49cjg", variationId: "bmsor064jaeg0gm49ckg",
            isReference: true, type: "ab", activated: false,
            flags: ["text": .string("custom title"), "textColor": .string("#27c451")])])
        XCTAssertEqual(document.assignmentsHistory, [:])
    }

    func testAndroidFixtureKeepsNullFlagsAndAssignmentHistory() throws {
        let document = try VisitorCacheDocument(data: Conformance.fixture("android_cache_visitor.json"), expectedVisitorId: "visitor_id")

        XCTAssertNil(document.anonymousId)
        XCTAssertEqual(document.context["sdk_osVersionCode"], .int(29))
        XCTAssertEqual(document.context["vip"], .bool(true))
        XCTAssertEqual(document.campaigns.map(\.campaignId), ["brjjpk7734cg0sl5llll", "bmsor064jaeg0gm4aaaa"])
        XCTAssertEqual(document.campaigns[0].flags, ["rank": .int(81111), "rank_plus": .null])
        XCTAssertEqual(document.assignmentsHistory, [
            "brjjpk7734cg0sl5mmmm": "brjjpk7734cg0sl5oooo",
            "bmsor064jaeg0gm4bbbb": "bmsor064jaeg0gm4dddd",
        ])
    }

    func testAssignationHistoryIsReadAsASynonym() throws {
        let json = #"{"version":1,"data":{"visitorId":"v","assignationHistory":{"vg":"var"},"unknownKey":[1,2]}}"#
        let document = try VisitorCacheDocument(data: Data(json.utf8))

        XCTAssertEqual(document.assignmentsHistory, ["vg": "var"])
        XCTAssertTrue(document.consent, "a missing consent defaults to true")
        XCTAssertEqual(document.campaigns, [])
    }

    func testWrittenDocumentReadsBackEqual() throws {
        let original = VisitorCacheDocument(
            visitorId: "v1", anonymousId: "a1", consent: true,
            context: ["age": .int(32), "ratio": .double(0.5), "name": .string("Zoë")],
            campaigns: [AssignedCampaign(campaignId: "c1", campaignName: "C", variationGroupId: "vg1", variationGroupName: "VG",
                                       variationId: "var1", variationName: "V", isReference: false, type: "ab", slug: nil,
                                       activated: true, flags: ["btn": .object(["color": .string("green")]), "list": .array([.int(1)])])],
            assignmentsHistory: ["vg1": "var1"])

        let data = original.jsonData()
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        let body = try XCTUnwrap(object["data"] as? [String: Any])
        let campaign = try XCTUnwrap((body["campaigns"] as? [[String: Any]])?.first)

        XCTAssertEqual(object["version"] as? Int, 1)
        XCTAssertTrue(campaign["slug"] is NSNull, "slug is written as null, as documented")
        XCTAssertEqual(try VisitorCacheDocument(data: data, expectedVisitorId: "v1"), original)
    }

    func testWhatWasReportedReadsBackEqualAndAnUnreadablePartOfItIsLeftOut() throws {
        var document = VisitorCacheDocument(visitorId: "v1", context: ["plan": .string("pro")])
        document.reported = ReportedFacts(consent: true, contextDigest: "0123456789abcdef0123456789abcdef",
                                          exposures: ["vg1": .init(variationId: "var1", sentAt: 1_795_777_345_151)])
        XCTAssertEqual(try VisitorCacheDocument(data: document.jsonData(), expectedVisitorId: "v1"), document)
        XCTAssertTrue(document.jsonText().contains(#""reported":{"consent":true,"context":"0123456789abcdef0123456789abcdef","exposures":{"vg1":["var1",1795777345151]}}"#))
        XCTAssertFalse(VisitorCacheDocument(visitorId: "v1").jsonText().contains("reported"), "nothing recorded, nothing written")

        // A hand edit or another program: what cannot be read is left out (a hit sent again at worst).
        let edited = Data(#"""
            {"version": 1, "data": {"visitorId": "v1", "campaigns": [], "reported":
              {"consent": "yes", "context": 5, "exposures": {"vg1": ["var1"], "vg2": ["var2", 1795777345151], "vg3": 7}}}}
            """#.utf8)
        let read = try VisitorCacheDocument(data: edited, expectedVisitorId: "v1")
        XCTAssertEqual(read.reported, ReportedFacts(exposures: ["vg2": .init(variationId: "var2", sentAt: 1_795_777_345_151)]))
        XCTAssertEqual(try VisitorCacheDocument(data: Data(#"{"version": 1, "data": {"visitorId": "v1", "reported": [1]}}"#.utf8)).reported,
                       ReportedFacts())
    }

    func testAnotherVersionIsRefused() {
        let json = #"{"version":2,"data":{"visitorId":"v"}}"#
        XCTAssertThrowsError(try VisitorCacheDocument(data: Data(json.utf8))) { error in
            XCTAssertEqual(error as? VisitorCacheDocumentError, .unsupportedVersion(2))
        }
    }

    func testAnotherVisitorsDocumentIsRefused() {
        let json = #"{"version":1,"data":{"visitorId":"someone_else"}}"#
        XCTAssertThrowsError(try VisitorCacheDocument(data: Data(json.utf8), expectedVisitorId: "v1")) { error in
            XCTAssertEqual(error as? VisitorCacheDocumentError, .wrongVisitor(expected: "v1", found: "someone_else"))
        }
    }

    func testMalformedDocumentsAreRefusedWithAReason() {
        let cases: [(String, (VisitorCacheDocumentError) -> Bool)] = [
            (#"{"version":1,"data":{"visitorId":"v""#, { if case .notJSON = $0 { return true }; return false }),
            (#"not json at all"#, { if case .notJSON = $0 { return true }; return false }),
            (#"{"version":1}"#, { $0 == .invalid(#"it has no "data" object"#) }),
            (#"{"data":{"visitorId":"v"}}"#, { $0 == .unsupportedVersion(nil) }),
            (#"{"version":1,"data":{"consent":true}}"#, { $0 == .invalid("missing data.visitorId") }),
            (#"{"version":1,"data":{"visitorId":"v","campaigns":[{"campaignId":"c"}]}}"#,
             { $0 == .invalid("missing data.campaigns[0].variationGroupId") }),
            (#"{"version":1,"data":{"visitorId":"v","consent":"yes"}}"#, { $0 == .invalid("wrong type at data.consent") }),
        ]
        for (json, matches) in cases {
            XCTAssertThrowsError(try VisitorCacheDocument(data: Data(json.utf8)), json) { error in
                guard let error = error as? VisitorCacheDocumentError else { return XCTFail("\(error)") }
                XCTAssertTrue(matches(error), "\(json) gave \(error)")
            }
        }
    }
}
