import Foundation
import XCTest

@testable import Flagship

/// One bad flag never costs the others, in a cached visitor row either (issue 18, point 12): a
/// flag value that cannot be read (`1e400`, a lone surrogate, nested too deep) drops that flag
/// alone, said once; the row's other flags, campaigns and context are used, and integers beyond
/// 2^53 stay exact. Before, the whole row was ignored and the visitor started from nothing.
final class HostileVisitorCacheRowTests: XCTestCase {
    private func row(badValue: String) -> Data {
        Data(#"""
        {"version": 1, "data": {"visitorId": "v1", "consent": true, "context": {"plan": "pro"},
         "campaigns": [
           {"campaignId": "c1", "variationGroupId": "vg1", "variationId": "var1", "isReference": false, "type": "ab", "activated": true,
            "flags": {"bad": \#(badValue), "good": "kept", "big": 9007199254740993}},
           {"campaignId": "c2", "variationGroupId": "vg2", "variationId": "var2", "isReference": true, "type": "ab", "activated": false,
            "flags": {"other": true}}],
         "assignmentsHistory": {"vg1": "var1", "vg2": "var2"}}}
        """#.utf8)
    }

    func testOneUnreadableFlagValueInACachedRowDropsThatFlagAlone() throws {
        let deep = String(repeating: "[", count: 507) + String(repeating: "]", count: 507)
        for bad in ["1e400", #""\ud800""#, deep] {
            let document = try VisitorCacheDocument(data: row(badValue: bad), expectedVisitorId: "v1")

            XCTAssertEqual(document.campaigns.map(\.campaignId), ["c1", "c2"], bad.prefix(10).description)
            XCTAssertNil(document.campaigns[0].flags["bad"])
            XCTAssertEqual(document.campaigns[0].flags["good"], .string("kept"))
            XCTAssertEqual(document.campaigns[0].flags["big"], .int(9_007_199_254_740_993), "exact")
            XCTAssertEqual(document.campaigns[1].flags["other"], .bool(true))
            XCTAssertEqual(document.context["plan"], .string("pro"))
            XCTAssertEqual(document.assignmentsHistory, ["vg1": "var1", "vg2": "var2"])
            XCTAssertEqual(document.droppedFlags.count, 1)
            XCTAssertTrue(document.droppedFlags[0].contains(#"flag "bad" of campaign "c1""#), document.droppedFlags[0])
        }
    }

    func testAnUnreadableValueOutsideAFlagStillRefusesTheRow() {
        let json = #"{"version": 1, "data": {"visitorId": "v1", "context": {"n": 1e400}}}"#
        XCTAssertThrowsError(try VisitorCacheDocument(data: Data(json.utf8), expectedVisitorId: "v1")) { error in
            XCTAssertTrue("\(error)".contains("data.context.n"), "\(error)")
        }
    }
}
