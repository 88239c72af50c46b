import Flagship
import Foundation
import XCTest

/// The rules of the one JSON type: how text parses, how values print, what a bad text says.
final class FSJSONValueTests: XCTestCase {
    private func parsed(_ text: String) throws -> FSJSONValue {
        try FSJSONValue(parsing: text)
    }

    private func error(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> FSJSONValue.ParseError? {
        do {
            let value = try FSJSONValue(parsing: Data(text.utf8))
            XCTFail("parsed \(text) as \(value)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    func testANumberKeepsTheKindItsTextHas() throws {
        XCTAssertEqual(try parsed("1"), .int(1))
        XCTAssertEqual(try parsed("1.0"), .double(1))
        XCTAssertEqual(try parsed("1e0"), .double(1))
        XCTAssertEqual(try parsed("1E+2"), .double(100))
        XCTAssertEqual(try parsed("-0"), .int(0))
        XCTAssertEqual(try parsed("-0.0"), .double(0))
        XCTAssertEqual(try parsed("-0.0").doubleValue?.sign, .minus)
        XCTAssertEqual(try parsed("9223372036854775807"), .int(.max))
        XCTAssertEqual(try parsed("-9223372036854775808"), .int(.min))
        XCTAssertEqual(try parsed("9223372036854775808"), .double(9_223_372_036_854_775_808))
        XCTAssertEqual(try parsed("-92233720368547758080"), .double(-92_233_720_368_547_758_080))
        XCTAssertEqual(try parsed("-114688.00000000001"), .double(-114_688.00000000001))
        XCTAssertEqual(try parsed("true"), .bool(true), "a boolean is not a number")
        XCTAssertNil(try parsed("true").intValue)
    }

    func testALiteralIsTheValueOfTheTextThatSpellsIt() throws {
        let literal: FSJSONValue = ["int": 1, "double": 1.0, "list": [1, 2.5, "x", nil, false], "empty": [:]]
        XCTAssertEqual(try parsed(#"{"int":1,"double":1.0,"list":[1,2.5,"x",null,false],"empty":{}}"#), literal)
        XCTAssertNotEqual(FSJSONValue.int(1), .double(1), "3 and 3.0 are different values")
    }

    func testAValueReadsBackFromItsOwnText() throws {
        let values: [FSJSONValue] = [
            .double(1), .double(-0.5), .double(1e-7), .double(123_456_789.125), .int(.min), .int(.max),
            .string("tab\t \"quote\" back\\slash \u{01} é 😀"), ["b": [1, 2.0], "a": nil, "é": true],
        ]
        for value in values {
            XCTAssertEqual(try FSJSONValue(parsing: value.jsonData()), value, value.description)
        }
        XCTAssertEqual(FSJSONValue.double(1).jsonString(), "1.0")
        XCTAssertEqual(FSJSONValue.double(1e17).jsonString(), "100000000000000000", "past 2^53: its exact integer")
        XCTAssertEqual(FSJSONValue.double(.nan).jsonString(), "null")
        XCTAssertEqual((["b": 1, "a": [true, nil]] as FSJSONValue).description, #"{"a":[true,null],"b":1}"#)
    }

    func testEscapesAreDecoded() throws {
        XCTAssertEqual(try parsed(#""caf\u00e9 \ud83d\ude00 \" \\ \/ \b\f\n\r\t""#), .string("café 😀 \" \\ / \u{08}\u{0C}\n\r\t"))
        XCTAssertEqual(try parsed(#""\u00E9""#), try parsed("\"é\""))
        XCTAssertEqual(try parsed(#""a\u0000b \u20AC \uD834\uDD1E é\n""#), .string("a\u{0}b € 𝄞 é\n"))
    }

    func testAccessors() throws {
        let value = try parsed(#"{"list":[1,2.5,"x"],"flag":true,"n":null}"#)
        XCTAssertEqual(value["list"]?[0]?.intValue, 1)
        XCTAssertNil(value["list"]?[1]?.intValue)
        XCTAssertEqual(value["list"]?[1]?.doubleValue, 2.5)
        XCTAssertEqual(value["list"]?[0]?.doubleValue, 1)
        XCTAssertNil(value["list"]?[3])
        XCTAssertEqual(value["list"]?[2]?.stringValue, "x")
        XCTAssertEqual(value["flag"]?.boolValue, true)
        XCTAssertEqual(value["n"]?.isNull, true)
        XCTAssertNil(value["missing"])
        XCTAssertEqual(value["list"]?.arrayValue?.count, 3)
        XCTAssertEqual(value.objectValue?.count, 3)
        XCTAssertEqual(try parsed(#"{"dup":1,"dup":2}"#), ["dup": 2], "of a repeated key the last value wins")
    }

    func testInvalidTextSaysWhereAndWhy() {
        XCTAssertEqual(error("[1,]")?.description, #"invalid JSON at byte 3: unexpected character "]""#)
        XCTAssertEqual(error(#"{"a":"#)?.description, "invalid JSON at byte 5: unexpected end of text")
        XCTAssertEqual(error("")?.description, "invalid JSON at byte 0: unexpected end of text")
        XCTAssertEqual(error("\"tab\there\"")?.description, "invalid JSON at byte 4: unexpected byte 0x9")
        XCTAssertEqual(error("01")?.offset, 0)
        XCTAssertEqual(error("1 2")?.offset, 2)
        let beyond = error(#"{"a":[1e400]}"#)
        XCTAssertEqual(beyond?.offset, 6)
        XCTAssertEqual(beyond?.reason, "a[0]: the number 1e400 is beyond the range of a double")
        XCTAssertEqual(error(#""lone \ud800""#)?.description, "invalid JSON at byte 0: a string holds a lone surrogate")
        XCTAssertEqual(error(String(repeating: "[", count: 300) + String(repeating: "]", count: 300))?.reason.hasSuffix("nested deeper than 256 levels"), true)
        XCTAssertEqual(error(#""\u+12a""#)?.description, "invalid JSON at byte 3: unexpected character \"+\"", "four hex digits, no sign")
        for text in [#""\ud83dx\ude00""#, #""\ud83d\ud83d\ude00""#, #""\ude00\ud83d""#, #""end \ud83d""#] {
            XCTAssertEqual(error(text)?.reason, "a string holds a lone surrogate", text)
        }
        // An invalid UTF-8 byte in a string with an escape (`"\xFF \n"`).
        XCTAssertThrowsError(try FSJSONValue(parsing: Data([0x22, 0xFF, 0x20, 0x5C, 0x6E, 0x22]))) { error in
            XCTAssertEqual((error as? FSJSONValue.ParseError)?.reason, "a string is not valid UTF-8")
        }
        XCTAssertNotNil(error("[1] x"))
        XCTAssertNotNil(error("NaN"))
    }

    func testCodableReadsWhatTheDecoderGives() throws {
        let value: FSJSONValue = ["a": 1, "b": 2.5, "c": [true, nil, "x"]]
        let data = try JSONEncoder().encode(value)
        XCTAssertEqual(try JSONDecoder().decode(FSJSONValue.self, from: data), value)
    }
}
