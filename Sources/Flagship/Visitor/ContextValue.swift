import Foundation

/// Context values are String, Bool, Int or Double: what targeting can compare.
package enum ContextValue {
    /// The value `key` takes in the visitor's context, or why it cannot: `fs_` keys are the SDK's own
    /// (sent beside the context with every decision request), and the value must be one targeting compares.
    static func check(key: String, _ value: Any) -> Result<FSJSONValue, ContextError> {
        if key.hasPrefix("fs_") {
            return .failure(ContextError(key: key, reason: "keys starting with fs_ belong to the SDK"))
        }
        return validate(value).mapError { ContextError(key: key, reason: $0.reason) }
    }

    /// `value` as a context value, or a sentence saying why it cannot be one.
    package static func validate(_ value: Any) -> Result<FSJSONValue, ContextValueError> {
        switch value {
        case let string as String:
            return .success(.string(string))
        case let bool as Bool where type(of: value) == Bool.self:
            return .success(.bool(bool))
        case let int as Int where type(of: value) == Int.self:
            return .success(.int(Int64(int)))
        case let double as Double where type(of: value) == Double.self:
            guard double.isFinite else { return .failure(ContextValueError(reason: "\(double) is not a finite number")) }
            return .success(.double(double))
        default:
            // What `JSONSerialization` reads: `NSNumber`s, whose booleans must stay booleans, and whose
            // integers beyond `Int64` (`18446744073709551615`) would only be sent as a nearby double.
            if let number = value as? NSNumber, type(of: value) is NSNumber.Type {
                let text = number.stringValue
                let isFloatingPoint = !(number is NSDecimalNumber) && ["d", "f"].contains(String(cString: number.objCType))
                if !isFloatingPoint, text.range(of: #"^-?[0-9]+$"#, options: .regularExpression) != nil, Int64(text) == nil {
                    return .failure(ContextValueError(reason: "\(text) is an integer outside the 64-bit range and cannot be sent exactly"))
                }
                if let converted = try? FSJSONValue(any: value) { return .success(converted) }
            }
            if let integer = value as? any BinaryInteger {
                guard let exact = Int64(exactly: integer) else {
                    return .failure(ContextValueError(reason: "\(integer) is an integer outside the 64-bit range and cannot be sent exactly"))
                }
                return .success(.int(exact))
            }
            if let float = value as? Float, float.isFinite {
                return .success(.double(Double(float)))
            }
            return .failure(ContextValueError(reason: "a \(type(of: value)) is not a String, Bool, Int or Double"))
        }
    }
}

package struct ContextValueError: Error {
    package let reason: String
}

/// A context value refused: its key, and why. Thrown by `updateContext(checking:)` and
/// `withContext(checking:)`; the other context calls log it and keep the other keys.
public struct ContextError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The refused key.
    public let key: String
    /// Why it was refused (a key starting with `fs_`, a value of another type).
    public let reason: String

    /// `context key '<key>' refused: <reason>`, for a log.
    public var description: String { "context key '\(key)' refused: \(reason)" }
}
