import Foundation
import XCTest

@testable import Flagship

/// One unusable flag value in a bucketing file costs that flag only, never the file (issue 18, point 12).
final class HostileBucketingFileTests: XCTestCase {
    private typealias J = BucketingJSON

    func testAVariationKeepsEveryFlagButTheUnusableOne() throws {
        let cases: [(name: String, bytes: [UInt8], reason: String)] = [
            ("1e400", Array("1e400".utf8), "the number 1e400 is beyond the range of a double"),
            ("a lone surrogate", Array(#""\ud800""#.utf8), "a string holds a lone surrogate"),
            ("invalid UTF-8", [0x22, 0x61, 0xFF, 0x62, 0x22], "a string is not valid UTF-8"),
            ("507 levels deep", Array(String(repeating: "[", count: 507).utf8) + Array(String(repeating: "]", count: 507).utf8),
             "nested deeper than 256 levels"),
        ]
        for (name, bytes, reason) in cases {
            let text = J.text(J.campaign("c1", J.group("vg1", J.variation("v1", 100,
                flags: #"{"good": "green", "big": 9007199254740993, "bad": BAD}"#))))
            let parts = text.components(separatedBy: "BAD")
            var data = Array(parts[0].utf8)
            data += bytes
            data += Array(parts[1].utf8)

            let file = try BucketingFile(json: Data(data))

            XCTAssertEqual(file.decide(visitorId: "visitor_1", context: [:], history: [:]).flags,
                           ["good": .string("green"), "big": .int(9_007_199_254_740_993)], name)
            XCTAssertEqual(file.warnings, [#"campaign #1, variation group #1, variation #1: flag "bad" was dropped: \#(reason)"#], name)
        }
    }
}
