import Foundation
import FlagshipLocalServer
import FlagshipStore
import XCTest

@testable import Flagship

/// A file read from the store's compiled form is decided where it lies in the blob
/// (`CompiledCampaigns`), not on the engine's structures: these tests hold the two to the same
/// answers, on generated files with every kind of rule and fault, and on blobs changed byte by byte.
final class CompiledDecisionTests: XCTestCase {
    private func compiled(_ data: Data) throws -> (json: BucketingFile, compiled: BucketingFile) {
        let parsed = try BucketingFile.parse(json: data)
        let json = try BucketingFile(parsed: parsed)
        let blob = CompiledBucketingFile.encode(json, digests: BucketingFileCampaigns(parsed: parsed, file: json).digests)
        // Checked in parts side by side, as a start on a large file checks it, it is read alike.
        XCTAssertEqual(try CompiledBucketingFile.decode(blob, parts: 3).file.campaignCount, json.campaigns.count)
        return (json, try CompiledBucketingFile.decode(blob, parts: 1).file)
    }

    func testGeneratedFilesDecideInTheBlobAsTheirJSONDoes() throws {
        var random = SplitMix64(seed: 48)
        var assigned = 0
        for fileNumber in 0..<60 {
            let (json, compiled) = try compiled(GeneratedBucketingFile.file(&random))
            XCTAssertNotNil(compiled.compiled, "read from the compiled form")
            for visitor in 0..<40 {
                let visitorId = "visitor-\(visitor)"
                let context = GeneratedBucketingFile.context(&random)
                // A history naming a variation of the group, one that is gone, or none.
                let history = Int.random(in: 0..<3, using: &random) == 0 ? ["g0-0": "v0-0-\(Int.random(in: 0..<3, using: &random))", "g1-0": "gone"] : [:]
                let expected = json.decide(visitorId: visitorId, context: context, history: history)
                let got = compiled.decide(visitorId: visitorId, context: context, history: history)
                XCTAssertEqual(got, expected, "file \(fileNumber), \(visitorId), \(context), \(history)")
                XCTAssertEqual(compiled.decideFromCampaigns(visitorId: visitorId, context: context, history: history), expected)
                assigned += expected.campaigns.count
                if visitor < 3 {
                    XCTAssertEqual(compiled.explain(visitorId: visitorId, context: context, history: history),
                                   json.explain(visitorId: visitorId, context: context, history: history), "file \(fileNumber)")
                }
            }
            // The change events' flag keys, read from the blob, as the structures give them.
            let ids = Set(json.campaigns.map(\.id))
            let fromStructures = Set(json.campaigns.flatMap(\.variationGroups).flatMap(\.variations).filter { $0.id != nil }.flatMap(\.flagKeys))
            XCTAssertEqual(BucketingFileCampaigns(file: compiled).flagKeys(ofCampaigns: ids), fromStructures, "file \(fileNumber)")
            XCTAssertEqual(compiled.campaigns.count, json.campaigns.count)
        }
        // The files are not all empty of assignments: the comparison saw campaigns given.
        XCTAssertGreaterThan(assigned, 1_000)
    }

