import Flagship

/// A flag value as a test sets it, or a context value as the SDK sent it: `FSJSONValue`, the
/// SDK's one JSON type, under the name this module's first versions used. Literals make one as
/// before (`"blue"`, `true`, `3`, `9.99`, `nil`, `["card", "paypal"]`); `.int` holds an `Int64`.
@available(*, deprecated, renamed: "FSJSONValue", message: "TestValue is FSJSONValue, the SDK's one JSON type: write FSJSONValue")
public typealias TestValue = FSJSONValue

/// A Swift value a test can give as a flag value: with it, a typed key (`FlagKey<Bool>`) only
/// takes a value of its type.
public protocol TestValueConvertible: Sendable {
    /// The value as the in-process Decision API answers it.
    var testValue: FSJSONValue { get }
}

/// A JSON value as a test's flag value, as it is.
extension FSJSONValue: TestValueConvertible {
    /// The value itself.
    public var testValue: FSJSONValue { self }
}

/// A `Bool` as a test's flag value.
extension Bool: TestValueConvertible {
    /// `.bool(self)`.
    public var testValue: FSJSONValue { .bool(self) }
}

/// An `Int` as a test's flag value.
extension Int: TestValueConvertible {
    /// `.int(Int64(self))`.
    public var testValue: FSJSONValue { .int(Int64(self)) }
}

/// A `Double` as a test's flag value.
extension Double: TestValueConvertible {
    /// `.double(self)`, even for a whole number.
    public var testValue: FSJSONValue { .double(self) }
}

/// A `String` as a test's flag value.
extension String: TestValueConvertible {
    /// `.string(self)`.
    public var testValue: FSJSONValue { .string(self) }
}

/// An array of convertible elements as a test's flag value: a JSON array.
extension Array: TestValueConvertible where Element: TestValueConvertible {
    /// `.array` of each element's `testValue`, in order.
    public var testValue: FSJSONValue { .array(map(\.testValue)) }
}

/// A dictionary of convertible values by string keys as a test's flag value: a JSON object.
extension Dictionary: TestValueConvertible where Key == String, Value: TestValueConvertible {
    /// `.object` of each value's `testValue`, by key.
    public var testValue: FSJSONValue { .object(mapValues(\.testValue)) }
}

/// An optional convertible value as a test's flag value, `nil` as `null`.
extension Optional: TestValueConvertible where Wrapped: TestValueConvertible {
    /// The wrapped value's `testValue`, or `.null` for `nil`.
    public var testValue: FSJSONValue { map(\.testValue) ?? .null }
}
