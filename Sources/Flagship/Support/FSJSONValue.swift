import Foundation

/// A JSON value that keeps the distinctions a flag SDK needs: integers apart from doubles,
/// booleans apart from numbers, and `null` as a value. `Sendable`, `Hashable` and `Codable`,
/// unlike `[String: Any]`.
///
/// The one JSON type of the package: the SDK's flag values, contexts and hits, the request
/// bodies `FlagshipLocalServer` records (`WireJSON` is another name for it) and the values a
/// test gives `FlagshipTesting` (`TestValue`).
///
/// Literals make one: `"blue"`, `true`, `3`, `9.99`, `nil`, `["card", "paypal"]`,
/// `["steps": 2, "express": true]`. Text makes one with `init(parsing:)`, which keeps a
/// number as it is written: `1`, `-0` and `9223372036854775807` are `.int`; `1.0`, `1e0`,
/// `-0.0` and an integer beyond `Int64` are ``double(_:)``. So a value read from its own text
/// (``jsonString()``) is the value that was written (an integral double past 2^53 excepted: it is
/// written as its exact integer), and a literal compares equal to the text it spells (`1.0` to
/// `1.0`, `1` to `1`). Where an integer and a double should be one number, read ``doubleValue``.
public enum FSJSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer: apart from ``double(_:)``, so `3` and `3.0` are different values.
    case int(Int64)
    /// A number written with a fraction or an exponent, or an integer beyond `Int64`.
    case double(Double)
    /// A string.
    case string(String)
    /// An array, in order.
    case array([FSJSONValue])
    /// An object; its members' order is not kept.
    case object([String: FSJSONValue])

    /// The member `key` of an object; `nil` for a missing key or a value that is not an object.
    public subscript(key: String) -> FSJSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The element at `index` of an array; `nil` out of range or for a value that is not an array.
    public subscript(index: Int) -> FSJSONValue? {
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

    /// The integer of `.int`; `nil` for any other kind of value, a double included, and for an
    /// integer beyond `Int` (on a platform where `Int` is narrower than `Int64`).
    public var intValue: Int? {
        if case .int(let value) = self { return Int(exactly: value) }
        return nil
    }

    /// A number of either kind, as a `Double`: what a comparison of numbers wants.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// The elements; `nil` for a value that is not an array.
    public var arrayValue: [FSJSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members; `nil` for a value that is not an object.
    public var objectValue: [String: FSJSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether the value is `null`.
    public var isNull: Bool { self == .null }

    /// An integer, or a double with no fractional part that fits in `Int64`: how the SDK reads
    /// a number it stored (a version, a time).
    package var int64Value: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9.2e18: return Int64(value)
        default: return nil
        }
    }
}

extension FSJSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    /// ``null``.
    public init(nilLiteral: ()) { self = .null }
    /// ``bool(_:)``.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// `.int`.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// ``double(_:)``, a literal such as `1.0` included: as the text `1.0` parses.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// ``string(_:)``.
    public init(stringLiteral value: String) { self = .string(value) }
    /// ``array(_:)``.
    public init(arrayLiteral elements: FSJSONValue...) { self = .array(elements) }

    /// ``object(_:)``; of a repeated key the last value wins, as in parsed text.
    public init(dictionaryLiteral elements: (String, FSJSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension FSJSONValue: CustomStringConvertible {
    /// The compact JSON text of ``jsonString()``: `{"express":true,"steps":2}`.
    public var description: String { jsonString() }
}

extension FSJSONValue: Codable {
    /// Reads the value a decoder gives. A decoder does not say how a number was written:
    /// `JSONDecoder` gives `1.0` as an integer, which is read as `.int`. For the text's own
    /// kinds, parse it with `init(parsing:)`.
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
        } else if let array = try? container.decode([FSJSONValue].self) {
            self = .array(array)
        } else if let object = try? container.decode([String: FSJSONValue].self) {
            self = .object(object)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    /// Writes the value to an encoder. A double with no fractional part is written as its exact
    /// integer: `JSONEncoder` writes 3.316666666666667e+17 as 331666666666666700, which reads
    /// back as that integer, not the double's 331666666666666688.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value):
            if let exact = Int64(exactly: value) { try container.encode(exact) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
