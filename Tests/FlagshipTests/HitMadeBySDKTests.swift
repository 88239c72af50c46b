import XCTest

@testable import Flagship

/// The hits the SDK sends on its own: consent (PROTOCOL.md section 2) and segment (bucketing mode).
final class HitMadeBySDKTests: XCTestCase {
    func testConsentHitSaysTheClientAndTrue() {
        XCTAssertEqual(
            SDKHit.consent(hasConsented: true, clientName: "Swift"),
            [
                "t": .string("EVENT"), "ec": .string("User Engagement"), "ea": .string("fs_consent"),
                "el": .string("Swift:true"),
            ])
    }

    func testWithdrawnConsentHitSaysTheClientAndFalse() {
        XCTAssertEqual(
            SDKHit.consent(hasConsented: false, clientName: "Swift"),
            [
                "t": .string("EVENT"), "ec": .string("User Engagement"), "ea": .string("fs_consent"),
                "el": .string("Swift:false"),
            ])
    }

    func testConsentHitIsTheOneTheHitCacheKeepsWithoutConsent() {
        let consent = SDKHit.consent(hasConsented: false, clientName: "Swift")
        let document = HitCacheDocument(visitorId: "v1", type: "EVENT", time: 1, content: consent)
        XCTAssertTrue(document.isConsentHit)
    }

    func testSegmentHitSendsEveryContextValueAsAString() {
        let context: [String: FSJSONValue] = [
            "plan": .string("premium"), "isVIP": .bool(true), "beta": .bool(false), "age": .int(42),
            "negative": .int(-7), "ratio": .double(0.25), "score": .double(3.0), "big": .double(1e20),
        ]

        XCTAssertEqual(
            SDKHit.segment(context: context),
            [
                "t": .string("SEGMENT"),
                "s": .object([
                    "plan": .string("premium"), "isVIP": .string("true"), "beta": .string("false"),
                    "age": .string("42"), "negative": .string("-7"), "ratio": .string("0.25"),
                    "score": .string("3"), "big": .string("1e+20"),
                ]),
            ])
    }

    func testSegmentOfAnEmptyContextIsAnEmptyObject() {
        XCTAssertEqual(SDKHit.segment(context: [:]), ["t": .string("SEGMENT"), "s": .object([:])])
    }

    func testAnIntegralDoubleAndTheSameIntegerGiveTheSameSegmentString() {
        XCTAssertEqual(SDKHit.segmentString(.double(12)), SDKHit.segmentString(.int(12)))
        XCTAssertEqual(SDKHit.segmentString(.double(-0.0)), "0")
    }
}
