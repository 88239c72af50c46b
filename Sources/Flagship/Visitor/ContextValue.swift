import Foundation

/// Context values are String, Bool, Int or Double: what targeting can compare.
enum ContextValue {
    /// `value` as a context value, or a sentence saying why it cannot be one.
    static func validate(_ value: Any) -> Result<JSONValue, ContextValueError> {
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
            // What `JSONSerialization` reads: `NSNumber`s, whose booleans must stay booleans.
            if type(of: value) is NSNumber.Type, let number = try? JSONValue(any: value) {
                return .success(number)
            }
            if let integer = value as? any BinaryInteger, let exact = Int64(exactly: integer) {
                return .success(.int(exact))
            }
            if let float = value as? Float, float.isFinite {
                return .success(.double(Double(float)))
            }
            return .failure(ContextValueError(reason: "a \(type(of: value)) is not a String, Bool, Int or Double"))
        }
    }
}

struct ContextValueError: Error {
    let reason: String
}
