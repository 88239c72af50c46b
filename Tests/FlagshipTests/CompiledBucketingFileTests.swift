import Foundation
import XCTest

import FlagshipStore

@testable import Flagship

/// The bucketing file's compiled form (what the store keeps so that a start decides without
/// parsing the JSON): its binary layout read back exactly, refused whole when damaged, and
/// deciding as the JSON does on every conformance case.
final class CompiledBucketingFileTests: XCTestCase {
    /// Compiles `data` as a download would, then reads it back as a start does.
    private func roundTrip(_ data: Data) throws -> (json: BucketingFile, compiled: BucketingFile, campaigns: BucketingFileCampaigns, blob: [UInt8]) {
        let parsed = try BucketingFile.parse(json: data)
        let file = try BucketingFile(parsed: parsed)
        let digests = BucketingFileCampaigns(parsed: parsed, file: file).digests
        let blob = CompiledBucketingFile.encode(file, digests: digests)
        let decoded = try CompiledBucketingFile.decode(blob)
        return (file, decoded.file, decoded.campaigns, blob)
    }

    // MARK: The binary layout

    func testEveryKindOfValueIsReadBackExactly() throws {
        let value: FSJSONValue = .object([
            "null": .null, "yes": .bool(true), "no": .bool(false),
            "ints": .array([.int(0), .int(-1), .int(.max), .int(.min), .int(9_007_199_254_740_993)]),
            "doubles": .array([.double(1.0), .double(-0.0), .double(1e300), .double(0.1), .double(9_007_199_254_740_994)]),
            "text": .array([.string(""), .string("é \u{1F600} \"quoted\" \\ \n"), .string(String(repeating: "x", count: 300))]),
            "nested": .object(["a": .array([.object([:]), .array([])])]),
            "": .string("an empty key"),
        ])
        var bytes: [UInt8] = []
        BinaryJSON.append(value, to: &bytes)

        let read = try bytes.withUnsafeBytes { try BinaryJSON.decode($0) }

        XCTAssertEqual(read, value)
        // An integer stays an integer and a double a double, bit for bit (JSON text would not say).
        guard case .array(let doubles)? = read["doubles"], case .double(let zero) = doubles[1], case .array(let ints)? = read["ints"] else {
            return XCTFail("not read back as written: \(read)")
        }
        XCTAssertEqual(zero.sign, .minus)
        XCTAssertEqual(ints[4], .int(9_007_199_254_740_993))
    }

    func testEqualValuesGiveEqualBytes() {
        var first: [UInt8] = [], second: [UInt8] = []
        BinaryJSON.append(.object(["b": .int(1), "a": .int(2), "c": .object(["y": .null, "x": .null])]), to: &first)
        BinaryJSON.append(.object(["c": .object(["x": .null, "y": .null]), "a": .int(2), "b": .int(1)]), to: &second)
        XCTAssertEqual(first, second)
    }

    func testEveryCutOfTheBytesIsRefusedNeverReadInPart() {
        var bytes: [UInt8] = []
        BinaryJSON.append(.object(["flags": .array([.string("blue"), .int(3), .double(2.5), .object(["k": .bool(true)])])]), to: &bytes)
        for length in 0..<bytes.count {
            XCTAssertThrowsError(try Array(bytes[0..<length]).withUnsafeBytes { try BinaryJSON.decode($0) }, "cut at \(length)")
        }
        XCTAssertThrowsError(try (bytes + [0]).withUnsafeBytes { try BinaryJSON.decode($0) }, "a byte after the value")
    }

    func testDamagedBytesAreRefusedWithWhereAndWhy() {
        func reason(_ bytes: [UInt8]) -> String {
            do {
                _ = try bytes.withUnsafeBytes { try BinaryJSON.decode($0) }
                return "read"
            } catch {
                return "\(error)"
            }
        }
        XCTAssertEqual(reason([42]), "an unknown tag at byte 0")
        XCTAssertEqual(reason([BinaryJSON.Tag.string.rawValue, 2, 0xC3, 0x28]), "a string that is not UTF-8 at byte 1")
        XCTAssertEqual(reason([BinaryJSON.Tag.array.rawValue, 0xFF, 0xFF, 0xFF, 0x7F]), "a length past the end at byte 1")
        XCTAssertEqual(reason([BinaryJSON.Tag.array.rawValue] + [UInt8](repeating: 0xFF, count: 11)), "a length past 64 bits at byte 11")
        // A blob of nested arrays deeper than any file: refused, not a stack overflow.
        let deep = [UInt8](repeating: 0, count: 2 * 10_000).enumerated().map { $0.offset % 2 == 0 ? BinaryJSON.Tag.array.rawValue : 1 }
        XCTAssertEqual(reason(deep), "nesting deeper than \(BinaryJSON.maximumDepth) at byte \(2 * BinaryJSON.maximumDepth)")
    }

    // MARK: The compiled file

