import Foundation

// A visitor's context: set, cleared and read; a change requires a fetch.
extension FSVisitor {
    // MARK: Context

    /// Sets one context value (String, Bool, Int or Double); anything else, or an `fs_` key (the
    /// SDK's own), is refused and logged.
    public func updateContext(_ key: String, _ newValue: Any) {
        switch ContextValue.check(key: key, newValue) {
        case .success(let value):
            applyContext([key: value], refused: [])
        case .failure(let error):
            logger.error("Context unchanged: \(error)")
        }
    }

    /// Sets several context values; each that is not a String, Bool, Int or Double, or whose key
    /// starts with `fs_`, is refused and logged, and the others are set.
    public func updateContext(_ context: [String: Any]) {
        var accepted: [String: FSJSONValue] = [:]
        var refused: [String] = []
        for (key, rawValue) in context {
            switch ContextValue.check(key: key, rawValue) {
            case .success(let value): accepted[key] = value
            case .failure(let error):
                refused.append(key)
                logger.error("Context value not set: \(error)")
            }
        }
        applyContext(accepted, refused: refused)
    }

    /// As `updateContext(_:)`, all or nothing: the first refused key (in key order) is thrown and
    /// the context is unchanged.
    public func updateContext(checking context: [String: Any]) throws(ContextError) {
        var accepted: [String: FSJSONValue] = [:]
        for (key, value) in context.sorted(by: { $0.key < $1.key }) {
            accepted[key] = try ContextValue.check(key: key, value).get()
        }
        applyContext(accepted, refused: [])
    }

    /// Sets a predefined context key, checking the type that key takes.
    public func updateContext(_ flagshipContext: FlagshipContext, _ value: Any) {
        guard case .success(let converted) = ContextValue.validate(value), let accepted = flagshipContext.accepts(converted) else {
            logger.error("Context unchanged: context key '\(flagshipContext.key)' refused: it takes \(flagshipContext.valueKind.rawValue), not a \(type(of: value))")
            return
        }
        applyContext([flagshipContext.key: accepted], refused: [])
    }

    /// Removes every context value, then sets the auto-set predefined ones again.
    public func clearContext() {
        guard contextChangesAllowed(action: "clearContext") else { return }
        let autoSet = FlagshipContext.autoSetValues(firstTimeInit: runtime?.firstTimeInit ?? true)
        requireFetch(.UPDATE_CONTEXT) { state in
            guard state.context != autoSet else { return false }
            state.context = autoSet
            return true
        }
    }

    /// The visitor's current context.
    public func getContext() -> [String: Any] {
        withState { $0.context.mapValues(\.foundationValue) }
    }

    /// The context as the SDK holds it: what targeting and the Decision API see.
    var contextValues: [String: FSJSONValue] {
        withState { $0.context }
    }

    private func applyContext(_ values: [String: FSJSONValue], refused: [String]) {
        guard !values.isEmpty, contextChangesAllowed(action: "updateContext") else { return }
        requireFetch(.UPDATE_CONTEXT) { state in
            let merged = state.context.merging(values) { _, new in new }
            guard merged != state.context else { return false }
            state.context = merged
            return true
        }
    }

    func contextChangesAllowed(action: String) -> Bool {
        switch sdkStatus {
        case .SDK_NOT_INITIALIZED:
            logger.error("\(action) ignored: \(FlagshipError.sdkNotInitialized)")
            return false
        case .SDK_PANIC:
            logger.warning("\(action) ignored: \(FlagshipError.panic)")
            return false
        case .SDK_INITIALIZED, .SDK_INITIALIZING:
            return true
        }
    }
}
