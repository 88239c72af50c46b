import Foundation
import XCTest

@testable import Flagship

/// What is refused (a typed error with a reason), and what is only made harmless and warned.
final class BucketingFileParsingTests: XCTestCase {
    private typealias J = BucketingJSON

    private func refusal(_ text: String) -> BucketingFileError? {
        do {
            _ = try BucketingFile(json: Data(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    // MARK: Refused documents

    func testDocumentsThatAreNoBucketingFileAreRefusedWithTheirReason() {
        XCTAssertEqual(refusal("")?.reason, "the document is empty")
        XCTAssertEqual(refusal("<html>")?.reason, "the document (6 bytes) is not valid JSON, or is truncated")
        XCTAssertEqual(refusal(#"{"campaigns": [{"id": "c1""#)?.reason, "the document (26 bytes) is not valid JSON, or is truncated")
        XCTAssertEqual(refusal(#"[{"id": "c1"}]"#)?.reason, "the document is JSON but not an object")
        XCTAssertEqual(refusal("42")?.reason, "the document is JSON but not an object")
        XCTAssertEqual(refusal(#"{"campaigns": {"id": "c1"}}"#)?.reason, #""campaigns" is not a list"#)
        XCTAssertEqual(refusal(#"{"campaigns": "none", "panic": true}"#)?.reason, #""campaigns" is not a list"#)
        XCTAssertEqual(refusal("{}")?.reason, #"it has no "campaigns" and is not in panic"#)
        XCTAssertEqual(refusal(#"{"panic": false, "campaigns": null}"#)?.reason, #"it has no "campaigns" and is not in panic"#)
    }

    func testRefusalDescribesItselfAsASentence() {
        XCTAssertEqual(refusal("{}")?.description, #"The bucketing file is unusable: it has no "campaigns" and is not in panic."#)
    }

    /// JSON can write numbers no `Double` holds; outside a flag's value such a number refuses the
    /// document, naming where it is (inside one, only that flag is dropped: `HostileBucketingFileTests`).
    func testNumberBeyondTheRangeOfADoubleOutsideAFlagValueMakesTheDocumentUnreadable() {
        let text = J.text(J.campaign("c", J.group("g", #"{"id": "v", "allocation": 1e400}"#)))
        XCTAssertEqual(refusal(text)?.reason, "campaigns[0].variationGroups[0].variations[0].allocation: the number 1e400 is beyond the range of a double")
    }

    func testEveryTruncationOfAFileIsRefusedAsTruncated() throws {
        let text = J.text(
            J.campaign("c1", J.group("g1", targeting: J.targeting([J.rule("age", "GREATER_THAN", "17"), J.rule("plan", "EQUALS", #"["a", "b"]"#)]),
                                     J.variation("v1", 50, flags: #"{"title": "é\n\"quoted\"", "n": 1.5}"#), J.variation("v2", 50))),
            J.campaign("c2", J.group("g2", J.variation("v3", 100))))
        let bytes = Array(text.utf8)
        var refused = 0
        for length in 0..<bytes.count {
            do {
                _ = try BucketingFile(json: Data(bytes[..<length]))
                XCTFail("the first \(length) bytes read as a file")
            } catch {
                XCTAssertEqual(error.reason, length == 0
                    ? "the document is empty" : "the document (\(length) bytes) is not valid JSON, or is truncated")
                refused += 1
            }
        }
        XCTAssertEqual(refused, bytes.count, "no prefix is a whole object")
        XCTAssertEqual(try BucketingFile(json: Data(bytes)).campaignCount, 2)
    }

    // MARK: Valid files

    func testPanicAloneIsAValidFile() throws {
        let file = try BucketingFile(json: Data(#"{"panic": true}"#.utf8))
        XCTAssertTrue(file.panic)
        XCTAssertEqual(file.campaignCount, 0)
        XCTAssertEqual(file.accountSettings, AccountSettings())
        XCTAssertEqual(file.warnings, [])
    }

    func testAccountSettingsAndUnknownFieldsAreRead() throws {
        let file = try BucketingFile(json: Data(#"""
            {"panic": false, "future": {"x": 1}, "accountSettings": {"enabledXPC": true, "enabled1V1T": false, "other": 3},
             "campaigns": []}
            """#.utf8))
        XCTAssertFalse(file.panic)
        XCTAssertEqual(file.accountSettings, AccountSettings(enabledXPC: true, enabled1V1T: false))
        XCTAssertEqual(file.warnings, [])
    }

    func testPanicThatIsNotABooleanIsReadAsFalse() throws {
        let file = try BucketingFile(json: Data(#"{"panic": "yes", "campaigns": []}"#.utf8))
        XCTAssertFalse(file.panic)
        XCTAssertEqual(file.warnings, [#""panic" is not a boolean; read as false"#])
    }

    // MARK: Campaigns and groups without ids

    func testCampaignWithoutAUsableIdIsSkipped() throws {
        let file = try BucketingFile(json: Data(#"""
            {"campaigns": [
              {"name": "no id", "variationGroups": []},
              {"id": 12, "variationGroups": []},
              {"id": "", "variationGroups": []},
              "not a campaign",
              \#(J.campaign("kept", J.group("g", J.variation("v", 100))))]}
            """#.utf8))
        XCTAssertEqual(file.campaignCount, 1)
        XCTAssertEqual(file.assignedIds(visitorId: "v"), ["kept/g/v"])
        XCTAssertEqual(file.warnings, [
            #"campaign #1 has no "id" (missing, empty or not a string); the campaign is skipped"#,
            #"campaign #2 has no "id" (missing, empty or not a string); the campaign is skipped"#,
            #"campaign #3 has no "id" (missing, empty or not a string); the campaign is skipped"#,
            "campaign #4 is not an object; the campaign is skipped",
        ])
    }

    /// Skipped, the group cannot be the first targeted one: the next group decides.
    func testVariationGroupWithoutAUsableIdIsSkipped() throws {
        let file = try BucketingFile(json: Data(#"""
            {"campaigns": [{"id": "c", "variationGroups": [
              {"id": null, "targeting": \#(J.everyone), "variations": [{"id": "lost", "allocation": 100}]},
              \#(J.group("g", J.variation("v", 100)))]}]}
            """#.utf8))
        XCTAssertEqual(file.assignedIds(visitorId: "v"), ["c/g/v"])
        XCTAssertEqual(file.warnings, [
            #"campaign "c", variation group #1 has no "id" (missing, empty or not a string); the group is skipped"#,
        ])
    }

    func testVariationGroupsOrVariationsThatAreNotListsAreEmpty() throws {
        let file = try BucketingFile(json: Data(#"""
            {"campaigns": [{"id": "c1", "variationGroups": {"id": "g"}},
                           {"id": "c2", "variationGroups": [{"id": "g2", "targeting": \#(J.everyone), "variations": 7}]}]}
            """#.utf8))
        XCTAssertEqual(file.campaignCount, 2)
        XCTAssertEqual(file.assignedIds(visitorId: "v"), [])
        XCTAssertEqual(file.warnings, [
            #"campaign "c1": "variationGroups" is not a list; read as empty"#,
            #"campaign "c2", variation group "g2": "variations" is not a list; read as empty"#,
        ])
    }

    /// Without an id the variation cannot be assigned, but it keeps its place in the allocation so
    /// that a fixed file later does not move the visitors of the other variations.
    func testVariationWithoutAnIdKeepsItsShareButGivesNothing() throws {
        let file = try BucketingFile(json: Data(#"""
            {"campaigns": [{"id": "c", "variationGroups": [{"id": "g", "targeting": \#(J.everyone), "variations": [
              {"name": "broken", "allocation": 50}, {"id": "v", "allocation": 50}, {"id": 3, "allocation": 0}]}]}]}
            """#.utf8))
        XCTAssertEqual(file.assignedIds(visitorId: visitorId(inBuckets: 0...49, ofGroup: "g")), [])
        XCTAssertEqual(file.assignedIds(visitorId: visitorId(inBuckets: 50...99, ofGroup: "g")), ["c/g/v"])
        XCTAssertEqual(file.warnings, [
            #"campaign "c", variation group "g", variation #1 has no "id" (missing, empty or not a string); a visitor in its 50% gets nothing from the campaign"#,
            #"campaign "c", variation group "g", variation #3 has no "id" (missing, empty or not a string); it is ignored"#,
        ])
    }

    /// Found by the bucketing fuzzer (Fuzz/Regressions/FuzzBucketing): a repeated id let the hash
    /// choose the second variation while the history, naming it by id, gave back the first.
    func testVariationRepeatingAnIdKeepsItsShareButGivesNothingSoTheHistoryAgreesWithTheHash() throws {
        let file = try BucketingFile(json: Data(#"""
            {"campaigns": [{"id": "c", "variationGroups": [{"id": "g", "targeting": \#(J.everyone), "variations": [
              {"id": "v", "allocation": 50, "modifications": {"type": "FLAG", "value": {"layout": "grid"}}},
              {"id": "v", "allocation": 50, "modifications": {"type": "FLAG", "value": {"layout": "list"}}}]}]}]}
            """#.utf8))
        let secondHalf = visitorId(inBuckets: 50...99, ofGroup: "g")

        XCTAssertEqual(file.assignedIds(visitorId: visitorId(inBuckets: 0...49, ofGroup: "g")), ["c/g/v"])
        XCTAssertEqual(file.assignedIds(visitorId: secondHalf), [])
        XCTAssertEqual(file.decide(visitorId: secondHalf, context: [:], history: ["g": "v"]).campaigns.map { $0.flags["layout"] }, [.string("grid")])
        XCTAssertEqual(file.warnings, [
            #"campaign "c", variation group "g", variation #2: its id "v" repeats an earlier variation's; a visitor in its share gets nothing from the campaign"#,
        ])
    }

    // MARK: Allocations

    func testNegativeOrNonNumericAllocationCountsAsZero() throws {
        let file = try BucketingFile(json: Data(#"""
            {"campaigns": [{"id": "c", "variationGroups": [{"id": "g", "targeting": \#(J.everyone), "variations": [
              {"id": "negative", "allocation": -50}, {"id": "text", "allocation": "50"}, {"id": "bool", "allocation": true},
              {"id": "object", "allocation": {"value": 50}}, {"id": "v", "allocation": 100}]}]}]}
            """#.utf8))
        for index in 0..<100 {
            XCTAssertEqual(file.assignedIds(visitorId: "visitor-\(index)"), ["c/g/v"])
        }
        XCTAssertEqual(file.warnings, [
            #"campaign "c", variation group "g", variation #1: "allocation" is negative (-50); counted as 0"#,
            #"campaign "c", variation group "g", variation #2: "allocation" is not a number; counted as 0"#,
            #"campaign "c", variation group "g", variation #3: "allocation" is not a number; counted as 0"#,
            #"campaign "c", variation group "g", variation #4: "allocation" is not a number; counted as 0"#,
        ])
    }

    func testHugeAllocationTakesEveryVisitor() throws {
        for huge in ["1e300", "18446744073709551615", "99999999999999999999999", "9223372036854775807"] {
            let file = try BucketingFile(json: J.file(J.campaign("c", J.group(
                "g", #"{"id": "big", "allocation": \#(huge)}"#, J.variation("never", 100)))))
            for index in 0..<50 {
                XCTAssertEqual(file.assignedIds(visitorId: "visitor-\(index)"), ["c/g/big"], huge)
            }
            XCTAssertEqual(file.warnings.count, 1, huge)
        }
    }

    func testAllocationsOverOneHundredLeaveTheLaterVariationsWhatRemains() throws {
        let file = try BucketingFile(json: J.file(J.campaign("c", J.group("g", J.variation("a", 80), J.variation("b", 80), J.variation("c", 40)))))
        XCTAssertEqual(file.assignedIds(visitorId: visitorId(inBuckets: 0...79, ofGroup: "g")), ["c/g/a"])
        XCTAssertEqual(file.assignedIds(visitorId: visitorId(inBuckets: 80...99, ofGroup: "g")), ["c/g/b"])
        XCTAssertEqual(file.warnings, [
            #"campaign "c", variation group "g": allocations sum to 200, over 100; the later variations get what remains of 100"#,
        ])
    }

    func testFractionalAllocationsAreSummedAsTheyAre() throws {
        let file = try BucketingFile(json: J.file(J.campaign("c", J.group(
            "g", #"{"id": "a", "allocation": 49.5}"#, #"{"id": "b", "allocation": 50.5}"#))))
        XCTAssertEqual(file.assignedIds(visitorId: visitorId(inBuckets: 49...49, ofGroup: "g")), ["c/g/a"])
        XCTAssertEqual(file.assignedIds(visitorId: visitorId(inBuckets: 50...50, ofGroup: "g")), ["c/g/b"])
    }

    // MARK: Targeting

    func testTargetingOfTheWrongShapeTargetsNobody() throws {
        let file = try BucketingFile(json: Data(#"""
            {"campaigns": [{"id": "c", "variationGroups": [
              {"id": "g1", "targeting": "everyone", "variations": [{"id": "v1", "allocation": 100}]},
              {"id": "g2", "targeting": {"targetingGroups": {"targetings": []}}, "variations": [{"id": "v2", "allocation": 100}]},
              {"id": "g3", "targeting": {"targetingGroups": [7, {"targetings": "all"}]}, "variations": [{"id": "v3", "allocation": 100}]},
              {"id": "g4", "targeting": {"targetingGroups": [{"targetings": [
                 12, {"operator": "EQUALS", "value": 1}, {"key": "k", "value": 1}, {"key": 5, "operator": "EQUALS", "value": 1},
                 {"key": "k", "operator": "EQUALS"}]}]}, "variations": [{"id": "v4", "allocation": 100}]}]}]}
            """#.utf8))
        XCTAssertEqual(file.assignedIds(visitorId: "v", context: ["k": .int(1)]), [])
        XCTAssertEqual(file.warnings, [
            #"campaign "c", variation group "g1": "targeting" is not an object; the group targets nobody"#,
            #"campaign "c", variation group "g2": "targetingGroups" is not a list; the group targets nobody"#,
            #"campaign "c", variation group "g3", targeting group #1 is not an object; it matches nobody"#,
            #"campaign "c", variation group "g3", targeting group #2: "targetings" is not a list; it matches nobody"#,
            #"campaign "c", variation group "g4", targeting group #1, rule #1 is not an object; it never matches"#,
            #"campaign "c", variation group "g4", targeting group #1, rule #2 has no "key"; it never matches"#,
            #"campaign "c", variation group "g4", targeting group #1, rule #3 (key "k") has no "operator"; it never matches"#,
            #"campaign "c", variation group "g4", targeting group #1, rule #4 has no "key"; it never matches"#,
            #"campaign "c", variation group "g4", targeting group #1, rule #5 (key "k", EQUALS) has no "value"; it never matches"#,
        ])
    }

    /// A broken rule spoils only its own targeting group: another group of the same targeting still matches.
    func testBrokenRuleSpoilsOnlyItsTargetingGroup() throws {
        let targeting = J.targeting([J.rule("k", "MATCHES_REGEX", #"".*""#)], [J.rule("k", "EQUALS", "1")])
        let file = try BucketingFile(json: J.file(J.campaign("c", J.group("g", targeting: targeting, J.variation("v", 100)))))
        XCTAssertEqual(file.assignedIds(visitorId: "v", context: ["k": .int(1)]), ["c/g/v"])
        XCTAssertEqual(file.assignedIds(visitorId: "v", context: ["k": .int(2)]), [])
    }

    /// Values of every wrong type in every place: every file still reads (each is an object with
    /// a list of campaigns), and deciding gives exactly what its usable parts say, over contexts
    /// of every kind: by hash (a visitor, no history) and from the history (group g → variation v).
    func testWrongTypesAnywhereAreReadAndDecideOnlyFromTheUsableParts() {
        let oddValues = ["null", "true", "-1", "1e300", #""text""#, "[]", "[null, 1]", "{}", #"{"a": []}"#]
        let nothing: (String) -> String = { _ in "nothing" }
        let cases: [(shape: (String) -> String, outcome: (String) -> String)] = [
            ({ #"{"panic": \#($0), "campaigns": []}"# }, { $0 == "true" ? "panic" : "nothing" }),
            ({ #"{"campaigns": [\#($0)]}"# }, nothing),
            ({ #"{"accountSettings": \#($0), "campaigns": []}"# }, nothing),
            ({ #"{"campaigns": [{"id": "c", "name": \#($0), "slug": \#($0), "type": \#($0), "variationGroups": \#($0)}]}"# }, nothing),
            ({ #"{"campaigns": [{"id": "c", "variationGroups": [\#($0)]}]}"# }, nothing),
            ({ #"{"campaigns": [{"id": "c", "variationGroups": [{"id": "g", "name": \#($0), "targeting": \#($0), "variations": \#($0)}]}]}"# }, nothing),
            ({ #"{"campaigns": [{"id": "c", "variationGroups": [{"id": "g", "targeting": \#(J.everyone), "variations": [\#($0)]}]}]}"# }, nothing),
            // Only an allocation of 1e300 takes visitors by hash; the history finds v whatever its allocation.
            ({ J.text(J.campaign("c", J.group("g", #"{"id": "v", "name": \#($0), "reference": \#($0), "allocation": \#($0), "modifications": \#($0)}"#))) },
             { $0 == "1e300" ? "c/g/v by hash, c/g/v by history" : "c/g/v by history" }),
            // Unusable modifications cost the flags, not the assignment.
            ({ J.text(J.campaign("c", J.group("g", #"{"id": "v", "allocation": 100, "modifications": {"type": \#($0), "value": \#($0)}}"#))) },
             { _ in "c/g/v by hash, c/g/v by history" }),
            // A targeting group without rules is dropped: nobody is targeted.
            ({ J.text(J.campaign("c", J.group("g", targeting: #"{"targetingGroups": [\#($0)]}"#, J.variation("v", 100)))) }, nothing),
            // EQUALS matches one context value only: the number 1e300.
            ({ J.text(J.campaign("c", J.group("g", targeting: J.targeting([#"{"key": "k", "operator": "EQUALS", "value": \#($0)}"#]), J.variation("v", 100)))) },
             { $0 == "1e300" ? "c/g/v by hash, c/g/v by history" : "nothing" }),
            // A rule without a usable key or operator never matches.
            ({ J.text(J.campaign("c", J.group("g", targeting: J.targeting([#"{"key": \#($0), "operator": \#($0), "value": \#($0)}"#]), J.variation("v", 100)))) }, nothing),
        ]
        let contexts: [[String: FSJSONValue]] = [[:], ["k": .null], ["k": .array([])], ["k": .string("")], ["k": .double(1e300)]]
        func ids(_ decision: BucketingDecision) -> [String] {
            decision.campaigns.map { "\($0.campaignId)/\($0.variationGroupId)/\($0.variationId)" }
        }
        for (number, testCase) in zip(1..., cases) {
            for odd in oddValues {
                let file: BucketingFile
                do {
                    file = try BucketingFile(json: Data(testCase.shape(odd).utf8))
                } catch {
                    XCTFail("shape \(number) with \(odd): refused, \(error.reason)")
                    continue
                }
                var panic = false
                var byHash: Set<String> = []
                var byHistory: Set<String> = []
                for context in contexts {
                    let hashed = file.decide(visitorId: "visitor", context: context, history: [:])
                    let remembered = file.decide(visitorId: "", context: context, history: ["g": "v"])
                    panic = panic || hashed.panic || remembered.panic
                    byHash.formUnion(ids(hashed))
                    byHistory.formUnion(ids(remembered))
                }
                let assigned = byHash.sorted().map { "\($0) by hash" } + byHistory.sorted().map { "\($0) by history" }
                let outcome = panic ? "panic" : (assigned.isEmpty ? "nothing" : assigned.joined(separator: ", "))
                XCTAssertEqual(outcome, testCase.outcome(odd), "shape \(number) with \(odd)")
            }
        }
    }

    func testEveryUpstreamFixtureReadsWithoutWarning() throws {
        let directory = try Conformance.bucketingDirectory().appendingPathComponent("fixtures")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.contains("ucket") && $0.hasSuffix(".json") }.sorted()
        XCTAssertGreaterThanOrEqual(names.count, 10)
        for name in names {
            let file = try BucketingFile(json: Data(contentsOf: directory.appendingPathComponent(name)))
            XCTAssertEqual(file.warnings, [], name)
        }
    }
}
