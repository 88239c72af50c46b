import Foundation
import XCTest

@testable import Flagship

/// `../shared/conformance`, read in place: every whole-file case and every single-rule row.
final class BucketingConformanceTests: XCTestCase {
    func testEveryBucketingCase() throws {
        let directory = try Conformance.bucketingDirectory()
        let document = try Conformance.bucketingDocument("bucketing-cases.json")
        guard case .array(let cases)? = document["cases"], !cases.isEmpty else {
            return XCTFail("bucketing-cases.json has no cases")
        }
        var files: [String: BucketingFile] = [:]
        for entry in cases {
            let id = entry["id"]?.stringValue ?? "?"
            guard let fileName = entry["bucketingFile"]?.stringValue, let visitorId = entry["visitorId"]?.stringValue,
                  case .array(let expectedCampaigns)? = entry["expected"]?["campaigns"],
                  case .object(let expectedFlags)? = entry["expected"]?["flags"] else {
                XCTFail("case \(id): unreadable (\(entry.jsonString()))")
                continue
            }
            let file: BucketingFile
            if let parsed = files[fileName] {
                file = parsed
            } else {
                do {
                    file = try BucketingFile(json: Data(contentsOf: directory.appendingPathComponent(fileName)))
                } catch {
                    XCTFail("case \(id): \(fileName) does not parse: \(error)")
                    continue
                }
                files[fileName] = file
            }
            let history = (entry["assignmentsHistory"]?.objectValue ?? [:]).compactMapValues(\.stringValue)
            let decision = file.decide(visitorId: visitorId, context: entry["context"]?.objectValue ?? [:], history: history)

            let expectedIds = expectedCampaigns.map { campaign in
                ["campaignId", "variationGroupId", "variationId"].map { campaign[$0]?.stringValue ?? "?" }.joined(separator: "/")
            }
            let ids = decision.campaigns.map { "\($0.campaignId)/\($0.variationGroupId)/\($0.variationId)" }
            let why = entry["source"]?.stringValue ?? ""
            XCTAssertEqual(ids, expectedIds, "case \(id) (\(why)): campaigns differ")
            XCTAssertEqual(decision.flags, expectedFlags, "case \(id) (\(why)): flags differ: got \(JSONValue.object(decision.flags).jsonString())")
            XCTAssertEqual(decision.panic, entry["expected"]?["panic"]?.boolValue ?? false, "case \(id): panic differs")
        }
    }

    /// Each row: one rule `{key (default "k"), operator, value: targeting}` against a context
    /// mapping the key to `context`; `"<absent>"` leaves the key out, `"<visitor id: X>"` makes X
    /// the visitor id, `"<anything>"` is any value.
    func testEveryTargetingRow() throws {
        let document = try Conformance.bucketingDocument("targeting-cases.json")
        guard case .array(let rows)? = document["rows"], !rows.isEmpty else {
            return XCTFail("targeting-cases.json has no rows")
        }
        for (index, row) in rows.enumerated() {
            guard let op = row["operator"]?.stringValue, let targeting = row["targeting"], let context = row["context"],
                  let expected = row["match"]?.boolValue else {
                XCTFail("row #\(index + 1): unreadable (\(row.jsonString()))")
                continue
            }
            let key = row["key"]?.stringValue ?? "k"
            var visitorId = "conformance_visitor"
            var visitorContext: [String: JSONValue] = [key: context]
            if let placeholder = context.stringValue, placeholder.hasPrefix("<"), placeholder.hasSuffix(">") {
                visitorContext = [:]
                if placeholder.hasPrefix("<visitor id: ") {
                    visitorId = String(placeholder.dropFirst("<visitor id: ".count).dropLast())
                } else if placeholder == "<anything>" {
                    visitorContext = [key: .string("anything")]
                }
            }
            let matched = try ruleMatches(key: key, op, targeting.jsonString(), context: visitorContext, visitorId: visitorId)
            XCTAssertEqual(matched, expected, "row #\(index + 1): \(op) key \(key), context \(context.jsonString()), value \(targeting.jsonString())")
        }
    }
}
