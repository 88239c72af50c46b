import FlagshipStore
import Logging

/// Code run around every flag evaluation: before it, then after it (or on its error), with the
/// flag key, the default, the visitor id, and the value with its explanation. Register hooks on the
/// configuration (`FSConfigBuilder.withHooks`, for every visitor) or on one visitor
/// (`FSVisitorBuilder.withHooks`).
///
/// An evaluation is a read of a value: `FSFlag.value(defaultValue:)`, `FSFlag.details(defaultValue:)`,
/// `FSVisitor.value(of:)` and `FSVisitor.details(of:)`, and the 3.2 `FSFlag.value(visitorExposed:)`.
/// `exists()`, `metadata()`, `status` and `visitorExposed()` evaluate nothing and run no hook.
///
/// Hooks run on the reading thread, in the read, with no lock of the SDK held: a slow hook delays
/// that read only. Whatever a hook does, the read returns the value and reports the exposure it
/// would without hooks. A hook that throws is skipped for that stage (the other hooks still run),
/// logged once per hook type and stage in a start of the SDK, and told to
/// `FlagshipInstrumentation.hookFailed(_:)`. Every method has a default that does nothing.
///
/// Order: `before` runs the configuration's hooks, then the visitor's, each in the order given;
/// `after` and `error` run them in the reverse order, so that a hook's `before` and `after`
/// enclose those of the hooks registered after it.
public protocol FlagshipHook: Sendable {
    /// Called before the flag is evaluated.
    func before(_ evaluation: FSEvaluation) throws
    /// Called after an evaluation without an error code.
    func after(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) throws
    /// Called, instead of `after`, after an evaluation with an error code (`TYPE_MISMATCH`,
    /// `FLAG_NOT_FOUND`, `PROVIDER_NOT_READY`, `PARSE_ERROR`, `GENERAL`): the default was returned.
    func error(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) throws
}

// The defaults that let a hook pick its stages.
extension FlagshipHook {
    /// Does nothing before the evaluation.
    public func before(_ evaluation: FSEvaluation) throws {}
    /// Does nothing after the evaluation.
    public func after(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) throws {}
    /// Does nothing on an evaluation's error.
    public func error(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) throws {}
}

/// A flag evaluation about to run: what was asked, and for whom.
public struct FSEvaluation: Sendable {
    /// The flag's key.
    public let flagKey: String
    /// The visitor's id at the read (the authenticated id after `authenticate`).
    public let visitorId: String
    let rawDefault: FSJSONValue?
    private let askedType: any Any.Type

    /// The default the read was given; `nil` for a `nil` default or one that is not a JSON value.
    public var defaultValue: Any? { rawDefault?.foundationValue }
    /// The Swift type the read asked for (`String`, `Int`, `Any`...).
    public var valueType: String { String(describing: askedType) }

    init<T>(flagKey: String, visitorId: String, defaultValue: T?) {
        self.flagKey = flagKey
        self.visitorId = visitorId
        rawDefault = defaultValue.flatMap(FSJSONValue.of)
        // Named only when asked: describing a type costs more than the rest of the evaluation.
        askedType = T.self
    }
}

/// What an evaluation gave: the value the read returns, and why (as `FSFlagDetails`).
public struct FSEvaluationResult: Sendable {
    let rawValue: FSJSONValue?
    /// Why the read gave `value`.
    public let reason: FSFlagReason
    /// Why the read failed; `nil` after an evaluation without error (then the hooks' `after` runs).
    public let errorCode: FSFlagErrorCode?
    /// What went wrong, for a person; `nil` without an error code.
    public let errorMessage: String?
    /// Where the visitor's flags were decided; `nil` before any decision.
    public let source: FSFlagSource?
    private let entry: FlagEntry?

    /// The value the read returns; `nil` when it returns `nil` or a value that is not a JSON value.
    public var value: Any? { rawValue?.foundationValue }
    /// The campaign behind the value; empty when no campaign gives the flag.
    public var metadata: FSFlagMetadata { entry?.metadata ?? .empty }
    /// The variation; empty when no campaign gives the flag.
    public var variationId: String { metadata.variationId }
    /// The variation's name; empty when no campaign gives the flag or the decision named none.
    public var variationName: String { metadata.variationName }

