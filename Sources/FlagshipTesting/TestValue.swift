import Flagship

/// A flag value as a test sets it, or a context value as the SDK sent it: what JSON holds, with
/// integers apart from doubles and `null` as a value.
///
/// Literals make one: `"blue"`, `true`, `3`, `9.99`, `nil`, `["card", "paypal"]`,
/// `["steps": 2, "express": true]`.
public enum TestValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([TestValue])
    case object([String: TestValue])

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

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

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var arrayValue: [TestValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: TestValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

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
    var testValue: TestValue { get }
}

extension TestValue: TestValueConvertible {
    public var testValue: TestValue { self }
}

extension Bool: TestValueConvertible {
    public var testValue: TestValue { .bool(self) }
}

extension Int: TestValueConvertible {
    public var testValue: TestValue { .int(self) }
}

extension Double: TestValueConvertible {
    public var testValue: TestValue { .double(self) }
}

extension String: TestValueConvertible {
    public var testValue: TestValue { .string(self) }
}

extension Array: TestValueConvertible where Element: TestValueConvertible {
    public var testValue: TestValue { .array(map(\.testValue)) }
}

extension Dictionary: TestValueConvertible where Key == String, Value: TestValueConvertible {
    public var testValue: TestValue { .object(mapValues(\.testValue)) }
}

extension Optional: TestValueConvertible where Wrapped: TestValueConvertible {
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
