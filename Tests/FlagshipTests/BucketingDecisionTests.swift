import Foundation
import XCTest

@testable import Flagship

/// BUCKETING.md, "Decision, campaign by campaign": which group decides, how the variation is chosen.
final class BucketingDecisionTests: XCTestCase {
    private typealias J = BucketingJSON

    func testDecisionCarriesTheCampaignGroupAndVariationAsTheFileNamesThem() throws {
        let file = try BucketingFile(json: Data(#"""
            {"campaigns": [{"id": "c1", "name": "Checkout", "slug": "checkout-test", "type": "ab",
              "variationGroups": [{"id": "vg1", "name": "Everyone", "targeting": \#(J.everyone),
                "variations": [{"id": "v1", "name": "Original", "reference": true, "allocation": 100,
                                "modifications": {"type": "FLAG", "value": {"color": "red", "size": 3, "gone": null}}}]}]}]}
            """#.utf8))
        let decision = file.decide(visitorId: "visitor_1", context: [:], history: [:])
        XCTAssertEqual(decision, BucketingDecision(panic: false, campaigns: [
            BucketedCampaign(campaignId: "c1", campaignName: "Checkout", slug: "checkout-test", type: "ab",
                             variationGroupId: "vg1", variationGroupName: "Everyone", variationId: "v1",
                             variationName: "Original", isReference: true, modificationsType: "FLAG",
                             flags: ["color": .string("red"), "size": .int(3), "gone": .null]),
        ]))
        XCTAssertEqual(decision.flags, ["color": .string("red"), "size": .int(3), "gone": .null])
    }

    func testModificationsWithoutTypeOrValueGiveNoFlags() throws {
        let file = try BucketingFile(json: Data(#"""
            {"campaigns": [{"id": "c1", "variationGroups": [{"id": "vg1", "targeting": \#(J.everyone), "variations": [
              {"id": "v1", "allocation": 100, "modifications": {"value": {"color": "red"}}}]}]},
             {"id": "c2", "variationGroups": [{"id": "vg2", "targeting": \#(J.everyone), "variations": [
              {"id": "v2", "allocation": 100, "modifications": {"type": "JSON"}}]}]},
             {"id": "c3", "variationGroups": [{"id": "vg3", "targeting": \#(J.everyone), "variations": [
              {"id": "v3", "allocation": 100}]}]}]}
            """#.utf8))
        let decision = file.decide(visitorId: "visitor_1", context: [:], history: [:])
        XCTAssertEqual(decision.campaigns.map(\.variationId), ["v1", "v2", "v3"], "the visitor is still assigned")
        XCTAssertEqual(decision.campaigns.map(\.modificationsType), [nil, "JSON", nil])
        XCTAssertEqual(decision.campaigns.map(\.flags), [[:], [:], [:]])
        XCTAssertEqual(decision.campaigns.map(\.campaignName), ["", "", ""])
        XCTAssertEqual(decision.campaigns.map(\.slug), [nil, nil, nil])
    }

    func testCampaignsComeInFileOrderAndALaterOneOverwritesAFlag() throws {
        let file = try BucketingFile(json: J.file(
            J.campaign("c2", J.group("g2", J.variation("v2", 100, flags: #"{"title": "second", "only2": 2}"#))),
            J.campaign("c1", J.group("g1", J.variation("v1", 100, flags: #"{"title": "first", "only1": 1}"#)))))
        let decision = file.decide(visitorId: "visitor_1", context: [:], history: [:])
        XCTAssertEqual(decision.campaigns.map(\.campaignId), ["c2", "c1"])
        XCTAssertEqual(decision.flags, ["title": .string("first"), "only1": .int(1), "only2": .int(2)])
    }

    func testFirstGroupWhoseTargetingMatchesDecides() throws {
        let adults = J.targeting([J.rule("age", "GREATER_THAN_OR_EQUALS", "18")])
        let file = try BucketingFile(json: J.file(J.campaign(
            "c", J.group("adults", targeting: adults, J.variation("adult", 100)), J.group("all", J.variation("anyone", 100)))))
        XCTAssertEqual(file.assignedIds(visitorId: "a", context: ["age": .int(30)]), ["c/adults/adult"])
        XCTAssertEqual(file.assignedIds(visitorId: "a", context: ["age": .int(12)]), ["c/all/anyone"])
        XCTAssertEqual(file.assignedIds(visitorId: "a"), ["c/all/anyone"])
    }

    /// The first targeted group decides: a visitor its allocations leave out does not fall through.
    func testVisitorUnallocatedInTheTargetedGroupGetsNothingFromTheCampaign() throws {
        let file = try BucketingFile(json: J.file(J.campaign(
            "c", J.group("half", J.variation("v", 50)), J.group("all", J.variation("anyone", 100)))))
        let inside = visitorId(inBuckets: 0...49, ofGroup: "half")
        let outside = visitorId(inBuckets: 50...99, ofGroup: "half")
        XCTAssertEqual(file.assignedIds(visitorId: inside), ["c/half/v"])
        XCTAssertEqual(file.assignedIds(visitorId: outside), [])
    }

    func testRunningAllocationTotalPicksTheVariation() throws {
        let file = try BucketingFile(json: J.file(J.campaign(
            "c", J.group("g", J.variation("a", 20), J.variation("zero", 0), J.variation("b", 30), J.variation("c", 50)))))
        for (buckets, variation) in [(0...19, "a"), (20...49, "b"), (50...99, "c"), (19...19, "a"), (20...20, "b"), (99...99, "c")] {
            let visitor = visitorId(inBuckets: UInt32(buckets.lowerBound)...UInt32(buckets.upperBound), ofGroup: "g")
            XCTAssertEqual(file.assignedIds(visitorId: visitor), ["c/g/\(variation)"], "buckets \(buckets)")
        }
    }

    func testAllocationsSummingBelow100LeaveTheRestOut() throws {
        let file = try BucketingFile(json: J.file(J.campaign("c", J.group("g", J.variation("a", 10), J.variation("b", 20)))))
        XCTAssertEqual(file.assignedIds(visitorId: visitorId(inBuckets: 5...5, ofGroup: "g")), ["c/g/a"])
        XCTAssertEqual(file.assignedIds(visitorId: visitorId(inBuckets: 29...29, ofGroup: "g")), ["c/g/b"])
        XCTAssertEqual(file.assignedIds(visitorId: visitorId(inBuckets: 30...99, ofGroup: "g")), [])
        XCTAssertEqual(file.warnings, [])
    }

    func testVariationWithoutAllocationTakesNoVisitorByHash() throws {
        let file = try BucketingFile(json: Data(#"""
            {"campaigns": [{"id": "c", "variationGroups": [{"id": "g", "targeting": \#(J.everyone), "variations": [
              {"id": "none"}, {"id": "zero", "allocation": 0}, {"id": "all", "allocation": 100}]}]}]}
            """#.utf8))
        for index in 0..<200 {
            XCTAssertEqual(file.assignedIds(visitorId: "visitor-\(index)"), ["c/g/all"])
        }
        XCTAssertEqual(file.assignedIds(visitorId: "v", history: ["g": "zero"]), ["c/g/zero"], "the history still finds it")
    }

    func testHistoryKeepsTheVisitorsVariationWithoutHashing() throws {
        let file = try BucketingFile(json: J.file(J.campaign("c", J.group("g", J.variation("a", 50), J.variation("b", 50)))))
        let visitor = visitorId(inBuckets: 0...49, ofGroup: "g")
        XCTAssertEqual(file.assignedIds(visitorId: visitor), ["c/g/a"])
        XCTAssertEqual(file.assignedIds(visitorId: visitor, history: ["g": "b"]), ["c/g/b"])
        XCTAssertEqual(file.assignedIds(visitorId: visitor, history: ["other-group": "b"]), ["c/g/a"], "another group's entry does not apply")
    }

    func testHistoryNamingAVariationNoLongerInTheGroupGivesNothing() throws {
        let file = try BucketingFile(json: J.file(
            J.campaign("c1", J.group("g1", J.variation("a", 100))), J.campaign("c2", J.group("g2", J.variation("b", 100)))))
        XCTAssertEqual(file.assignedIds(visitorId: "v", history: ["g1": "removed"]), ["c2/g2/b"])
    }

    /// History applies only to the group the targeting chose: it never overrides targeting.
    func testHistoryDoesNotAssignAVisitorTheTargetingNoLongerSelects() throws {
        let file = try BucketingFile(json: J.file(J.campaign(
            "c", J.group("g", targeting: J.targeting([J.rule("plan", "EQUALS", #""gold""#)]), J.variation("a", 100)))))
        XCTAssertEqual(file.assignedIds(visitorId: "v", context: ["plan": .string("free")], history: ["g": "a"]), [])
    }

    func testPanicFileDecidesPanicAndNoCampaign() throws {
        let panic = try BucketingFile(json: Data(#"{"panic": true}"#.utf8))
        XCTAssertEqual(panic.decide(visitorId: "v", context: [:], history: [:]), BucketingDecision(panic: true, campaigns: []))
        XCTAssertEqual(panic.campaignCount, 0)

        let panicWithCampaigns = try BucketingFile(json: J.file(J.campaign("c", J.group("g", J.variation("a", 100))), panic: true))
        XCTAssertEqual(panicWithCampaigns.decide(visitorId: "v", context: [:], history: [:]), BucketingDecision(panic: true, campaigns: []))
        XCTAssertEqual(panicWithCampaigns.decide(visitorId: "v", context: [:], history: [:]).flags, [:])
    }

    func testHashIsOverTheUTF8BytesOfGroupIdThenVisitorId() throws {
        // BUCKETING.md: murmur("vgid" + "éééàëééééé") = 1846876870, bucket 70.
        XCTAssertEqual(bucket(of: "éééàëééééé", inGroup: "vgid"), 70)
        let file = try BucketingFile(json: J.file(J.campaign("c", J.group("vgid", J.variation("low", 70), J.variation("high", 30)))))
        XCTAssertEqual(file.assignedIds(visitorId: "éééàëééééé"), ["c/vgid/high"])
    }

    /// Decisions depend on the file's content only: not on the order of its objects' members,
    /// nor on the order the context was built in, nor on earlier decisions.
    func testDecisionDoesNotDependOnMemberOrderContextOrderOrEarlierDecisions() throws {
        let campaigns = (0..<60).map { index in
            J.campaign("c\(index)", J.group(
                "g\(index)",
                targeting: J.targeting([J.rule("n", index % 2 == 0 ? "GREATER_THAN" : "LOWER_THAN", "\(index)")],
                                       [J.rule("tag", "CONTAINS", "\"t\(index % 7)\"")]),
                J.variation("c\(index)a", 33, flags: #"{"shared": \#(index), "k\#(index % 5)": "a\#(index)"}"#),
                J.variation("c\(index)b", 33, flags: #"{"shared": -\#(index)}"#), J.variation("c\(index)c", 34)))
        }
        let data = J.file(campaigns)
        let parsed = try FSJSONValue(parsing: data)
        let ascending = parsed.jsonString()
        let descending = parsed.jsonStringWithKeysDescending()
        XCTAssertNotEqual(ascending, descending)
        let file = try BucketingFile(json: data)
        let files = [file, try BucketingFile(json: Data(ascending.utf8)), try BucketingFile(json: Data(descending.utf8))]

        var assignedSomething = 0
        for index in 0..<300 {
            let pairs: [(String, FSJSONValue)] = [("n", .int(Int64(index % 60))), ("tag", .string("T\(index % 7)")),
                                               ("sdk_osName", .string("Linux")), ("fs_client", .string("swift"))]
            let forward = Dictionary(uniqueKeysWithValues: pairs)
            var backward: [String: FSJSONValue] = [:]
            for (key, value) in pairs.reversed() { backward[key] = value }
            let decision = file.decide(visitorId: "visitor-\(index)", context: forward, history: [:])
            for (position, other) in files.enumerated() {
                XCTAssertEqual(other.decide(visitorId: "visitor-\(index)", context: backward, history: [:]), decision,
                               "visitor-\(index), file #\(position)")
            }
            assignedSomething += decision.campaigns.isEmpty ? 0 : 1
        }
        XCTAssertEqual(assignedSomething, 300, "every visitor is targeted by some campaign")
    }
}

private extension FSJSONValue {
    /// JSON text with every object's members in descending order of their keys.
    func jsonStringWithKeysDescending() -> String {
        switch self {
        case .array(let values):
            return "[" + values.map { $0.jsonStringWithKeysDescending() }.joined(separator: ",") + "]"
        case .object(let members):
            let texts = members.sorted { $0.key > $1.key }.map { FSJSONValue.string($0.key).jsonString() + ":" + $0.value.jsonStringWithKeysDescending() }
            return "{" + texts.joined(separator: ",") + "}"
        default:
            return jsonString()
        }
    }
}
