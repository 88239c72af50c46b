import Flagship

/// A flag value as a test sets it, or a context value as the SDK sent it: what JSON holds, with
/// integers apart from doubles and `null` as a value.
///
/// Literals make one: `"blue"`, `true`, `3`, `9.99`, `nil`, `["card", "paypal"]`,
/// `["steps": 2, "express": true]`.
public enum TestValue: Sendable, Hashable {
    /// `null`: a flag of that value reads as its default.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer: apart from `double`, so `3` and `3.0` are different values.
    case int(Int)
    /// A number with a fraction.
    case double(Double)
    /// A string.
    case string(String)
    /// An array, in order.
    case array([TestValue])
    /// An object; its members' order is not kept.
    case object([String: TestValue])

    /// The boolean; `nil` for any other kind of value.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer; `nil` for any other kind of value, a double included.
    public var intValue: Int? {
        if case .int(let value) = self { return value }
        return nil
    }

    /// A double, or an integer as a double: what a context predicate comparing numbers wants.
    public var doubleValue: Double? {
        switch self {
        case .double(let value): return value
        case .int(let value): return Double(value)
        default: return nil
        }
    }

    /// The string; `nil` for any other kind of value.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The elements; `nil` for a value that is not an array.
    public var arrayValue: [TestValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members; `nil` for a value that is not an object.
    public var objectValue: [String: TestValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether the value is `null`.
    public var isNull: Bool { self == .null }

    /// A member of an object value.
    public subscript(key: String) -> TestValue? {
        objectValue?[key]
    }
}

extension TestValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: TestValue...) { self = .array(elements) }

    public init(dictionaryLiteral elements: (String, TestValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension TestValue: CustomStringConvertible {
    /// The value as JSON text, object keys sorted: `{"express":true,"steps":2}`.
    public var description: String { json.jsonString() }
}

/// A Swift value a test can give as a flag value: with it, a typed key (`FlagKey<Bool>`) only
/// takes a value of its type.
public protocol TestValueConvertible: Sendable {
    /// The value as the in-process Decision API answers it.
    var testValue: TestValue { get }
}

extension TestValue: TestValueConvertible {
    /// The value itself.
    public var testValue: TestValue { self }
}

/// A `Bool` as a test's flag value.
extension Bool: TestValueConvertible {
    /// `.bool(self)`.
    public var testValue: TestValue { .bool(self) }
}

/// An `Int` as a test's flag value.
extension Int: TestValueConvertible {
    /// `.int(self)`.
    public var testValue: TestValue { .int(self) }
}

/// A `Double` as a test's flag value.
extension Double: TestValueConvertible {
    /// `.double(self)`, even for a whole number.
    public var testValue: TestValue { .double(self) }
}

/// A `String` as a test's flag value.
extension String: TestValueConvertible {
    /// `.string(self)`.
    public var testValue: TestValue { .string(self) }
}

/// An array of convertible elements as a test's flag value: a JSON array.
extension Array: TestValueConvertible where Element: TestValueConvertible {
    /// `.array` of each element's `testValue`, in order.
    public var testValue: TestValue { .array(map(\.testValue)) }
}

/// A dictionary of convertible values by string keys as a test's flag value: a JSON object.
extension Dictionary: TestValueConvertible where Key == String, Value: TestValueConvertible {
    /// `.object` of each value's `testValue`, by key.
    public var testValue: TestValue { .object(mapValues(\.testValue)) }
}

/// An optional convertible value as a test's flag value, `nil` as `null`.
extension Optional: TestValueConvertible where Wrapped: TestValueConvertible {
    /// The wrapped value's `testValue`, or `.null` for `nil`.
    public var testValue: TestValue { map(\.testValue) ?? .null }
}

// MARK: The SDK's JSON

extension TestValue {
    init(_ json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .int(let value): self = Int(exactly: value).map(TestValue.int) ?? .double(Double(value))
        case .double(let value): self = .double(value)
        case .string(let value): self = .string(value)
        case .array(let values): self = .array(values.map(TestValue.init))
        case .object(let object): self = .object(object.mapValues(TestValue.init))
        }
    }

    var json: JSONValue {
        switch self {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .int(let value): return .int(Int64(value))
        case .double(let value): return .double(value)
        case .string(let value): return .string(value)
        case .array(let values): return .array(values.map(\.json))
        case .object(let object): return .object(object.mapValues(\.json))
        }
    }
}
