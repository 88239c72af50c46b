import Foundation

/// A flag key declared once, with its type and default: read without casts or repeated defaults.
///
/// ```swift
/// enum Flags {
///     static let checkout = FlagKey("checkout", default: false)
///     static let buttonColor = FlagKey("btnColor", default: "blue")
/// }
/// let enabled: Bool = visitor.value(of: Flags.checkout)
/// ```
///
/// A decision whose value is not of the key's type gives the default, with `TYPE_MISMATCH` in the
/// details; the SDK logs it once per key.
public struct FlagKey<Value: Sendable>: Sendable {
    /// The flag's key, as the campaigns name it.
    public let name: String
    /// What a read gives when the flag is missing, `null`, or not a `Value`.
    public let defaultValue: Value

    /// A key named `name` whose reads give `defaultValue` when the flag cannot.
    public init(_ name: String, default defaultValue: Value) {
        self.name = name
        self.defaultValue = defaultValue
    }
}

extension FSVisitor {
    /// The flag's value, or the key's default when the flag is missing, `null`, or of another
    /// type. Reports the exposure as `FSFlag.value(defaultValue:visitorExposed:)` does.
    public func value<Value>(of key: FlagKey<Value>, visitorExposed: Bool = true) -> Value {
        readFlag(key.name, defaultValue: key.defaultValue, exposing: visitorExposed) ?? key.defaultValue
    }

    /// `value(of:)` with why it is that value (`FSFlag.details(defaultValue:)`).
    public func details<Value>(of key: FlagKey<Value>, visitorExposed: Bool = true) -> FSFlagDetails<Value> {
        readFlagDetails(key.name, defaultValue: key.defaultValue, exposing: visitorExposed)
    }
}
