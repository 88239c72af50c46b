import Flagship
import Foundation

/// A JSON value as it crossed the wire: what the server parsed from a request body, or what a
/// test builds to answer with. `Sendable` and `Equatable`, unlike `[String: Any]`, so recorded
/// bodies can be kept across threads and compared in assertions (`body["visitorId"] == "v1"`).
///
/// Booleans stay apart from numbers, and integers from fractions: a number whose value is an
/// integer that fits in `Int64` is `.int` (`1`, `1.0` and `1e0` alike), any other `.double`.
public enum WireJSON: Sendable, Equatable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number whose value is an integer that fits in `Int64`.
    case int(Int64)
    /// Any other number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array, in order.
    case array([WireJSON])
    /// An object; its members' order is not kept.
    case object([String: WireJSON])

    /// Parses JSON text, any JSON value at the top level.
    public init(parsing data: Data) throws {
        self = try WireJSONParser.parse(data)
    }

    /// The member `key` of an object; `nil` for a missing key or a value that is not an object.
    public subscript(key: String) -> WireJSON? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The element at `index` of an array; `nil` out of range or for a value that is not an array.
    public subscript(index: Int) -> WireJSON? {
        if case .array(let array) = self, array.indices.contains(index) { return array[index] }
        return nil
    }

    /// The string; `nil` for any other kind of value.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean; `nil` for any other kind of value (a number is not a boolean).
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer; `nil` for any other kind of value, a fractional number included.
    public var intValue: Int64? {
        if case .int(let value) = self { return value }
        return nil
    }

    /// A number of either kind, as a `Double`.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// The elements; `nil` for a value that is not an array.
    public var arrayValue: [WireJSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members; `nil` for a value that is not an object.
    public var objectValue: [String: WireJSON]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether the value is `null`.
    public var isNull: Bool { self == .null }

    /// Compact JSON text with keys sorted by their UTF-8 bytes: equal values give equal text.
    /// Written by hand (every answer of the server is made here; `JSONEncoder` took a twelfth
    /// of a load test's CPU). An integral double is written as an integer, as `JSONEncoder`
    /// does; a non-finite one, which no parsed body holds, as `null`.
    public func jsonData() -> Data {
        var text = ""
        write(into: &text)
        return Data(text.utf8)
    }

    private func write(into text: inout String) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .int(let value): text += String(value)
        case .double(let value):
            if !value.isFinite {
                text += "null"
            } else if value.rounded() == value, abs(value) < 9_007_199_254_740_992, let exact = Int64(exactly: value) {
                text += String(exact)
            } else {
                text += "\(value)"
            }
        case .string(let value): JSONValue.writeString(value, into: &text)
        case .array(let values):
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                value.write(into: &text)
            }
            text += "]"
        case .object(let object):
            text += "{"
            for (index, member) in object.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }).enumerated() {
                if index > 0 { text += "," }
                JSONValue.writeString(member.key, into: &text)
                text += ":"
                member.value.write(into: &text)
            }
            text += "}"
        }
    }
}

extension WireJSON: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let int = try? container.decode(Int64.self) {
            self = .int(int)
        } else if let double = try? container.decode(Double.self) {
            self = .double(double)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([WireJSON].self) {
            self = .array(array)
        } else if let object = try? container.decode([String: WireJSON].self) {
            self = .object(object)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension WireJSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// `.double`, even for a literal such as `1.0`, which parsing makes `.int(1)`: write integral
    /// values as integer literals to compare them with a parsed body.
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: WireJSON...) { self = .array(elements) }

    public init(dictionaryLiteral elements: (String, WireJSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension WireJSON: CustomStringConvertible {
    /// The compact JSON text of `jsonData()`.
    public var description: String { String(decoding: jsonData(), as: UTF8.self) }
}
