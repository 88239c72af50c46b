import Flagship
import FlagshipLocalServer
import FlagshipTesting
import Foundation
import XCTest

/// `WireJSON` (this module's old name) and `TestValue` (FlagshipTesting's) are `FSJSONValue`:
/// a value a test builds compares equal to the one the server parses from the text that spells it.
final class OneJSONTypeTests: ServerTestCase {
    func testTheOldNamesAreTheOneType() {
        let (testValue, wireJSON, _) = (DeprecatedNames() as any OldNames).types()
        XCTAssertEqual(ObjectIdentifier(testValue), ObjectIdentifier(FSJSONValue.self))
        XCTAssertEqual(ObjectIdentifier(wireJSON), ObjectIdentifier(FSJSONValue.self))
    }

    func testAValueBuiltAsATestValueIsTheOneTheServerParses() async throws {
        let (_, _, built) = (DeprecatedNames() as any OldNames).types()
        let text = #"{"visitorId":"v1","amount":1.0,"count":3,"big":92233720368547758080,"zero":-0,"#
            + #""label":"caf\u00e9 \ud83d\ude00","tags":["a",null],"nested":{"ok":true}}"#
        _ = try await client.post(campaignsURL, body: Data(text.utf8), headers: ["x-api-key": Self.apiKey])

        let parsed = try XCTUnwrap(server.received.first?.json)
        XCTAssertEqual(parsed, built)
        XCTAssertEqual(parsed["amount"], 1.0, "1.0 stays a double, as its literal is")
        XCTAssertNotEqual(parsed["amount"], 1)
    }
}

private protocol OldNames {
    func types() -> (any Any.Type, any Any.Type, FSJSONValue)
}

/// Uses the deprecated names, reached through `OldNames` so that the test itself compiles
/// without a deprecation warning.
private struct DeprecatedNames: OldNames {
    @available(*, deprecated)
    func types() -> (any Any.Type, any Any.Type, FSJSONValue) {
        let built: TestValue = [
            "visitorId": "v1", "amount": 1.0, "count": 3, "big": 92_233_720_368_547_758_080.0, "zero": 0,
            "label": "café 😀", "tags": ["a", nil], "nested": ["ok": true],
        ]
        let wire: WireJSON = built
        return (TestValue.self, WireJSON.self, wire)
    }
}
