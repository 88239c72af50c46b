import Foundation
import FlagshipLocalServer
import XCTest

@testable import Flagship

/// A large file's JSON is read in parts side by side (`BucketingFile.readInParts`): these tests
/// hold it to the reading in order, the same campaigns, rules and context slots, warnings, keys,
/// version and tree, on generated files, on files written to cross the parts' borders, and on
/// documents changed byte by byte; and what does not read in parts is read in order.
final class BucketingFileInPartsTests: XCTestCase {
    /// The whole of what a file read holds, compared through the store's compiled form (every
    /// campaign, group, rule as written and compiled with its slot, variation and flag; the
    /// warnings, keys and version), beside what the compiled form leaves out.
    private func assertSame(_ parts: BucketingFile, _ order: BucketingFile, _ message: String,
                            file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(CompiledBucketingFile.encode(parts), CompiledBucketingFile.encode(order), message, file: file, line: line)
        XCTAssertEqual(parts.warnings, order.warnings, message, file: file, line: line)
        XCTAssertEqual(parts.contextKeys.names, order.contextKeys.names, message, file: file, line: line)
        XCTAssertEqual(parts.readsVisitorId, order.readsVisitorId, message, file: file, line: line)
        XCTAssertEqual(parts.version, order.version, message, file: file, line: line)
        XCTAssertEqual(parts.campaigns.count, order.campaigns.count, message, file: file, line: line)
    }

    /// Read in `parts` parts and in order: both refused for the same reason, or both read alike.
    /// Returns whether the reading in order read it.
    @discardableResult
    private func assertReadsAlike(_ data: Data, parts: Int, _ message: String,
                                  file: StaticString = #filePath, line: UInt = #line) -> Bool {
        let inOrder = Result { () throws(BucketingFileError) in try BucketingFile(json: data, parts: 1) }
        let inParts = Result { () throws(BucketingFileError) in try BucketingFile(json: data, parts: parts) }
        switch (inParts, inOrder) {
        case (.success(let one), .success(let other)): assertSame(one, other, message, file: file, line: line)
        case (.failure(let one), .failure(let other)): XCTAssertEqual(one, other, message, file: file, line: line)
        default: XCTFail("\(message): \(inParts) in parts, \(inOrder) in order", file: file, line: line)
        }
        return (try? inOrder.get()) != nil
    }

    func testGeneratedFilesReadInPartsAsInOrderAndDecideAlike() throws {
        var random = SplitMix64(seed: 9)
        var warned = 0
        for number in 0..<40 {
            let data = GeneratedBucketingFile.file(&random, campaigns: 1...40)
            let order = try BucketingFile(json: data, parts: 1)
            warned += order.warnings.count
            for parts in [2, 3, 8, 64] {
                let inParts = try XCTUnwrap(BucketingFile.readInParts(data, parts: parts, keepingTree: false), "file \(number)")
                assertSame(inParts.file, order, "file \(number), \(parts) parts")
                for visitor in 0..<10 {
                    let context = GeneratedBucketingFile.context(&random)
                    XCTAssertEqual(inParts.file.decide(visitorId: "visitor-\(visitor)", context: context, history: [:]),
                                   order.decide(visitorId: "visitor-\(visitor)", context: context, history: [:]), "file \(number)")
                }
            }
            // The tree kept for the change events is the tree of a parse in order.
            let kept = try BucketingFile.readKeepingTree(json: data, parts: 3)
            let parsed = try BucketingFile.parse(json: data)
            XCTAssertEqual(kept.parsed.root, parsed.root, "file \(number)")
            XCTAssertEqual(BucketingFileCampaigns(parsed: kept.parsed, file: kept.file).digests,
                           BucketingFileCampaigns(parsed: parsed, file: order).digests, "file \(number)")
        }
        // The files gave warnings of every kind to compare.
        XCTAssertGreaterThan(warned, 200)
    }

