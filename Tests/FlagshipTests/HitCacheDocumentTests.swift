import Foundation
import XCTest

@testable import Flagship

final class HitCacheDocumentTests: XCTestCase {
    func testDocumentReadsFromADictionaryAndBack() throws {
        let dictionary = hitDictionary(visitorId: "v1", type: "EVENT", time: 1_732_170_000_123)
        let document = try HitCacheDocument(dictionary: dictionary)

        XCTAssertEqual(document.visitorId, "v1")
        XCTAssertNil(document.anonymousId)
        XCTAssertEqual(document.type, "EVENT")
        XCTAssertEqual(document.time, 1_732_170_000_123)
        XCTAssertEqual(document.content["ea"], .string("click"))
        XCTAssertFalse(document.isConsentHit)
        XCTAssertEqual(try canonicalJSON(document.dictionary), try canonicalJSON(dictionary))
    }

    func testConsentHitIsRecognised() throws {
        XCTAssertTrue(try HitCacheDocument(dictionary: consentHitDictionary(visitorId: "v1", time: 1)).isConsentHit)
    }

    func testMissingOrWrongFieldsAreNamed() {
        func document(_ mutate: (inout [String: Any]) -> Void) -> [String: Any] {
            var data = hitDictionary(time: 5)["data"] as! [String: Any]
            mutate(&data)
            return ["version": 1, "data": data]
        }
        let cases: [([String: Any], HitCacheDocumentError)] = [
            (["data": [:] as [String: Any]], .missingField("version")),
            (["version": 2, "data": [:] as [String: Any]], .unsupportedVersion("2")),
            (["version": 1], .missingField("data")),
            (["version": 1, "data": "text"], .wrongType(field: "data", expected: "an object")),
            (document { $0["visitorId"] = nil }, .missingField("data.visitorId")),
            (document { $0["visitorId"] = "" }, .wrongType(field: "data.visitorId", expected: "a non-empty string")),
            (document { $0["type"] = NSNull() }, .missingField("data.type")),
            (document { $0["type"] = "CLICK" }, .unknownHitType("CLICK")),
            (document { $0["time"] = "yesterday" }, .wrongType(field: "data.time", expected: "an integer (unix milliseconds)")),
            (document { $0["time"] = 1.5 }, .wrongType(field: "data.time", expected: "an integer (unix milliseconds)")),
            (document { $0["content"] = [1, 2] }, .wrongType(field: "data.content", expected: "an object")),
            (document { $0["anonymousId"] = 7 }, .wrongType(field: "data.anonymousId", expected: "a string or null")),
        ]
        for (dictionary, expected) in cases {
            XCTAssertThrowsError(try HitCacheDocument(dictionary: dictionary)) { error in
                XCTAssertEqual(error as? HitCacheDocumentError, expected)
            }
        }
    }

    func testAValueJSONCannotHoldIsRefused() {
        let dictionary = hitDictionary(time: 1, content: ["t": "EVENT", "when": Date()])
        XCTAssertThrowsError(try HitCacheDocument(dictionary: dictionary)) { error in
            guard case .notJSON? = error as? HitCacheDocumentError else { return XCTFail("\(error)") }
        }
    }
}