    init<T>(_ details: FSFlagDetails<T>) {
        rawValue = details.value.flatMap(FSJSONValue.of)
        reason = details.reason
        errorCode = details.errorCode
        errorMessage = details.errorMessage
        source = details.source
        entry = details.entry
    }
}

extension FSJSONValue {
    /// `init(any:)`, without boxing the flag types reads ask for most: a read's type is known where
    /// it is compiled, so these checks fold away.
    static func of<T>(_ value: T) -> FSJSONValue? {
        if T.self == String.self, let string = value as? String { return .string(string) }
        if T.self == Bool.self, let bool = value as? Bool { return .bool(bool) }
        if T.self == Int.self, let int = value as? Int { return .int(Int64(int)) }
        if T.self == Double.self, let double = value as? Double, double.isFinite { return .double(double) }
        return try? FSJSONValue(any: value)
    }
}

/// The stage of an evaluation a hook ran at.
public enum FSHookStage: String, Sendable, CaseIterable {
    /// `FlagshipHook.before`.
    case before
    /// `FlagshipHook.after`.
    case after
    /// `FlagshipHook.error`.
    case error
}

/// A visitor's hooks, fixed when it is built: the configuration's, then its own.
final class HookChain: Sendable {
    let hooks: [any FlagshipHook]
    private let failures: HookFailures
    private let logger: Logger

    /// `nil` without hooks: then a read takes the path it takes without this feature.
    static func make(config: [any FlagshipHook], visitor: [any FlagshipHook], runtime: SDKRuntime?) -> HookChain? {
        let hooks = config + visitor
        guard !hooks.isEmpty else { return nil }
        // A visitor of an SDK not started has no start to share failures with: it counts its own.
        return HookChain(hooks: hooks, failures: runtime?.hookFailures ?? HookFailures(instrumentation: nil),
                         logger: runtime?.logger ?? Flagship.fallbackLogger)
    }

    private init(hooks: [any FlagshipHook], failures: HookFailures, logger: Logger) {
        self.hooks = hooks
        self.failures = failures
        self.logger = logger
    }

    /// `evaluate` between the hooks' stages; its details are returned whatever the hooks do.
    func run<T>(_ key: String, visitorId: String, defaultValue: T?, _ evaluate: () -> FSFlagDetails<T>) -> FSFlagDetails<T> {
        let evaluation = FSEvaluation(flagKey: key, visitorId: visitorId, defaultValue: defaultValue)
        for hook in hooks {
            call(hook, .before, evaluation) { try hook.before(evaluation) }
        }
        let details = evaluate()
        let result = FSEvaluationResult(details)
        let stage: FSHookStage = details.errorCode == nil ? .after : .error
        for hook in hooks.reversed() {
            call(hook, stage, evaluation) {
                stage == .after ? try hook.after(evaluation, result) : try hook.error(evaluation, result)
            }
        }
        return details
    }

    private func call(_ hook: any FlagshipHook, _ stage: FSHookStage, _ evaluation: FSEvaluation, _ body: () throws -> Void) {
        do {
            try body()
        } catch {
            failures.record(hook, stage, flagKey: evaluation.flagKey, error: error, logger: logger)
        }
    }
}

/// The hooks that threw in a start of the SDK: each counted, each hook type and stage logged once
/// (a hook throwing at every read would otherwise log at every read).
final class HookFailures: Sendable {
    private let state = Locked<(logged: Set<String>, count: Int)>(([], 0))
    private let instrumentation: (any FlagshipInstrumentation)?

    init(instrumentation: (any FlagshipInstrumentation)?) {
        self.instrumentation = instrumentation
    }

    /// How many hook calls threw.
    var count: Int { state.withLock { $0.count } }

    func record(_ hook: any FlagshipHook, _ stage: FSHookStage, flagKey: String, error: any Error, logger: Logger) {
        let hookType = String(describing: type(of: hook))
        let first = state.withLock { state in
            state.count += 1
            return state.logged.insert("\(hookType) \(stage.rawValue)").inserted
        }
        instrumentation?.hookFailed(stage)
        guard first else { return }
        logger.error("Hook \(hookType) threw in its \(stage.rawValue) stage (flag '\(flagKey)'): \(error). The read's value is unchanged; said once for this hook and stage")
    }
}
