import Foundation
import XCTest

@testable import Flagship

/// `FSDecisionExplanation`: the engine's decision, step by step. It must agree with `decide` on
/// every conformance case and on generated visitors, and each step must say what it saw.
final class DecisionExplanationTests: XCTestCase {
    private static let file = BucketingModeTests.bucketingFile(greenShare: 30)

    func testAnAllocationIsExplainedWithTheHashTheBucketAndTheRangeItFellIn() throws {
        let explanation = try FSDecisionExplanation(bucketingFile: Self.file, visitorId: "alice", context: ["isVip": false])

        XCTAssertEqual(explanation.fileVersion, SHA256.hex(of: Self.file))
        XCTAssertEqual(explanation.campaigns.map(\.campaignId), ["c_checkout", "c_vip"])
        let checkout = explanation.campaigns[0]
        XCTAssertEqual(checkout.decidedBy, .allocation)
        XCTAssertEqual(checkout.campaignType, "ab")
        let group = try XCTUnwrap(checkout.variationGroups.first)
        XCTAssertTrue(group.matched)
        XCTAssertEqual(group.targetingGroups.first?.conditions.first?.key, "fs_all_users")
        let bucket = try XCTUnwrap(group.bucket)
        var hash = MurmurHash3.State()
        hash.append(utf8Of: "vg_checkout" + "alice")
        XCTAssertEqual(bucket.hash, hash.finalized())
        XCTAssertEqual(bucket.bucket, Int(bucket.hash % 100))
        XCTAssertEqual(bucket.ranges.map(\.variationId), ["v_blue", "v_green"])
        XCTAssertEqual(bucket.ranges.map(\.lower), [0, 70])
        XCTAssertEqual(bucket.ranges.map(\.upper), [70, 100])
        let landed = try XCTUnwrap(bucket.ranges.first { $0.holds(bucket.bucket) })
        XCTAssertEqual(landed.variationId, checkout.variationId)
    }

    func testATargetingMissNamesEachConditionWithTheContextsValue() throws {
        let explanation = try FSDecisionExplanation(bucketingFile: Self.file, visitorId: "bob", context: ["isVip": false])
        let vip = explanation.campaigns[1]

        XCTAssertEqual(vip.decidedBy, .targetingMiss)
        XCTAssertNil(vip.variationId)
        let condition = try XCTUnwrap(vip.variationGroups.first?.targetingGroups.first?.conditions.first)
        XCTAssertEqual(condition, FSConditionExplanation(key: "isVip", operator: "EQUALS", expected: "true", contextValue: "false", matched: false))
        XCTAssertNil(vip.variationGroups.first?.bucket, "no bucket for a group that did not target the visitor")

        let absent = try FSDecisionExplanation(bucketingFile: Self.file, visitorId: "bob").campaigns[1]
        XCTAssertNil(absent.variationGroups.first?.targetingGroups.first?.conditions.first?.contextValue, "a key the context lacks")
    }

    func testTheHistoryDecidesAndAVanishedVariationIsNamed() throws {
        let kept = try FSDecisionExplanation(bucketingFile: Self.file, visitorId: "carol",
                                             assignmentsHistory: ["vg_checkout": "v_green"]).campaigns[0]
        XCTAssertEqual(kept.decidedBy, .history)
        XCTAssertEqual(kept.variationId, "v_green")
        XCTAssertNil(kept.variationGroups.first?.bucket, "the history decided: no bucket")

        let gone = try FSDecisionExplanation(bucketingFile: Self.file, visitorId: "carol",
                                             assignmentsHistory: ["vg_checkout": "v_purple"]).campaigns[0]
        XCTAssertEqual(gone.decidedBy, .rememberedVariationGone)
        XCTAssertNil(gone.variationId)
    }