    /// Whatever a byte of the file's part of a blob is changed to (its checksum written again, as
    /// a blob written wrong would have it), the blob is refused at its start, or read whole and
    /// decided alike in place and on the structures read from it: never a campaign lost between the two.
    func testABlobChangedAnywhereIsRefusedOrDecidedAlikeBothWays() throws {
        let data = BucketingJSON.file(
            BucketingJSON.campaign("c1", BucketingJSON.group("g1", targeting: BucketingJSON.targeting(
                [BucketingJSON.rule("plan", "CONTAINS", #"["go", "si"]"#), BucketingJSON.rule("age", "GREATER_THAN", "20")],
                [BucketingJSON.rule("version", "SEMVER_LOWER_THAN", #""2.0.0""#)]),
                BucketingJSON.variation("v1", 50, flags: #"{"a": 1}"#), BucketingJSON.variation("v2", 50))),
            BucketingJSON.campaign("c2", BucketingJSON.group("g2", targeting: BucketingJSON.targeting(
                [BucketingJSON.rule("fs_users", "EQUALS", #""visitor-1""#)], [BucketingJSON.rule("vip", "EXISTS", "true")]),
                BucketingJSON.variation("v3", 100, flags: #"{"b": true}"#))))
        let parsed = try BucketingFile.parse(json: data)
        let blob = CompiledBucketingFile.encode(try BucketingFile(parsed: parsed))
        let fileStart = Int(BinaryJSON.fixed(in: blob, at: 13))
        let contexts: [[String: FSJSONValue]] = [[:], ["plan": .string("gold"), "age": .int(30)], ["version": .string("1.0.0")], ["vip": .null]]
        var refused = 0, read = 0
        for index in fileStart..<blob.count {
            for replacement in Set<UInt8>([0, 1, 2, 0x7F, 0x80, 0xFF, blob[index] ^ 1, blob[index] &+ 1]) where replacement != blob[index] {
                var changed = blob
                changed[index] = replacement
                let signed = CompiledBucketingFile.withChecksum(changed)
                // Checked in order, or in parts side by side (as a start on a large file does): the
                // same answer, and the same reason for a refusal.
                let inOrder = Result { () throws(CompiledBucketingFile.Unusable) in try CompiledBucketingFile.decode(signed, parts: 1).file }
                let inParts = Result { () throws(CompiledBucketingFile.Unusable) in try CompiledBucketingFile.decode(signed, parts: 3).file }
                switch (inOrder, inParts) {
                case (.failure(let one), .failure(let other)): XCTAssertEqual(one, other, "byte \(index) = \(replacement)")
                case (.success, .success): break
                default: XCTFail("byte \(index) = \(replacement): \(inOrder) in order, \(inParts) in parts")
                }
                guard let file = try? inOrder.get() else {
                    refused += 1
                    continue
                }
                read += 1
                XCTAssertEqual(file.campaigns.count, file.campaignCount, "byte \(index) = \(replacement): campaigns lost reading them")
                for visitor in 0..<6 {
                    for context in contexts {
                        let visitorId = "visitor-\(visitor)"
                        XCTAssertEqual(file.decide(visitorId: visitorId, context: context, history: ["g1": "v2"]),
                                       file.decideFromCampaigns(visitorId: visitorId, context: context, history: ["g1": "v2"]),
                                       "byte \(index) = \(replacement)")
                        XCTAssertEqual(file.decide(visitorId: visitorId, context: context, history: [:]),
                                       file.decideFromCampaigns(visitorId: visitorId, context: context, history: [:]),
                                       "byte \(index) = \(replacement)")
                    }
                }
            }
        }
        // Both outcomes happened: most changes break a length or a code, some only a value.
        XCTAssertGreaterThan(refused, 100)
        XCTAssertGreaterThan(read, 100)
    }

    /// The check in parts side by side passes a good file on its own (not by its check in order,
    /// which follows a part that fails), whatever the number of parts, the campaigns of each part
    /// found by their lengths; a campaign broken in any part fails it.
    func testTheCheckInPartsPassesAGoodFileAndFailsABrokenCampaignInAnyPart() throws {
        var random = SplitMix64(seed: 7)
        let campaigns = (0..<40).map { number in
            #"{"id": "c\#(number)", "name": "campaign \#(number)", "type": "ab", "variationGroups": [\#(GeneratedBucketingFile.group(&random, number, 0))]}"#
        }
        let json = try BucketingFile(parsed: try BucketingFile.parse(json: BucketingJSON.file(campaigns)))
        let blob = CompiledBucketingFile.encode(json)
        let compiled = try XCTUnwrap(try CompiledBucketingFile.decode(blob, parts: 1).file.compiled)
        func toCheck(_ bytes: [UInt8]) -> CompiledBucketingFile.CampaignsToCheck {
            .init(bytes: bytes, start: compiled.campaignsAt, count: compiled.count, keyCount: compiled.keys.count, flags: compiled.flags)
        }
        let checksums = Locked(0)
        for parts in [2, 3, 7, 40, 41] {
            XCTAssertTrue(toCheck(blob).passInParts(parts) { checksums.withLock { $0 += 1 } }, "\(parts) parts")
        }
        XCTAssertEqual(checksums.withLock { $0 }, 5, "the job beside the parts ran once each time")

        // A campaign's id said one byte longer than it is: its block no longer ends where it says.
        var idLengths: [Int] = []
        blob.withUnsafeBytes { raw in
            var reader = BinaryJSON.Reader(raw, at: compiled.campaignsAt)
            for _ in 0..<compiled.count {
                guard let end = try? reader.blockEnd() else { return }
                idLengths.append(reader.offset)
                try? reader.seek(to: end)
            }
        }
        XCTAssertEqual(idLengths.count, 40)
        for campaign in [0, 19, 39] {
            var broken = blob
            broken[idLengths[campaign]] += 1
            for parts in [2, 3, 7] {
                XCTAssertFalse(toCheck(broken).passInParts(parts) {}, "campaign \(campaign), \(parts) parts")
            }
            XCTAssertThrowsError(try toCheck(broken).check())
        }
    }

    /// A start reads no campaign into the engine's structures: they are read at the first need
    /// (here an explanation), once, and kept.
    func testAStartBuildsNoCampaignTheFirstExplanationReadsThemOnce() throws {
        var random = SplitMix64(seed: 7)
        let (json, compiled) = try compiled(GeneratedBucketingFile.file(&random))
        let source = try XCTUnwrap(compiled.compiled)
        XCTAssertFalse(source.hasReadCampaigns)
        _ = compiled.decide(visitorId: "v", context: ["plan": .string("gold")], history: [:])
        XCTAssertFalse(source.hasReadCampaigns, "a decision reads the blob in place")

        let explanation = compiled.explain(visitorId: "v", context: ["plan": .string("gold")], history: [:])

        XCTAssertTrue(source.hasReadCampaigns)
        XCTAssertEqual(explanation, json.explain(visitorId: "v", context: ["plan": .string("gold")], history: [:]))
        XCTAssertTrue(compiled.campaigns.first === compiled.campaigns.first, "read once, then kept")
    }
}
