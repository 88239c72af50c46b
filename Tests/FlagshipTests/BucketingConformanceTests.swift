import Foundation
import XCTest

@testable import Flagship

/// `../shared/conformance`, read in place: every whole-file case and every single-rule row.
final class BucketingConformanceTests: XCTestCase {
    func testEveryBucketingCase() throws {
        try Self.checkEveryBucketingCase { try BucketingFile(json: $0) }
    }

    /// Every whole-file case of `bucketing-cases.json`, each file read once by `read` (its JSON,
    /// or the store's compiled form of it): the campaigns, flags and panic it expects.
    static func checkEveryBucketingCase(file read: (Data) throws -> BucketingFile,
                                        fileName: StaticString = #filePath, line: UInt = #line) throws {
        let directory = try Conformance.bucketingDirectory()
        let document = try Conformance.bucketingDocument("bucketing-cases.json")
        guard case .array(let cases)? = document["cases"], !cases.isEmpty else {
            return XCTFail("bucketing-cases.json has no cases", file: fileName, line: line)
        }
        var files: [String: BucketingFile] = [:]
        for entry in cases {
            let id = entry["id"]?.stringValue ?? "?"
            guard let name = entry["bucketingFile"]?.stringValue, let visitorId = entry["visitorId"]?.stringValue,
                  case .array(let expectedCampaigns)? = entry["expected"]?["campaigns"],
                  case .object(let expectedFlags)? = entry["expected"]?["flags"] else {
                XCTFail("case \(id): unreadable (\(entry.jsonString()))", file: fileName, line: line)
                continue
            }
            let file: BucketingFile
            if let known = files[name] {
                file = known
            } else {
                do {
                    file = try read(Data(contentsOf: directory.appendingPathComponent(name)))
                } catch {
                    XCTFail("case \(id): \(name) does not parse: \(error)", file: fileName, line: line)
                    continue
                }
                files[name] = file
            }
            let history = (entry["assignmentsHistory"]?.objectValue ?? [:]).compactMapValues(\.stringValue)
            let decision = file.decide(visitorId: visitorId, context: entry["context"]?.objectValue ?? [:], history: history)

            let expectedIds = expectedCampaigns.map { campaign in
                ["campaignId", "variationGroupId", "variationId"].map { campaign[$0]?.stringValue ?? "?" }.joined(separator: "/")
            }
            let ids = decision.campaigns.map { "\($0.campaignId)/\($0.variationGroupId)/\($0.variationId)" }
            let why = entry["source"]?.stringValue ?? ""
            XCTAssertEqual(ids, expectedIds, "case \(id) (\(why)): campaigns differ", file: fileName, line: line)
            XCTAssertEqual(decision.flags, expectedFlags, "case \(id) (\(why)): flags differ: got \(FSJSONValue.object(decision.flags).jsonString())",
                           file: fileName, line: line)
            XCTAssertEqual(decision.panic, entry["expected"]?["panic"]?.boolValue ?? false, "case \(id): panic differs", file: fileName, line: line)
        }
        XCTAssertFalse(files.isEmpty, file: fileName, line: line)
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
            var visitorContext: [String: FSJSONValue] = [key: context]
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
