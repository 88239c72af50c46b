import Flagship
import Foundation
import XCTest
@testable import FlagshipLocalServer

/// The parser the server reads request bodies with (`FSJSONValue(parsing:)`, the SDK's own)
/// against `JSONDecoder` (what it replaced on the request path).
final class WireJSONParserTests: XCTestCase {
    private func codable(_ text: String) -> FSJSONValue? {
        try? JSONDecoder().decode(FSJSONValue.self, from: Data(text.utf8))
    }

    private func parsed(_ text: String) -> FSJSONValue? {
        try? FSJSONValue(parsing: Data(text.utf8))
    }

    func testValidTextReadsAsJSONDecoderReadsIt() {
        let valid = [
            #"{"vid":"v1","t":"EVENT","ea":"purchase","ev":3,"qt":12,"cid":"env"}"#,
            #"{"batch":[{"a":1},{"b":[true,false,null]},{"c":-0.5e3}],"x":{}}"#,
            #"  [ 1 , -2 , 3.25 , 1e2 , -9223372036854775808 , 9223372036854775807 ]  "#,
            #""caf\u00e9 \ud83d\ude00 \" \\ \/ \b\f\n\r\t""#,
            #"{"nested":{"deeper":{"deepest":["é","😀","日本"]}}}"#,
            "0", "-0", "true", "null", #""""#, "[]", "{}",
        ]
        for text in valid {
            XCTAssertNotNil(parsed(text), text)
            // `JSONDecoder` does not say how a number was written (it gives `1e2` as an integer):
            // numbers compared as numbers.
            XCTAssertEqual(parsed(text).map(numbersAsDoubles), codable(text).map(numbersAsDoubles), text)
        }
        // Of a repeated key the last value wins (`JSONDecoder` keeps the first).
        XCTAssertEqual(parsed(#"{"dup":1,"dup":2}"#), ["dup": 2])
    }

    private func numbersAsDoubles(_ value: FSJSONValue) -> FSJSONValue {
        switch value {
        case .int(let int): return .double(Double(int))
        case .array(let array): return .array(array.map(numbersAsDoubles))
        case .object(let object): return .object(object.mapValues(numbersAsDoubles))
        default: return value
        }
    }

    func testInvalidTextIsRefusedAsJSONDecoderRefusesIt() {
        let invalid = [
            "", " ", "{", "}", "{a:1}", "{'a':1}", "01", "1.", ".5", "-", "1e", "+1",
            "tru", "nul", "[1 2]", "{\"a\" 1}", "\"unterminated", "\"bad \\x escape\"", "\"\\u12\"",
            "\"lone \\ud800\"", "\"lone \\udc00 low\"", "\"tab\tinside\"", "1 2", "NaN", "Infinity", "1e999",
        ]
        for text in invalid {
            XCTAssertNil(parsed(text), "accepted: \(text)")
            XCTAssertNil(codable(text), "JSONDecoder accepted: \(text)")
        }
        // Stricter than `JSONDecoder`, which lets a trailing comma through.
        for text in ["[1,]", "{\"a\":1,}"] {
            XCTAssertNil(parsed(text), "accepted: \(text)")
        }
        XCTAssertNil(try? FSJSONValue(parsing: Data([0x22, 0xFF, 0xFE, 0x22])), "invalid UTF-8 in a string")
        XCTAssertNil(try? FSJSONValue(parsing: Data((String(repeating: "[", count: 600) + String(repeating: "]", count: 600)).utf8)))
    }

    func testNumbersKeepTheKindOfTheirTextAndBooleansStayApart() throws {
        XCTAssertEqual(parsed("1"), .int(1))
        XCTAssertEqual(parsed("1.0"), .double(1))
        XCTAssertEqual(parsed("1e0"), .double(1))
        XCTAssertEqual(parsed("1.5"), .double(1.5))
        XCTAssertEqual(parsed("true"), .bool(true))
        XCTAssertEqual(parsed("92233720368547758080"), .double(92_233_720_368_547_758_080))
    }

    func testGeneratedValuesSurviveTheirOwnText() throws {
        var generator = SplitMix64(seed: 19)
        for _ in 0..<500 {
            let value = randomValue(&generator, depth: 0)
            XCTAssertEqual(try FSJSONValue(parsing: value.jsonData()), value)
        }
    }

    func testTheWrittenTextIsWhatJSONEncoderWrote() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var generator = SplitMix64(seed: 20)
        for _ in 0..<500 {
            let value = randomValue(&generator, depth: 0)
            XCTAssertEqual(String(decoding: value.jsonData(), as: UTF8.self), String(decoding: try encoder.encode(value), as: UTF8.self))
        }
        // An integral double keeps its kind, where `JSONEncoder` writes `2`.
        XCTAssertEqual(String(decoding: FSJSONValue.double(2).jsonData(), as: UTF8.self), "2.0")
        XCTAssertEqual(String(decoding: FSJSONValue.object(["b": 1, "a": "\u{08}\u{0C}\u{1F}/"]).jsonData(), as: UTF8.self),
                       #"{"a":"\b\f\u001f/","b":1}"#)
    }

    private func randomValue(_ generator: inout SplitMix64, depth: Int) -> FSJSONValue {
        let pick = generator.next() % (depth > 3 ? 5 : 7)
        switch pick {
        case 0: return .null
        case 1: return .bool(generator.next() % 2 == 0)
        case 2: return .int(Int64(bitPattern: generator.next()) >> Int64(generator.next() % 60))
        case 3: return .double(Double(Int64(bitPattern: generator.next()) % 1_000_000) / 64 + 1 / 128)
        case 4:
            let alphabet = Array("ab\"\\/\n\té日😀 \u{01}")
            return .string(String((0..<Int(generator.next() % 8)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }))
        case 5: return .array((0..<Int(generator.next() % 4)).map { _ in randomValue(&generator, depth: depth + 1) })
        default:
            var object: [String: FSJSONValue] = [:]
            for index in 0..<Int(generator.next() % 4) { object["k\(index)"] = randomValue(&generator, depth: depth + 1) }
            return .object(object)
        }
    }
}
