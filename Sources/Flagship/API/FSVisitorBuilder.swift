import Foundation

/// Builds a visitor: `Flagship.sharedInstance.newVisitor(...)...build()`.
///
/// Not `Sendable`: a builder is filled and built where it was made, then dropped; the visitor it
/// builds is what is shared.
public final class FSVisitorBuilder {
    private let flagship: Flagship
    private let visitorId: String
    private var consent: Bool
    private let instanceType: Instance
    private var context: [String: Any] = [:]
    private var authenticated = false
    private var onFetchFlagsStatusChanged: OnFetchFlagsStatusChanged?
    private var hooks: [any FlagshipHook] = []

    init(flagship: Flagship, visitorId: String, hasConsented: Bool, instanceType: Instance) {
        self.flagship = flagship
        self.visitorId = visitorId
        self.consent = hasConsented
        self.instanceType = instanceType
    }

    /// The visitor's initial context: String, Bool, Int or Double values.
    @discardableResult
    public func withContext(context: [String: Any]) -> FSVisitorBuilder {
        self.context.merge(context) { _, new in new }
        return self
    }

    /// As `withContext(context:)`, refusing at once: the first value that is not a String, Bool,
    /// Int or Double, or key starting with `fs_` (in key order), is thrown and nothing is added.
    @discardableResult
    public func withContext(checking context: [String: Any]) throws(ContextError) -> FSVisitorBuilder {
        for (key, value) in context.sorted(by: { $0.key < $1.key }) {
            _ = try ContextValue.check(key: key, value).get()
        }
        return withContext(context: context)
    }

    /// `true`: the visitor id is a logged-in user's; an anonymous id is generated beside it.
    @discardableResult
    public func isAuthenticated(_ autenticated: Bool) -> FSVisitorBuilder {
        authenticated = autenticated
        return self
    }

    /// Replaces the consent given to `newVisitor(visitorId:hasConsented:instanceType:)`.
    @discardableResult
    public func hasConsented(hasConsented: Bool) -> FSVisitorBuilder {
        consent = hasConsented
        return self
    }

    /// Told of every change of the visitor's (fetch status, reason), off the caller's thread, in
    /// turn with the SDK's other callbacks (see `FSConfigBuilder.withOnSdkStatusChanged(_:)`).
    @discardableResult
    public func withFetchFlagsStatus(_ pCallback: @escaping OnFetchFlagsStatusChanged) -> FSVisitorBuilder {
        onFetchFlagsStatusChanged = pCallback
        return self
    }

    /// Runs `hooks` around every flag evaluation of this visitor, after the configuration's
    /// (`FSConfigBuilder.withHooks`); each call adds to the hooks given before.
    @discardableResult
    public func withHooks(_ hooks: [any FlagshipHook]) -> FSVisitorBuilder {
        self.hooks += hooks
        return self
    }

    /// The visitor, with its flags from the visitor cache when it has some (store first):
    /// readable at once, offline. Blocks the calling thread while the cache is read: a custom
    /// cache at most its lookup timeout (200 ms by default), the SDK's own store up to 5 s (a
    /// returning visitor is not decided again without its history; see The store) (the lookup runs on the cache's own queue, never on Swift's cooperative
    /// pool, so this is safe from a task); from async code prefer `await buildAsync()`, which
    /// suspends instead.
    @available(*, noasync, renamed: "buildAsync()", message: "blocks its thread for the visitor lookup: use buildAsync() from async code")
    public func build() -> FSVisitor {
        let plan = plan()
        return plan.finish(plan.loadStoredBlocking())
    }

    /// As `build()`, suspending instead of blocking while the visitor cache is read.
    ///
    /// A separate name rather than an `async` overload of `build()`: with both, Swift would pick
    /// the `async` one in every async context, and each plain `builder.build()` there would stop
    /// compiling.
    public func buildAsync() async -> FSVisitor {
        let plan = plan()
        return plan.finish(await plan.loadStored())
    }

