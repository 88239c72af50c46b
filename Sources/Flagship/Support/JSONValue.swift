import Foundation

/// A JSON value that keeps the distinctions a flag SDK needs: integers apart from doubles, booleans
/// apart from numbers, and `null` as a value. `Sendable`, unlike `[String: Any]`.
enum JSONValue: Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// An integer, or a double with no fractional part that fits in `Int64`.
    var int64Value: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9.2e18: return Int64(value)
        default: return nil
        }
    }

    var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    var isNull: Bool { self == .null }
}

extension JSONValue: Codable {
    init(from decoder: any Decoder) throws {
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
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else if let object = try? container.decode([String: JSONValue].self) {
            self = .object(object)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    func encode(to encoder: any Encoder) throws {
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

extension JSONValue {
    /// Parses JSON text.
    init(json data: Data) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: data)
    }

    /// Converts what `JSONSerialization` or a caller's `[String: Any]` holds. Goes through JSON
    /// text, because only `JSONSerialization` tells a boolean `NSNumber` from the number 1.
    init(any value: Any) throws {
        guard JSONSerialization.isValidJSONObject([value]) else {
            throw JSONValueError.notRepresentable(String(describing: type(of: value)))
        }
        let data = try JSONSerialization.data(withJSONObject: [value], options: [.fragmentsAllowed])
        guard case .array(let wrapped) = try JSONValue(json: data), let first = wrapped.first else {
            throw JSONValueError.notRepresentable(String(describing: type(of: value)))
        }
        self = first
    }

    /// JSON text with sorted keys: stable, so equal values give equal text.
    func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    func jsonString() throws -> String {
        String(decoding: try jsonData(), as: UTF8.self)
    }

    /// The value as `JSONSerialization` would give it: `[String: Any]`, `[Any]`, `NSNull`...
    var foundationValue: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let value): return value
        case .int(let value): return Int(truncatingIfNeeded: value)
        case .double(let value): return value
        case .string(let value): return value
        case .array(let values): return values.map(\.foundationValue)
        case .object(let object): return object.mapValues(\.foundationValue)
        }
    }
}

enum JSONValueError: Error, Equatable, CustomStringConvertible {
    case notRepresentable(String)

    var description: String {
        switch self {
        case .notRepresentable(let type): return "a value of type \(type) cannot be written as JSON"
        }
    }
}
