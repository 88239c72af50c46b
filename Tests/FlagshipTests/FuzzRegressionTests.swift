import Foundation
import XCTest
@testable import Flagship
import FlagshipFuzzing

/// Every input of the fuzz targets' seed corpus (`Fuzz/Corpus/<target>/`) and every input a fuzzer
/// once crashed on (`Fuzz/Regressions/<target>/`, named after what it broke), run through the same
/// `FuzzEntry` bodies the fuzzers run, so a fixed crash stays fixed without a fuzzer being built.
final class FuzzRegressionTests: XCTestCase {
    private static let fuzzRoot = SharedData.packageRoot.appendingPathComponent("Fuzz", isDirectory: true)

    /// The seeds are valid inputs: the SDK must read each of them, and every invariant hold.
    func testEverySeedIsAcceptedWithItsInvariantsHolding() throws {
        for entry in FuzzEntry.allCases {
            let inputs = try Self.inputs(in: "Corpus", for: entry)
            XCTAssertGreaterThanOrEqual(inputs.count, 3, "\(entry.rawValue) has too few seeds")
            for input in inputs {
                XCTAssertEqual(try run(entry, input), .accepted, "seed \(input.lastPathComponent) of \(entry.rawValue)")
            }
        }
    }

    /// A crash once found must not come back: the input is read or refused, and no invariant breaks.
    func testEveryRegressionInputRunsWithItsInvariantsHolding() throws {
        var count = 0
        for entry in FuzzEntry.allCases {
            for input in try Self.inputs(in: "Regressions", for: entry) {
                _ = try run(entry, input)
                count += 1
            }
        }
        XCTAssertGreaterThanOrEqual(count, 1, "no regression input was found under Fuzz/Regressions")
    }

    // MARK: - What the fuzzers found

    /// `JSONSerialization` gives an `NSDecimalNumber` for a long mantissa, whose `Double` was an ulp
    /// off, and some 19-digit integers became doubles: a context or hit value written by `jsonString()`
    /// came back another number (FuzzValidation, `context-*-drifts-through-json`).
    func testNumberWithLongMantissaIsReadAsTheDoubleItWrites() throws {
        let widenedFloat = Double(Float(bitPattern: 0x3F00_0001)) // 0.5000000596046448
        let values: [FSJSONValue] = [.double(widenedFloat), .double(1.8098515333663333e+31), .double(0.1), .int(-3),
                                .int(-8_897_841_259_083_430_780)]

        let read = try FSJSONValue(parsing: Data(FSJSONValue.array(values).jsonString().utf8))

        XCTAssertEqual(read, .array(values))
    }

    /// `JSONEncoder` wrote the flag value 3.316666666666667e+17 as 331666666666666700, another number
    /// once read back: the visitor cache changed a flag (FuzzDecisionResponse,
    /// `large-integral-double-flag-changes-through-visitor-cache`).
    func testLargeIntegralDoubleFlagKeepsItsValueThroughTheVisitorCache() throws {
        let value = 3.316666666666667e+17
        let document = VisitorCacheDocument(visitorId: "v", campaigns: [
            AssignedCampaign(campaignId: "c", variationGroupId: "vg", variationId: "var", flags: ["ratio": .double(value)]),
        ])

        let read = try VisitorCacheDocument(data: document.jsonData())

        XCTAssertEqual(read.campaigns.first?.flags["ratio"], .int(331_666_666_666_666_688))
        XCTAssertEqual(Double(exactly: 331_666_666_666_666_688), value)
    }

    private func run(_ entry: FuzzEntry, _ input: URL) throws -> FuzzEntry.Outcome? {
        do {
            return try entry.run(Data(contentsOf: input))
        } catch let violation as FuzzEntry.Violation {
            XCTFail("\(entry.rawValue) \(input.lastPathComponent): \(violation)")
            return nil
        }
    }

    /// The files of `Fuzz/<folder>/<target>/`, sorted; none when the folder does not exist.
    private static func inputs(in folder: String, for entry: FuzzEntry) throws -> [URL] {
        let directory = fuzzRoot.appendingPathComponent(folder).appendingPathComponent(entry.rawValue)
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }
}