    private func plan() -> VisitorPlan {
        let runtime = flagship.currentRuntime
        let logger = runtime?.logger ?? Flagship.fallbackLogger
        let id = visitorId.isEmpty ? UUID().uuidString.lowercased() : visitorId
        var values = runtime.map { FlagshipContext.autoSetValues(firstTimeInit: $0.firstTimeInit) } ?? [:]
        for (key, rawValue) in context {
            switch ContextValue.check(key: key, rawValue) {
            case .success(let value): values[key] = value
            case .failure(let error): logger.error("Context value not set: \(error)")
            }
        }
        return VisitorPlan(flagship: flagship, runtime: runtime, visitorId: id, context: values, consent: consent,
                           authenticated: authenticated, instanceType: instanceType,
                           onFetchFlagsStatusChanged: onFetchFlagsStatusChanged,
                           hooks: HookChain.make(config: runtime?.config.hooks ?? [], visitor: hooks, runtime: runtime))
    }
}

/// What a builder knows once filled: a value, so the store can be read off the caller's task.
private struct VisitorPlan: Sendable {
    let flagship: Flagship
    let runtime: SDKRuntime?
    let visitorId: String
    let context: [String: FSJSONValue]
    let consent: Bool
    let authenticated: Bool
    let instanceType: Instance
    let onFetchFlagsStatusChanged: OnFetchFlagsStatusChanged?
    let hooks: HookChain?

    /// What the store holds for the visitor: its anonymous id (authenticated visitors) and its
    /// cached flags (with consent).
    struct Stored: Sendable {
        var anonymousId: String?
        var lookup: CacheService.VisitorLookup?
    }

    private var anonymousIdKey: String? {
        authenticated && runtime != nil ? "anonymous_id.\(visitorId)" : nil
    }

    /// Both reads share one budget, the visitor lookup timeout: the anonymous id is read (or
    /// made and stored) on the store's queue while the visitor cache is looked up.
    func loadStoredBlocking() -> Stored {
        guard let runtime else { return Stored() }
        let timeout = runtime.caches?.visitorLookupTimeout ?? FSCacheManager().visitorLookupTimeOut
        let deadline = DispatchTime.now() + timeout
        let anonymousId = anonymousIdKey.map { runtime.persistentValue(forKey: $0, default: UUID().uuidString.lowercased()) }
        let lookup = consent ? runtime.caches?.lookupVisitorBlocking(visitorId) : nil
        return Stored(anonymousId: anonymousId?.value(waitingUntil: deadline), lookup: lookup)
    }

    func loadStored() async -> Stored {
        guard let runtime else { return Stored() }
        let timeout = runtime.caches?.visitorLookupTimeout ?? FSCacheManager().visitorLookupTimeOut
        let deadline = DispatchTime.now() + timeout
        let anonymousId = anonymousIdKey.map { runtime.persistentValue(forKey: $0, default: UUID().uuidString.lowercased()) }
        let lookup = consent ? await runtime.caches?.lookupVisitor(visitorId) : nil
        return Stored(anonymousId: await anonymousId?.value(waitingUntil: deadline), lookup: lookup)
    }

    func finish(_ stored: Stored) -> FSVisitor {
        let logger = runtime?.logger ?? Flagship.fallbackLogger
        var state = VisitorState(visitorId: visitorId, anonymousId: stored.anonymousId, context: context, hasConsented: consent)
        if case .found(let document) = stored.lookup {
            state.assign(document.campaigns, history: document.assignmentsHistory)
            state.storedDocument = document
            if runtime?.config.deduplication.isEnabled == true { state.reported = document.reported }
            state.fetchReason = .FETCHED_FROM_CACHE
            state.decidedBy = .cache
            logger.debug("Visitor '\(visitorId)' found in the cache: \(document.campaigns.count) campaign(s), flags readable now")
        } else if case .rejected = stored.lookup {
            state.cachedDecisionUnreadable = true
        } else if case .unavailable = stored.lookup {
            state.storedHistoryUnread = true
        }
        let visitor = FSVisitor(state: state, runtime: runtime, onFetchFlagsStatusChanged: onFetchFlagsStatusChanged, hooks: hooks)
        visitor.notifyFetchStatus(state.fetchStatus, state.fetchReason)
        visitor.sendConsentHit(consent)
        if !consent { runtime?.purgeVisitor(visitorId) }
        if instanceType == .SHARED_INSTANCE { flagship.setSharedVisitor(visitor) }
        return visitor
    }
}