    func testAVisitorOutsideEveryAllocationIsUnallocatedAndAPanicFileExplainsNothing() throws {
        let noShare = BucketingModeTests.bucketingFile(greenShare: 0)
        let partial = try XCTUnwrap(String(data: noShare, encoding: .utf8)?
            .replacingOccurrences(of: #""allocation":100,"id":"v_blue""#, with: #""allocation":0,"id":"v_blue""#))
        let explanation = try FSDecisionExplanation(bucketingFile: Data(partial.utf8), visitorId: "dan")
        XCTAssertEqual(explanation.campaigns[0].decidedBy, .unallocated)
        XCTAssertEqual(explanation.campaigns[0].variationGroups.first?.bucket?.ranges.map(\.upper), [0, 0])

        let panic = try FSDecisionExplanation(bucketingFile: Data(#"{"panic":true}"#.utf8), visitorId: "dan")
        XCTAssertTrue(panic.panic)
        XCTAssertEqual(panic.campaigns, [])
    }

    func testAnUnusableFileAndAnInvalidContextValueAreClearErrors() {
        XCTAssertThrowsError(try FSDecisionExplanation(bucketingFile: Data("{".utf8), visitorId: "v")) { error in
            guard (error as? FSDecisionExplanationError)?.code == .unusableFile else { return XCTFail("\(error)") }
            XCTAssertTrue("\(error)".hasPrefix("The bucketing file is unusable:"), "\(error)")
        }
        XCTAssertThrowsError(try FSDecisionExplanation(bucketingFile: Self.file, visitorId: "v", context: ["when": Date()])) { error in
            XCTAssertEqual(error as? FSDecisionExplanationError, .invalidContextValue(key: "when"))
        }
    }

    /// The explanation and the decision come from one walk: they agree on every conformance case.
    func testTheExplanationAgreesWithTheDecisionOnEveryConformanceCase() throws {
        let directory = try Conformance.bucketingDirectory()
        let document = try Conformance.bucketingDocument("bucketing-cases.json")
        guard case .array(let cases)? = document["cases"], !cases.isEmpty else { return XCTFail("no cases") }
        var files: [String: BucketingFile] = [:]
        var compared = 0
        for entry in cases {
            guard let name = entry["bucketingFile"]?.stringValue, let visitorId = entry["visitorId"]?.stringValue else { continue }
            let file: BucketingFile
            if let parsed = files[name] {
                file = parsed
            } else {
                guard let parsed = try? BucketingFile(json: Data(contentsOf: directory.appendingPathComponent(name))) else { continue }
                files[name] = parsed
                file = parsed
            }
            let context = entry["context"]?.objectValue ?? [:]
            let history = (entry["assignmentsHistory"]?.objectValue ?? [:]).compactMapValues(\.stringValue)
            assertAgreement(file, visitorId: visitorId, context: context, history: history, "case \(entry["id"]?.stringValue ?? "?")")
            compared += 1
        }
        XCTAssertGreaterThan(compared, 10)
    }

    func testTheExplanationAgreesWithTheDecisionOnGeneratedVisitors() throws {
        let file = try BucketingFile(json: Self.file)
        for index in 0..<2_000 {
            assertAgreement(file, visitorId: "visitor-\(index)", context: ["isVip": .bool(index % 3 == 0)], history: [:], "visitor \(index)")
        }
    }

    private func assertAgreement(_ file: BucketingFile, visitorId: String, context: [String: FSJSONValue], history: [String: String],
                                 _ message: String) {
        let decision = file.decide(visitorId: visitorId, context: context, history: history)
        let explanation = file.explain(visitorId: visitorId, context: context, history: history)
        XCTAssertEqual(explanation.panic, decision.panic, message)
        XCTAssertEqual(explanation.assigned.map { "\($0.campaignId)/\($0.variationGroupId ?? "")/\($0.variationId ?? "")" },
                       decision.campaigns.map { "\($0.campaignId)/\($0.variationGroupId)/\($0.variationId)" }, message)
        for campaign in explanation.campaigns {
            let tried = campaign.variationGroups
            XCTAssertTrue(tried.dropLast().allSatisfy { !$0.matched }, "only the last group tried may match: \(message)")
            XCTAssertEqual(tried.last?.matched ?? false, campaign.decidedBy != .targetingMiss, message)
            for group in tried {
                XCTAssertEqual(group.matched, group.targetingGroups.contains(where: \.matched), message)
                for targeting in group.targetingGroups {
                    XCTAssertEqual(targeting.matched, targeting.conditions.allSatisfy(\.matched), message)
                }
            }
            if campaign.decidedBy == .allocation, let bucket = tried.last?.bucket {
                let range = bucket.ranges.first { $0.holds(bucket.bucket) && $0.upper > $0.lower }
                XCTAssertEqual(range?.variationId, campaign.variationId, "the bucket's range is the variation: \(message)")
            }
        }
    }
}
