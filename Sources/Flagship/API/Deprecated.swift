import Foundation

// The calls of the 3.2 reference that the current one renamed or dropped, kept as thin forwards so
// 3.2 code still builds: with a deprecation warning that names the current call.

/// 3.2's name for the SDK status.
@available(*, deprecated, renamed: "FSSdkStatus")
public typealias FStatus = FSSdkStatus

extension FSSdkStatus {
    /// 3.2: not started, or a start was refused.
    @available(*, deprecated, renamed: "SDK_NOT_INITIALIZED")
    public static var NOT_INITIALIZED: FSSdkStatus { .SDK_NOT_INITIALIZED }

    /// 3.2: started in bucketing mode, still waiting for the campaigns.
    @available(*, deprecated, renamed: "SDK_INITIALIZING")
    public static var POLLING: FSSdkStatus { .SDK_INITIALIZING }

    /// 3.2: the last decision said panic; flags give their defaults.
    @available(*, deprecated, renamed: "SDK_PANIC")
    public static var PANIC: FSSdkStatus { .SDK_PANIC }

    /// 3.2: started and ready.
    @available(*, deprecated, renamed: "SDK_INITIALIZED")
    public static var READY: FSSdkStatus { .SDK_INITIALIZED }
}

extension Flagship {
    /// 3.2: a visitor that has consented unless the builder's `hasConsented(hasConsented:)` says
    /// otherwise (3.2's default was `true`).
    @available(*, deprecated, message: "use newVisitor(visitorId:hasConsented:instanceType:), which asks for the consent")
    public func newVisitor(_ visitorId: String, instanceType: Instance = .SHARED_INSTANCE) -> FSVisitorBuilder {
        newVisitor(visitorId: visitorId, hasConsented: true, instanceType: instanceType)
    }

    /// 3.2: the visitor last built with `Instance.SHARED_INSTANCE`.
    @available(*, deprecated, message: "use Flagship.sharedInstance.sharedVisitor")
    public static func getVisitor() -> FSVisitor? {
        sharedInstance.sharedVisitor
    }
}

extension FSVisitor {
    /// 3.2 took the default when getting the flag; it now goes to `value(defaultValue:)`, where
    /// its type says what the flag's value must be.
    @available(*, deprecated, message: "use getFlag(key:), then value(defaultValue:) on the flag")
    public func getFlag<T>(key: String, defaultValue: T?) -> FSFlag {
        FSFlag(key: key, visitor: self, legacyDefault: defaultValue.flatMap { try? FSJSONValue(any: $0) } ?? .null)
    }

    /// 3.2: records the consent and sends the consent hit.
    @available(*, deprecated, renamed: "setConsent(hasConsented:)")
    public func sendHitConsent(_ hasConsented: Bool) {
        setConsent(hasConsented: hasConsented)
    }
}

extension FSFlag {
    /// 3.2: the flag's value, or the default given to `getFlag(key:defaultValue:)` when the flag
    /// does not exist, is `null` or is not of the default's type; exposure reported when
    /// `visitorExposed`, as `value(defaultValue:visitorExposed:)` does. A flag got without a
    /// default gives its raw value (`nil` when missing).
    @available(*, deprecated, message: "use value(defaultValue:visitorExposed:)")
    public func value(visitorExposed: Bool = true) -> Any? {
        // Each read is typed by the default's own type (not `Any`), so a flag of another type
        // gives the default, as `value(defaultValue:)` does.
        func read<T>(_ fallback: T) -> Any? {
            let value: T? = visitor.readFlag(key, defaultValue: fallback, exposing: visitorExposed)
            return value
        }
        switch legacyDefault ?? .null {
        case .null:
            let raw: Any? = visitor.readFlag(key, defaultValue: nil as Any?, exposing: visitorExposed)
            return raw
        case .bool(let fallback): return read(fallback)
        case .string(let fallback): return read(fallback)
        case .int(let fallback): return read(Int(fallback))
        case .double(let fallback): return read(fallback)
        case .array(let fallback): return read(fallback.map(\.foundationValue))
        case .object(let fallback): return read(fallback.mapValues(\.foundationValue))
        }
    }

    /// 3.2: reports that the visitor saw this flag.
    @available(*, deprecated, renamed: "visitorExposed()")
    public func userExposed() {
        visitorExposed()
    }
}
