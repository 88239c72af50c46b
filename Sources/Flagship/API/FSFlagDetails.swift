import Foundation

/// Why a flag read gave its value, in OpenFeature's vocabulary (the names LaunchDarkly and
/// Unleash users know).
public enum FSFlagReason: String, Sendable, CaseIterable {
    /// The value comes from the bucketing file given at start (`withBootstrap`), before any file
    /// was stored or downloaded.
    case STATIC
    /// The default: the flag exists but its value is `null`, or no campaign gives it.
    case DEFAULT
    /// A campaign whose targeting the visitor matched gives it (a toggle, a personalization).
    case TARGETING_MATCH
    /// An A/B test gives it: the visitor's bucket fell in this variation's allocation.
    case SPLIT
    /// The visitor cache gives it: an earlier decision, read back at `build()`, not fetched since.
    case CACHED
    /// Flags are off: the SDK is in panic mode, every flag gives its default.
    case DISABLED
    /// A decision gives it, but the visitor's context changed since (`fetchFlags` is due) or the
    /// last fetch failed: the value may be out of date.
    case STALE
    /// The read failed (`errorCode` says why): the default is returned.
    case ERROR
}

/// Why a flag read failed, when its reason is `ERROR` (or `DEFAULT` for a flag not found).
public enum FSFlagErrorCode: String, Sendable, CaseIterable {
    /// No campaign gives this visitor the flag.
    case FLAG_NOT_FOUND
    /// The flag's value is not of the default's type.
    case TYPE_MISMATCH
    /// The SDK is not started, or the visitor's flags were never decided (nor found cached).
    case PROVIDER_NOT_READY
    /// The visitor's cached decision could not be read (and no fetch decided since).
    case PARSE_ERROR
    /// Any other failure.
    case GENERAL
}

/// Where the visitor's flags were decided.
public enum FSFlagSource: String, Sendable, CaseIterable {
    /// The Decision API answered `fetchFlags`.
    case decisionAPI = "decision_api"
    /// The bucketing file, on this machine.
    case bucketingFile = "bucketing_file"
    /// The bucketing file given at start (`withBootstrap`), before any was stored or downloaded.
    case bootstrap
    /// The visitor cache: a decision of an earlier run (or another instance), read at `build()`.
    case cache
}

/// A flag read with its explanation: the value and why it is that value.
///
/// ```swift
/// let details = visitor.getFlag(key: "btnColor").details(defaultValue: "blue")
/// print(details.value, details.reason, details.variationId)   // "green" SPLIT "v-green"
/// ```
public struct FSFlagDetails<T> {
    /// What `value(defaultValue:)` gives for the same read.
    public let value: T?
    /// Why the read gave `value`.
    public let reason: FSFlagReason
    /// Why the read failed; `nil` when it did not (a flag not found gives `FLAG_NOT_FOUND` with
    /// reason `DEFAULT`).
    public let errorCode: FSFlagErrorCode?
    /// What went wrong, for a person; `nil` without an error code.
    public let errorMessage: String?
    /// Where the visitor's flags were decided; `nil` before any decision.
    public let source: FSFlagSource?
    /// The decision's entry for the flag: kept by reference, so that a read copies no metadata.
    let entry: FlagEntry?

    /// The campaign behind the value (campaign id and type, slug, variation group); empty when no
    /// campaign gives the flag.
    public var metadata: FSFlagMetadata { entry?.metadata ?? .empty }
    /// The variation (the variant, in OpenFeature's words); empty when no campaign gives the flag.
    public var variationId: String { metadata.variationId }
    /// The variation's name; empty when no campaign gives the flag or the decision named none.
    public var variationName: String { metadata.variationName }
}

extension FSFlagDetails: Sendable where T: Sendable {}

