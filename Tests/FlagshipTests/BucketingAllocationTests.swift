import Foundation
import XCTest

@testable import Flagship

/// How the hash spreads visitors over a group's allocations, and how the assignment history
/// keeps them where they were when a new file changes those allocations.
final class BucketingAllocationTests: XCTestCase {
    private typealias J = BucketingJSON
    private let visitorCount = 100_000

    func testFiftyFiftyGroupSplitsVisitorsWithinOnePoint() throws {
        let file = try BucketingFile(json: J.file(J.campaign("c", J.group("c7f1b2e0vg", J.variation("a", 50), J.variation("b", 50)))))
        let shares = share(of: file, visitors: visitorCount)
        XCTAssertEqual(shares.keys.sorted(), ["a", "b"])
        XCTAssertEqual(shares["a"] ?? 0, 0.50, accuracy: 0.01)
        XCTAssertEqual(shares["b"] ?? 0, 0.50, accuracy: 0.01)
    }

    func testThirtyFourThirtyThreeThirtyThreeGroupSplitsVisitorsWithinOnePoint() throws {
        let file = try BucketingFile(json: J.file(J.campaign(
            "c", J.group("d2k9q0vg", J.variation("a", 34), J.variation("b", 33), J.variation("c", 33)))))
        let shares = share(of: file, visitors: visitorCount)
        XCTAssertEqual(shares.keys.sorted(), ["a", "b", "c"])
        XCTAssertEqual(shares["a"] ?? 0, 0.34, accuracy: 0.01)
        XCTAssertEqual(shares["b"] ?? 0, 0.33, accuracy: 0.01)
        XCTAssertEqual(shares["c"] ?? 0, 0.33, accuracy: 0.01)
    }

    func testPartialAllocationLeavesItsShareOfVisitorsOut() throws {
        let file = try BucketingFile(json: J.file(J.campaign("c", J.group("e5vg", J.variation("a", 10), J.variation("b", 15)))))
        let shares = share(of: file, visitors: visitorCount)
        XCTAssertEqual(shares["a"] ?? 0, 0.10, accuracy: 0.01)
        XCTAssertEqual(shares["b"] ?? 0, 0.15, accuracy: 0.01)
        XCTAssertEqual(shares["none"] ?? 0, 0.75, accuracy: 0.01)
    }

    /// A new file moves allocations from 50/50 to 10/90: remembered visitors stay, new ones follow
    /// the new split.
    func testVisitorKeepsItsVariationWhenANewFileChangesTheAllocations() throws {
        let before = try BucketingFile(json: J.file(J.campaign("c", J.group("g", J.variation("a", 50), J.variation("b", 50)))))
        let after = try BucketingFile(json: J.file(J.campaign("c", J.group("g", J.variation("a", 10), J.variation("b", 90)))))
        let moved = visitorId(inBuckets: 10...49, ofGroup: "g")

        let first = try XCTUnwrap(before.decide(visitorId: moved, context: [:], history: [:]).campaigns.first)
        XCTAssertEqual(first.variationId, "a")
        let history = [first.variationGroupId: first.variationId]
        XCTAssertEqual(after.assignedIds(visitorId: moved, history: history), ["c/g/a"], "remembered: not reallocated")
        XCTAssertEqual(after.assignedIds(visitorId: moved), ["c/g/b"], "without history the new split moves it")
    }

    func testVisitorWhoseVariationIsRemovedGetsNothingFromThatCampaign() throws {
        let before = try BucketingFile(json: J.file(J.campaign("c", J.group("g", J.variation("a", 50), J.variation("b", 50)))))
        let after = try BucketingFile(json: J.file(J.campaign("c", J.group("g", J.variation("b", 100)))))
        let visitor = visitorId(inBuckets: 0...49, ofGroup: "g")
        XCTAssertEqual(before.assignedIds(visitorId: visitor), ["c/g/a"])
        XCTAssertEqual(after.assignedIds(visitorId: visitor, history: ["g": "a"]), [])
    }

    /// The upstream fixtures: group `c20j8bk3fk9hdphqtd2g` is 34/33/33, then 0/0/100 (realloc), then
    /// loses its variation `…3g` (removed_variation). Each visitor carries the history of its first decision.
    func testUpstreamReallocationFixturesKeepRememberedVisitors() throws {
        let directory = try Conformance.bucketingDirectory().appendingPathComponent("fixtures")
        let original = try BucketingFile(json: Data(contentsOf: directory.appendingPathComponent("dotnet_Bucketing.json")))
        let reallocated = try BucketingFile(json: Data(contentsOf: directory.appendingPathComponent("dotnet_Bucketing_realloc.json")))
        let removed = try BucketingFile(json: Data(contentsOf: directory.appendingPathComponent("dotnet_Bucketing_removed_variation.json")))
        let group = "c20j8bk3fk9hdphqtd2g"
        let removedVariation = "c20j8bk3fk9hdphqtd3g"

        var lostTheRemovedVariation = 0
        for index in 0..<1_000 {
            let visitor = "visitor-\(index)"
            let first = original.decide(visitorId: visitor, context: [:], history: [:])
            let history = Dictionary(uniqueKeysWithValues: first.campaigns.map { ($0.variationGroupId, $0.variationId) })
            XCTAssertEqual(reallocated.decide(visitorId: visitor, context: [:], history: history).campaigns.map(\.variationId),
                           first.campaigns.map(\.variationId), "\(visitor) keeps its variations")
            XCTAssertEqual(reallocated.decide(visitorId: visitor, context: [:], history: [:]).campaigns
                .first { $0.variationGroupId == group }?.variationId, "c20j9lgbcahhf2mvhbf0", "\(visitor) without history: the new 100%")

            let expected = first.campaigns.filter { $0.variationId != removedVariation }
            XCTAssertEqual(removed.decide(visitorId: visitor, context: [:], history: history).campaigns.map(\.variationId),
                           expected.map(\.variationId), "\(visitor) after the removal")
            lostTheRemovedVariation += first.campaigns.count - expected.count
        }
        XCTAssertEqual(Double(lostTheRemovedVariation) / 1_000, 0.33, accuracy: 0.05, "a third of them were in the removed variation")
    }

    /// Share of `visitors` generated ids per variation id (`"none"`: the campaign gave nothing).
    private func share(of file: BucketingFile, visitors: Int) -> [String: Double] {
        var counts: [String: Int] = [:]
        for index in 0..<visitors {
            let variation = file.decide(visitorId: "\(index * 7_919 + 1_000_003)-vid", context: [:], history: [:]).campaigns.first?.variationId
            counts[variation ?? "none", default: 0] += 1
        }
        return counts.mapValues { Double($0) / Double(visitors) }
    }
}
