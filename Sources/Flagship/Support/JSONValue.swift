import Foundation

/// A JSON value that keeps the distinctions a flag SDK needs: integers apart from doubles, booleans
/// apart from numbers, and `null` as a value. `Sendable`, unlike `[String: Any]`.
package enum JSONValue: Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    package var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    package var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// An integer, or a double with no fractional part that fits in `Int64`.
    package var int64Value: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9.2e18: return Int64(value)
        default: return nil
        }
    }

    package var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    package var isNull: Bool { self == .null }
}

extension JSONValue: Codable {
    package init(from decoder: any Decoder) throws {
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

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value):
            // An integral double is written as its exact integer: `JSONEncoder` writes 3.316666666666667e+17
            // as 331666666666666700, which reads back as that integer, not the double's 331666666666666688.
            if let exact = Int64(exactly: value) { try container.encode(exact) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONValue {
    /// Parses JSON text, strictly: a value `TolerantJSON` would replace (a number beyond a double,
    /// a lone surrogate, nesting past its depth) refuses the whole text. Numbers are read exactly
    /// (`-114688.00000000001` stays that double; `JSONSerialization` here read it as the integer
    /// -114688), so a hit or a context read back from the store is the one that was written.
    package init(json data: Data) throws {
        let parsed = try TolerantJSON(data)
        if let first = parsed.unusable.first {
            throw TolerantJSON.UnusableValue(first)
        }
        self = parsed.value
    }

    /// Converts what `JSONSerialization` gives, or a caller's `[String: Any]`, without a round
    /// trip through text. Booleans are told from numbers by their dynamic type: a Swift `Bool`,
    /// or the boolean `NSNumber` that `JSONSerialization` makes for `true` and `false`.
    package init(any value: Any) throws {
        switch value {
        case let string as String:
            self = .string(string)
        case let object as [String: Any]:
            self = .object(try object.mapValues(JSONValue.init(any:)))
        case is NSNull:
            self = .null
        case let bool as Bool where type(of: value) == Bool.self || type(of: value) == Self.booleanNumberType:
            self = .bool(bool)
        case let int as Int:
            self = .int(Int64(int))
        case let int as Int64:
            self = .int(int)
        case let decimal as NSDecimalNumber where decimal.doubleValue.isFinite:
            // What `JSONSerialization` makes of a number with a long mantissa (0.5000000596046448,
            // as `jsonString()` writes a `Float` widened; some 19-digit integers): its `Int` cast
            // fails and its `Double` is off by an ulp, its decimal text is exact.
            let text = decimal.stringValue
            self = Int64(text).map(JSONValue.int) ?? .double(Double(text) ?? decimal.doubleValue)
        case let double as Double where double.isFinite:
            self = .double(double)
        case let float as Float where float.isFinite:
            self = .double(Double(float))
        case let number as NSNumber where type(of: value) is NSNumber.Type && number.doubleValue.isFinite:
            // A number `JSONSerialization` read that fits neither `Int64` nor `Double` exactly
            // (`UInt64.max`): its nearest double, rather than refusing the whole document.
            self = .double(number.doubleValue)
        case let array as [Any]:
            self = .array(try array.map(JSONValue.init(any:)))
        default:
            // An optional boxed in `Any` (`["label": nil as String?]`): its value, or null.
            let mirror = Mirror(reflecting: value)
            guard mirror.displayStyle == .optional else {
                throw JSONValueError.notRepresentable(String(describing: type(of: value)))
            }
            if let wrapped = mirror.children.first?.value {
                try self.init(any: wrapped)
            } else {
                self = .null
            }
        }
    }

    static let booleanNumberType = type(of: NSNumber(value: true))

    /// JSON text with sorted keys: stable, so equal values give equal text. Written by hand
    /// because it is on the path of every cached hit, where `JSONEncoder` costs most of the time.
    package func jsonString() -> String {
        var text = ""
        write(into: &text)
        return text
    }

    package func jsonData() -> Data {
        Data(jsonString().utf8)
    }

    /// Appends the value's text (`jsonString()`'s layout) to `text`.
    func write(into text: inout String, integralDoubles: IntegralDoubles = .asDoubles) {
        switch self {
        case .null:
            text += "null"
        case .bool(let value):
            text += value ? "true" : "false"
        case .int(let value):
            text += String(value)
        case .double(let value):
            // Swift prints the shortest text that reads back the same, which JSON accepts; a
            // non-finite value cannot be written in JSON. Past 2^53 an integral double is always
            // written as its exact integer: "3.316666666666667e+17" reads back as the integer
            // 331666666666666700, not the double's 331666666666666688.
            let asInteger = integralDoubles == .asIntegers || abs(value) >= 9_007_199_254_740_992
            if value.isFinite, asInteger, let exact = Int64(exactly: value) {
                text += String(exact)
            } else {
                text += value.isFinite ? "\(value)" : "null"
            }
        case .string(let value):
            Self.writeString(value, into: &text)
        case .array(let values):
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                value.write(into: &text, integralDoubles: integralDoubles)
            }
            text += "]"
        case .object(let object):
            text += "{"
            for (index, member) in object.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { text += "," }
                Self.writeString(member.key, into: &text)
                text += ":"
                member.value.write(into: &text, integralDoubles: integralDoubles)
            }
            text += "}"
        }
    }

    /// How `write(into:)` writes a double with no fractional part.
    enum IntegralDoubles {
        /// `15.0`: a hit's amount is sent as the app gave it.
        case asDoubles
        /// `15`, as `JSONEncoder` writes it: the visitor cache document's layout, read back as an
        /// integer, so that a document written again is the same text.
        case asIntegers
    }

    /// Appends `string` as a JSON string literal (the local server's `WireJSON` writes with it too).
    package static func writeString(_ string: String, into text: inout String) {
        text += "\""
        // Most strings need no escape: copy them whole.
        guard string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            text += string
            text += "\""
            return
        }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }

    /// The value as `JSONSerialization` would give it: `[String: Any]`, `[Any]`, `NSNull`...
    package var foundationValue: Any {
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
