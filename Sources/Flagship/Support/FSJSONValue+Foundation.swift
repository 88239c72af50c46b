import Foundation

extension FSJSONValue {
    /// Converts what `JSONSerialization` gives, or a caller's `[String: Any]`, without a round
    /// trip through text. Booleans are told from numbers by their dynamic type: a Swift `Bool`,
    /// or the boolean `NSNumber` that `JSONSerialization` makes for `true` and `false`.
    package init(any value: Any) throws {
        switch value {
        case let string as String:
            self = .string(string)
        case let object as [String: Any]:
            self = .object(try object.mapValues(FSJSONValue.init(any:)))
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
            self = Int64(text).map(FSJSONValue.int) ?? .double(Double(text) ?? decimal.doubleValue)
        case let double as Double where double.isFinite:
            self = .double(double)
        case let float as Float where float.isFinite:
            self = .double(Double(float))
        case let number as NSNumber where type(of: value) is NSNumber.Type && number.doubleValue.isFinite:
            // A number `JSONSerialization` read that fits neither `Int64` nor `Double` exactly
            // (`UInt64.max`): its nearest double, rather than refusing the whole document.
            self = .double(number.doubleValue)
        case let array as [Any]:
            self = .array(try array.map(FSJSONValue.init(any:)))
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