extension FSFlag {
    /// The value, as `value(defaultValue:visitorExposed:)` gives it (and reporting the exposure the
    /// same way), with why it is that value.
    @_specialize(exported: true, where T == String)
    @_specialize(exported: true, where T == Bool)
    @_specialize(exported: true, where T == Int)
    @_specialize(exported: true, where T == Double)
    public func details<T>(defaultValue: T?, visitorExposed: Bool = true) -> FSFlagDetails<T> {
        visitor.readFlagDetails(key, defaultValue: defaultValue, exposing: visitorExposed)
    }
}

extension FSVisitor {
    /// `FSFlag.details`, between the visitor's hooks when it has some.
    func readFlagDetails<T>(_ key: String, defaultValue: T?, exposing: Bool) -> FSFlagDetails<T> {
        guard let hooks else { return evaluateFlag(key, defaultValue: defaultValue, exposing: exposing) }
        return hooks.run(key, visitorId: visitorId, defaultValue: defaultValue) {
            evaluateFlag(key, defaultValue: defaultValue, exposing: exposing)
        }
    }

    /// Everything read in one pass under the lock, so that the reason matches the value even
    /// while a fetch runs.
    private func evaluateFlag<T>(_ key: String, defaultValue: T?, exposing: Bool) -> FSFlagDetails<T> {
        let panic = sdkStatus == .SDK_PANIC
        let (entry, fetchStatus, source, toExpose, cacheUnreadable) = withState { state in
            let entry = state.flags[key]
            let toExpose = exposing && entry.map { !state.isExposureReported($0) } ?? false
            return (entry, state.fetchStatus, state.decidedBy, toExpose, state.cachedDecisionUnreadable)
        }
        func failed(_ reason: FSFlagReason, _ code: FSFlagErrorCode?, _ message: String?) -> FSFlagDetails<T> {
            FSFlagDetails(value: defaultValue, reason: reason, errorCode: code, errorMessage: message,
                          source: source, entry: entry)
        }
        if panic || fetchStatus == .PANIC {
            return failed(.DISABLED, nil, nil)
        }
        guard let entry else {
            guard sdkStatus != .SDK_NOT_INITIALIZED else { return failed(.ERROR, .PROVIDER_NOT_READY, "the SDK is not started") }
            guard source != nil else {
                if cacheUnreadable {
                    return failed(.ERROR, .PARSE_ERROR, "this visitor's cached decision could not be read (logged): call fetchFlags()")
                }
                return failed(.ERROR, .PROVIDER_NOT_READY, "this visitor's flags were not decided yet: call fetchFlags()")
            }
            return failed(.DEFAULT, .FLAG_NOT_FOUND, "no campaign gives this visitor the flag '\(key)'")
        }
        let value: T?
        if entry.value.isNull {
            value = defaultValue
        } else if let converted = FlagValue.convert(entry.value, to: T.self) {
            value = converted
        } else {
            logMismatch(key: key, value: entry.value, expected: T.self)
            return failed(.ERROR, .TYPE_MISMATCH, "the flag's value (\(entry.value.kindDescription)) is not a \(T.self)")
        }
        if toExpose {
            expose(entry, defaultValue: { defaultValue.flatMap { try? FSJSONValue(any: $0) } ?? .null })
        }
        let reason: FSFlagReason
        if entry.value.isNull {
            reason = .DEFAULT
        } else if source == .cache {
            // No fetch succeeded since the visitor was read back (one would set the source).
            reason = .CACHED
        } else if fetchStatus != .FETCHED {
            reason = .STALE
        } else {
            reason = .decided(by: source, isSplit: entry.isSplit)
        }
        return FSFlagDetails(value: value, reason: reason, errorCode: nil, errorMessage: nil,
                             source: source, entry: entry)
    }
}

extension FSFlagReason {
    /// The reason of a flag a fetch decided: `STATIC` on the bootstrap file, else `SPLIT` for an
    /// A/B test's variation (`isSplit`: its campaign type is `ab`), `TARGETING_MATCH` for any other.
    static func decided(by source: FSFlagSource?, isSplit: Bool) -> FSFlagReason {
        if source == .bootstrap { return .STATIC }
        return isSplit ? .SPLIT : .TARGETING_MATCH
    }
}