    func testEveryConformanceCaseDecidesTheSameFromTheCompiledForm() throws {
        try BucketingConformanceTests.checkEveryBucketingCase { data in
            let compiled = try roundTrip(data)
            XCTAssertEqual(compiled.compiled.version, compiled.json.version)
            XCTAssertEqual(compiled.compiled.warnings, compiled.json.warnings)
            return compiled.compiled
        }
    }

    /// A file with what the reader warns about and what it skips: the compiled form keeps each
    /// warning (those of the parse too), the flags and their exact types, and every decision.
    func testAFileWithFaultsDecidesAndWarnsAsItsJSONDoes() throws {
        let flags = #"{"color": "green", "size": 3, "ratio": 1.0, "big": 1e400, "nested": {"a": [1, null]}}"#
        let data = BucketingJSON.file(
            BucketingJSON.campaign("c1", BucketingJSON.group("g1", BucketingJSON.variation("v1", 50, flags: flags),
                                                             BucketingJSON.variation("v2", 50, flags: #""not an object""#))),
            BucketingJSON.campaign("c2", BucketingJSON.group("g2", targeting: BucketingJSON.targeting([
                BucketingJSON.rule("plan", "SEMVER_GREATER_THAN", #""1.2.0""#), BucketingJSON.rule("age", "NO_SUCH_OPERATOR", "3"),
            ], [BucketingJSON.rule("plan", "CONTAINS", #"["pro", "team"]"#)]), BucketingJSON.variation("v3", 100, flags: #"{"k": true}"#))),
            #"{"name": "no id"}"#,
            BucketingJSON.campaign("c1", BucketingJSON.group("g9", BucketingJSON.variation("v9", 100, flags: #"{"later": 1}"#)))
        )

        let (json, compiled, campaigns, _) = try roundTrip(data)

        XCTAssertEqual(compiled.warnings, json.warnings)
        XCTAssertTrue(json.warnings.contains { $0.contains("\"big\" was dropped") }, "\(json.warnings)")
        XCTAssertEqual(compiled.campaignCount, json.campaignCount)
        for number in 0..<300 {
            for context: [String: FSJSONValue] in [[:], ["plan": .string("2.0.0")], ["plan": .string("team")], ["age": .int(3)]] {
                let visitorId = "visitor-\(number)"
                let expected = json.decide(visitorId: visitorId, context: context, history: [:])
                let got = compiled.decide(visitorId: visitorId, context: context, history: [:])
                XCTAssertEqual(got.campaigns, expected.campaigns, visitorId)
                XCTAssertEqual(got.flags, expected.flags, visitorId)
            }
        }
        let v1 = try XCTUnwrap(compiled.campaigns.first?.variationGroups.first?.variations.first?.assignment)
        XCTAssertEqual(v1.flags["ratio"], .double(1.0), "a double stays a double")
        XCTAssertEqual(v1.flags["size"], .int(3))
        XCTAssertEqual(v1.flags["nested"], .object(["a": .array([.int(1), .null])]))
        XCTAssertEqual(campaigns.flagKeys(ofCampaigns: ["c1"]), ["color", "size", "ratio", "nested", "later"])
        XCTAssertEqual(campaigns.digests, BucketingFileCampaigns(parsed: try BucketingFile.parse(json: data), file: json).digests)
    }

    func testAVariationsFlagsAreReadWhenItIsFirstAssignedAndTheirKeysBefore() throws {
        let data = BucketingJSON.file(BucketingJSON.campaign("c1", BucketingJSON.group("g1", BucketingJSON.variation("v1", 100, flags: #"{"b": 1, "a": "x"}"#))))
        let (_, compiled, _, _) = try roundTrip(data)
        let variation = try XCTUnwrap(compiled.campaigns.first?.variationGroups.first?.variations.first)

        XCTAssertEqual(variation.flagKeys, ["a", "b"])
        XCTAssertEqual(variation.assignment?.flags, ["a": .string("x"), "b": .int(1)])
        XCTAssertEqual(variation.assignment?.variationId, "v1")
        XCTAssertEqual(compiled.decide(visitorId: "anyone", context: [:], history: [:]).flags, ["a": .string("x"), "b": .int(1)])
    }

    /// Threads deciding at once on a file just read from the store: each variation's flags are
    /// read once, under a lock, and every thread gets them whole.
    func testConcurrentDecisionsReadEachVariationsFlagsOnceAndWhole() throws {
        let campaigns = (1...40).map { number in
            BucketingJSON.campaign("c\(number)", BucketingJSON.group("g\(number)",
                BucketingJSON.variation("a\(number)", 50, flags: #"{"k\#(number)": "a", "n": \#(number)}"#),
                BucketingJSON.variation("b\(number)", 50, flags: #"{"k\#(number)": "b", "n": \#(number)}"#)))
        }
        let (json, compiled, _, _) = try roundTrip(BucketingJSON.file(campaigns))
        let visitors = (0..<400).map { "visitor-\($0)" }
        let expected = visitors.map { json.decide(visitorId: $0, context: [:], history: [:]) }
        let decided = Locked([BucketingDecision?](repeating: nil, count: visitors.count))

        DispatchQueue.concurrentPerform(iterations: visitors.count) { index in
            let decision = compiled.decide(visitorId: visitors[index], context: [:], history: [:])
            decided.withLock { $0[index] = decision }
        }

        XCTAssertEqual(decided.withLock { $0 }, expected)
    }

    func testAChangeEventFromTheCompiledFormNamesWhatAJSONReadWouldName() throws {
        let old = BucketingJSON.file(
            BucketingJSON.campaign("kept", BucketingJSON.group("g1", BucketingJSON.variation("v1", 100, flags: #"{"k1": 1}"#))),
            BucketingJSON.campaign("changed", BucketingJSON.group("g2", BucketingJSON.variation("v2", 100, flags: #"{"k2": 1}"#))),
            BucketingJSON.campaign("removed", BucketingJSON.group("g3", BucketingJSON.variation("v3", 100, flags: #"{"k3": 1}"#))))
        let new = BucketingJSON.file(
            BucketingJSON.campaign("kept", BucketingJSON.group("g1", BucketingJSON.variation("v1", 100, flags: #"{"k1": 1}"#))),
            BucketingJSON.campaign("changed", BucketingJSON.group("g2", BucketingJSON.variation("v2", 100, flags: #"{"k2": 2}"#))),
            BucketingJSON.campaign("added", BucketingJSON.group("g4", BucketingJSON.variation("v4", 100, flags: #"{"k4": 1}"#))))
        let trip = try roundTrip(old)
        let stored = trip.campaigns
        let parsed = try BucketingFile.parse(json: new)
        let downloaded = BucketingFileCampaigns(parsed: parsed, file: try BucketingFile(parsed: parsed))

        let change = try XCTUnwrap(FSBucketingFileChange.between(old: stored, new: downloaded, panic: false))

        XCTAssertEqual(change.campaignsAdded, ["added"])
        XCTAssertEqual(change.campaignsRemoved, ["removed"])
        XCTAssertEqual(change.campaignsChanged, ["changed"])
        XCTAssertEqual(change.flagKeys, ["k2", "k3", "k4"])
        XCTAssertEqual(stored.flagKeys(ofCampaigns: ["changed", "removed", "kept"]), ["k1", "k2", "k3"])
        XCTAssertEqual(trip.compiled.compiled?.hasReadCampaigns, false, "read from the blob, no campaign built")
        XCTAssertNil(FSBucketingFileChange.between(old: stored, new: try roundTrip(old).campaigns, panic: false), "the same file")
    }

    /// The blob's checksum sees every single flipped bit, a cut, a word moved and a run of zeros
    /// of any length at any place, on bytes of every length up to a few blocks past a whole one.
    func testTheChecksumSeesEveryFlippedBitACutAndWordsSwapped() {
        let bytes = (0..<1_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
        func checksum(_ bytes: [UInt8]) -> UInt64 { bytes.withUnsafeBytes { WordChecksum.of($0) } }
        let whole = checksum(bytes)
        for index in bytes.indices {
            for bit in 0..<8 {
                var flipped = bytes
                flipped[index] ^= 1 << bit
                XCTAssertNotEqual(checksum(flipped), whole, "byte \(index), bit \(bit)")
            }
        }
        var seen = Set<UInt64>()
        for length in 0...bytes.count {
            XCTAssertTrue(seen.insert(checksum(Array(bytes.prefix(length)))).inserted, "the first \(length) bytes")
        }
        var swapped = bytes
        swapped[0..<8] = bytes[8..<16]
        swapped[8..<16] = bytes[0..<8]
        XCTAssertNotEqual(checksum(swapped), whole, "two words swapped")
        XCTAssertNotEqual(checksum([UInt8](repeating: 0, count: 64)), checksum([UInt8](repeating: 0, count: 65)), "zeros of two lengths")
    }

    func testADamagedCutOrForeignBlobIsRefusedWhole() throws {
        let data = BucketingJSON.file(BucketingJSON.campaign("c1", BucketingJSON.group("g1", BucketingJSON.variation("v1", 100, flags: #"{"a": 1}"#))))
        let blob = try roundTrip(data).blob
        func reason(_ bytes: [UInt8]) -> String {
            do {
                _ = try CompiledBucketingFile.decode(bytes)
                return "read"
            } catch {
                return "\(error)"
            }
        }

        for index in stride(from: CompiledBucketingFile.headerSize, to: blob.count, by: 7) {
            var damaged = blob
            damaged[index] ^= 0x40
            XCTAssertEqual(reason(damaged), "its checksum does not match: damaged or cut", "byte \(index)")
        }
        XCTAssertEqual(reason(Array(blob.dropLast(3))), "its checksum does not match: damaged or cut")
        var otherFormat = blob
        otherFormat[4] = 9
        XCTAssertEqual(reason(otherFormat), "compiled in format 9, this SDK reads format \(CompiledBucketingFile.format)")
        XCTAssertEqual(reason(Array(data)), "not a compiled bucketing file")
        XCTAssertEqual(reason([]), "not a compiled bucketing file")
    }
}