    /// Each part reads with a reader of its own: the keys its rules read come in another order
    /// than in the whole file, an unknown operator is named again, a flag is taken out, the
    /// visitor id read only in the last part. Taken in order, all come out as a reading in order
    /// gives them, and a visitor is decided on the slots of the whole file.
    func testWhatEachPartReadsApartComesOutAsInTheWholeFile() throws {
        func campaign(_ number: Int, _ groups: [[String]], flags: String = #"{"color": "red"}"#) -> String {
            BucketingJSON.campaign("c\(number)", BucketingJSON.group(
                "g\(number)", targeting: BucketingJSON.targeting(groups), BucketingJSON.variation("v\(number)", 100, flags: flags)))
        }
        let campaigns = [
            campaign(0, [[BucketingJSON.rule("plan", "EQUALS", #""gold""#)], [BucketingJSON.rule("age", "NO_SUCH", "1")]]),
            campaign(1, [[BucketingJSON.rule("age", "GREATER_THAN", "20")]], flags: #"{"big": 1e400, "ok": true}"#),
            campaign(2, [[BucketingJSON.rule("country", "EQUALS", #""fr""#)], [BucketingJSON.rule("plan", "NO_SUCH", "1")]]),
            campaign(3, [[BucketingJSON.rule("vip", "EQUALS", "true")], [BucketingJSON.rule("x", "OTHER", "1")]]),
            campaign(4, [[BucketingJSON.rule("fs_users", "EQUALS", #""visitor-1""#)], [BucketingJSON.rule("country", "EQUALS", #""de""#)]],
                     flags: #"{"text": "a \"quoted\" ] } [ {", "deep": [[{"a": "\\\\"}]]}"#),
        ]
        // The root's other members after the campaigns: a `panic` that warns, the settings.
        let text = #"{ "campaigns" :[ "# + campaigns.joined(separator: " ,\n ")
            + #" ] , "panic": "no", "accountSettings": {"enabledXPC": true}}"#
        let data = Data(text.utf8)
        let order = try BucketingFile(json: data, parts: 1)
        XCTAssertEqual(order.contextKeys.names, ["plan", "age", "country", "vip"])
        XCTAssertEqual(order.warnings.filter { $0.contains("NO_SUCH") }.count, 1)
        XCTAssertTrue(order.warnings.first?.contains(#"flag "big" was dropped"#) == true, "\(order.warnings)")
        XCTAssertTrue(order.readsVisitorId)
        XCTAssertTrue(order.accountSettings.enabledXPC)
        for parts in 2...6 {
            let inParts = try XCTUnwrap(BucketingFile.readInParts(data, parts: parts, keepingTree: true))
            assertSame(inParts.file, order, "\(parts) parts")
            XCTAssertEqual(inParts.file.accountSettings, order.accountSettings)
            XCTAssertEqual(inParts.file.panic, order.panic)
            XCTAssertEqual(inParts.parsed?.root, try BucketingFile.parse(json: data).root, "\(parts) parts")
            XCTAssertEqual(inParts.parsed?.parseWarnings, try BucketingFile.parse(json: data).parseWarnings)
            // The later parts' rules read the slots the whole file gave their keys.
            for (visitorId, context) in [("visitor-1", ["country": FSJSONValue.string("fr"), "vip": .bool(true)]),
                                         ("visitor-2", ["country": .string("de"), "age": .int(30)]), ("visitor-2", ["plan": .string("gold")])] {
                XCTAssertEqual(inParts.file.assignedIds(visitorId: visitorId, context: context),
                               order.assignedIds(visitorId: visitorId, context: context), "\(parts) parts, \(context)")
            }
            XCTAssertEqual(inParts.file.assignedIds(visitorId: "visitor-1", context: ["country": .string("fr"), "vip": .bool(true)]),
                           ["c2/g2/v2", "c3/g3/v3", "c4/g4/v4"])
            XCTAssertEqual(inParts.file.assignedIds(visitorId: "visitor-2", context: ["country": .string("de"), "age": .int(30)]),
                           ["c1/g1/v1", "c4/g4/v4"])
        }
    }

    /// A document that does not read in parts is read in order, which refuses it for the same
    /// reason (or reads it) as before: the pass over the campaigns checks only where they lie.
    func testWhatDoesNotReadInPartsIsReadInOrderWithTheSameWords() throws {
        let good = [BucketingJSON.campaign("c1", BucketingJSON.group("g1", BucketingJSON.variation("v1", 100))),
                    BucketingJSON.campaign("c2", BucketingJSON.group("g2", BucketingJSON.variation("v2", 100)))]
        let documents = [
            #"{"campaigns": [\#(good[0]), \#(good[1])], "campaigns": []}"#,  // a repeated key: the last wins
            #"{"campaigns": [\#(good[0]), {"id": "c\ud800", "variationGroups": []}]}"#,  // unusable outside a flag
            #"{"campaigns": [\#(good[0]), {"id": "c3" "variationGroups": []}]}"#,  // a missing comma
            #"{"campaigns": [\#(good[0]), tru, \#(good[1])]}"#,  // a broken literal
            #"{"campaigns": [\#(good[0]), 12abc]}"#,
            #"{"campaigns": [\#(good[0]), \#(good[1])]} x"#,  // after the root
            #"{"campaigns": [\#(good[0]), {"id": "c3"]]}"#,  // a bracket that does not match
            #"{"campaigns": [\#(good[0]), \#(good[1])"#,  // cut
            #"{"campaigns": null, "panic": true}"#,
            #"{"campaigns": {"c1": 1}}"#,
            #"{"panic": true}"#,
            #"{"campaigns": [], "name": 1e400}"#,  // unusable at the root
            #"[\#(good[0])]"#,
            #"{"campaigns": [\#(good[0]), 7, "text", null, [\#(good[1])]]}"#,  // elements that are no campaign
        ]
        for document in documents {
            assertReadsAlike(Data(document.utf8), parts: 3, document)
        }
        XCTAssertNil(BucketingFile.readInParts(Data(documents[0].utf8), parts: 3, keepingTree: false))
        XCTAssertNotNil(BucketingFile.readInParts(Data(documents[13].utf8), parts: 3, keepingTree: false))
    }

    /// Whatever one byte of a file is changed to, it is read in parts as in order: refused for
    /// the same reason, or read alike.
    func testAFileChangedAnywhereReadsInPartsAsInOrder() throws {
        let data = BucketingJSON.file(
            BucketingJSON.campaign("c1", BucketingJSON.group("g1", targeting: BucketingJSON.targeting(
                [BucketingJSON.rule("plan", "CONTAINS", #"["go", "si"]"#), BucketingJSON.rule("age", "NO_SUCH", "20")]),
                BucketingJSON.variation("v1", 50, flags: #"{"a": "x\"y"}"#), BucketingJSON.variation("v2", 50))),
            BucketingJSON.campaign("c2", BucketingJSON.group("g2", targeting: BucketingJSON.targeting(
                [BucketingJSON.rule("fs_users", "EQUALS", #""v""#)], [BucketingJSON.rule("vip", "NO_SUCH", "true")]),
                BucketingJSON.variation("v3", 100, flags: #"{"b": 1.5}"#))),
            BucketingJSON.campaign("c3", BucketingJSON.group("g3", targeting: BucketingJSON.targeting(
                [BucketingJSON.rule("age", "LOWER_THAN", "9")]), BucketingJSON.variation("v4", 100))))
        var refused = 0, read = 0
        for index in data.indices {
            for replacement in Set<UInt8>([0x22, 0x2C, 0x5C, 0x5D, data[index] ^ 1]) where replacement != data[index] {
                var changed = data
                changed[index] = replacement
                if assertReadsAlike(changed, parts: 3, "byte \(index) = \(replacement)") { read += 1 } else { refused += 1 }
            }
        }
        XCTAssertGreaterThan(refused, 300)
        XCTAssertGreaterThan(read, 100)
    }

    /// By default a file is read in parts from 1 MiB on a machine of several cores, in order below.
    func testALargeFileIsReadInPartsByDefault() throws {
        let small = BucketingJSON.file(BucketingJSON.campaign("c1", BucketingJSON.group("g1", BucketingJSON.variation("v1", 100))))
        XCTAssertNil(BucketingFile.parts(reading: small, nil))
        XCTAssertEqual(BucketingFile.parts(reading: small, 3), 3)
        XCTAssertNil(BucketingFile.parts(reading: small, 1))
        let large = Data(count: BucketingFile.readInPartsBytes)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        XCTAssertEqual(BucketingFile.parts(reading: large, nil), cores > 1 ? min(8, 2 * cores) : nil)
    }
}
