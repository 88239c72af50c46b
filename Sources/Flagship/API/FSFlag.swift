import Foundation

/// One flag of a visitor, by key. Reading it never fails and never waits for I/O.
public struct FSFlag: Sendable {
    /// The flag's key, as given to `getFlag(key:)`.
    public let key: String
    let visitor: FSVisitor
    /// The default the 3.2 call `getFlag(key:defaultValue:)` was given, for its `value()`.
    let legacyDefault: FSJSONValue?

    init(key: String, visitor: FSVisitor, legacyDefault: FSJSONValue? = nil) {
        self.key = key
        self.visitor = visitor
        self.legacyDefault = legacyDefault
    }

    /// The flag's value, or `defaultValue` when the flag does not exist, is `null`, or is not of
    /// the default's type (an Int default takes a whole JSON number, a Double default any number;
    /// a Bool never comes from a number). A `nil` default returns the raw value.
    ///
    /// With `visitorExposed` (the default), reading a flag that exists reports the exposure:
    /// one activate per variation for this visitor instance. A type mismatch reports nothing.
    // Compiled for the common flag types in advance, for callers in other modules: the generic
    // form pays for instantiating `Optional<T>` at each read.
    @_specialize(exported: true, where T == String)
    @_specialize(exported: true, where T == Bool)
    @_specialize(exported: true, where T == Int)
    @_specialize(exported: true, where T == Double)
    public func value<T>(defaultValue: T?, visitorExposed: Bool = true) -> T? {
        visitor.readFlag(key, defaultValue: defaultValue, exposing: visitorExposed)
    }

    /// Reports that the visitor saw this flag (after `value(defaultValue:visitorExposed: false)`).
    public func visitorExposed() {
        let (entry, status) = visitor.flagSnapshot(key)
        guard let entry, status != .PANIC else { return }
        visitor.expose(entry, defaultValue: { .null })
    }

    /// Whether the visitor was given this flag (even with a `null` value).
    public func exists() -> Bool {
        visitor.flagSnapshot(key).entry != nil
    }

    /// The campaign behind the flag; empty when the flag does not exist.
    public func metadata() -> FSFlagMetadata {
        visitor.flagSnapshot(key).entry?.metadata ?? .empty
    }

    /// Where the flag stands: `NOT_FOUND` when the visitor was not given it, `PANIC` in panic
    /// mode, otherwise `FETCHED` or `FETCH_REQUIRED` as the visitor's fetch status says.
    public var status: FSFlagStatus {
        visitor.flagSnapshot(key).status
    }
}

/// How a flag's JSON value becomes the type its reader asks for.
enum FlagValue {
    static func convert<T>(_ value: FSJSONValue, to type: T.Type) -> T? {
        if T.self == Any.self { return value.foundationValue as? T }
        switch value {
        case .null:
            return nil
        case .bool(let bool):
            return bool as? T
        case .string(let string):
            return string as? T
        case .int(let int):
            if T.self == Int.self { return Int(exactly: int) as? T }
            if T.self == Int64.self { return int as? T }
            if T.self == Int32.self { return Int32(exactly: int) as? T }
            if T.self == UInt.self { return UInt(exactly: int) as? T }
            if T.self == Double.self { return Double(int) as? T }
            if T.self == Float.self { return Float(int) as? T }
            return nil
        case .double(let double):
            if T.self == Double.self { return double as? T }
            if T.self == Float.self { return Float(double) as? T }
            if T.self == Int.self { return Int(exactly: double) as? T }
            if T.self == Int64.self { return Int64(exactly: double) as? T }
            if T.self == Int32.self { return Int32(exactly: double) as? T }
            if T.self == UInt.self { return UInt(exactly: double) as? T }
            return nil
        case .array, .object:
            return value.foundationValue as? T
        }
    }
}

extension FSVisitor {
    /// Once per flag key and type in a start of the SDK: a read in a request loop would
    /// otherwise log at every request.
    func logMismatch<T>(key: String, value: FSJSONValue, expected: T.Type) {
        guard let runtime, runtime.mismatchesLogged.withLock({ $0.insert("\(key) \(T.self)").inserted }) else { return }
        runtime.logger.warning("Flag '\(key)' holds \(value.kindDescription), not \(T.self): the default value is returned and no exposure is sent (said once for this flag)")
    }
}

extension FSJSONValue {
    /// What kind of JSON value this is, for a log line (never the value: it may be personal data).
    var kindDescription: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .double: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
