import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// One flag with an unusable value costs that flag only, never the decision (issue 18, point 12).
final class HostileDecisionTests: SDKTestCase {
    /// A campaign whose `modifications.value` has `good`, `big` (beyond 2^53) and one unusable `bad`.
    private static func decision(badValue: [UInt8]) -> Data {
        let head: [UInt8] = Array(#"{"visitorId": "v1", "campaigns": [{"id": "c1", "variationGroupId": "vg1", "type": "ab", "variation": {"id": "var1", "#.utf8)
        let flags: [UInt8] = Array(#""modifications": {"type": "FLAG", "value": {"good": "green", "big": 9007199254740993, "bad": "#.utf8)
        let tail: [UInt8] = Array(#"}}}}, {"id": "c2", "variationGroupId": "vg2", "variation": {"id": "var2", "modifications": {"type": "FLAG", "value": {"other": 1}}}}]}"#.utf8)
        var bytes = head
        bytes += flags
        bytes += badValue
        bytes += tail
        return Data(bytes)
    }

    private static let unusableValues: [(name: String, bytes: [UInt8], reason: String)] = [
        ("1e400", Array("1e400".utf8), "the number 1e400 is beyond the range of a double"),
        ("a lone surrogate", Array(#""\ud800""#.utf8), "a string holds a lone surrogate"),
        ("invalid UTF-8", [0x22, 0x61, 0xFF, 0x62, 0x22], "a string is not valid UTF-8"),
        ("507 levels deep", Array(String(repeating: "[", count: 507).utf8) + Array(String(repeating: "]", count: 507).utf8),
         "nested deeper than 256 levels"),
    ]

    func testADecisionKeepsEveryFlagButTheUnusableOne() throws {
        for (name, bytes, reason) in Self.unusableValues {
            let response = try DecisionResponse(json: Self.decision(badValue: bytes))

            XCTAssertEqual(response.campaigns.map(\.campaignId), ["c1", "c2"], name)
            XCTAssertEqual(response.campaigns.first?.flags, ["good": .string("green"), "big": .int(9_007_199_254_740_993)], name)
            XCTAssertEqual(response.campaigns.last?.flags, ["other": .int(1)], name)
            XCTAssertEqual(response.droppedFlags, [#"flag "bad" of campaign "c1" was dropped: \#(reason)"#], name)
        }
    }

    func testAFetchedDecisionWithOneUnusableFlagServesTheOthersExactlyAndLogsTheDroppedOne() async throws {
        server.decision = .fixed(Self.decision(badValue: Array("1e400".utf8)))
        start()
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()

        XCTAssertEqual(visitor.getFlag(key: "good").value(defaultValue: "none", visitorExposed: false), "green")
        XCTAssertEqual(visitor.getFlag(key: "big").value(defaultValue: 0, visitorExposed: false), 9_007_199_254_740_993)
        XCTAssertEqual(visitor.getFlag(key: "big").value(defaultValue: Int64(0), visitorExposed: false), 9_007_199_254_740_993)
        XCTAssertEqual(visitor.getFlag(key: "other").value(defaultValue: 0, visitorExposed: false), 1)
        XCTAssertFalse(visitor.getFlag(key: "bad").exists())
        let warnings = log.messages(at: .warning).filter { $0.contains("was dropped") }
        XCTAssertEqual(warnings, [#"Decision for a visitor: flag "bad" of campaign "c1" was dropped: the number 1e400 is beyond the range of a double"#])
    }
}
