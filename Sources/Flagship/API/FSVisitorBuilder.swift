import Foundation

/// Builds a visitor: `Flagship.sharedInstance.newVisitor(...)...build()`.
public final class FSVisitorBuilder: @unchecked Sendable {
    // Used on one thread, then discarded: `build()` hands over a visitor.
    private let flagship: Flagship
    private let visitorId: String
    private var consent: Bool
    private let instanceType: Instance
    private var context: [String: Any] = [:]
    private var authenticated = false
    private var onFetchFlagsStatusChanged: OnFetchFlagsStatusChanged?

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

    /// `true`: the visitor id is a logged-in user's; an anonymous id is generated beside it.
    @discardableResult
    public func isAuthenticated(_ autenticated: Bool) -> FSVisitorBuilder {
        authenticated = autenticated
        return self
    }

    @discardableResult
    public func hasConsented(hasConsented: Bool) -> FSVisitorBuilder {
        consent = hasConsented
        return self
    }

    /// Told of every change of the visitor's (fetch status, reason), off the caller's thread.
    @discardableResult
    public func withFetchFlagsStatus(_ pCallback: @escaping OnFetchFlagsStatusChanged) -> FSVisitorBuilder {
        onFetchFlagsStatusChanged = pCallback
        return self
    }

    /// The visitor, with its flags from the visitor cache when it has some (store first):
    /// readable at once, offline. Waits for the cache at most its lookup timeout.
    public func build() -> FSVisitor {
        let runtime = flagship.currentRuntime
        let logger = runtime?.logger ?? Flagship.fallbackLogger
        let id = visitorId.isEmpty ? UUID().uuidString.lowercased() : visitorId
        var values = runtime.map { FlagshipContext.autoSetValues(firstTimeInit: $0.firstTimeInit) } ?? [:]
        for (key, rawValue) in context {
            switch ContextValue.validate(rawValue) {
            case .success(let value): values[key] = value
            case .failure(let error): logger.error("Context key '\(key)' refused: \(error.reason)")
            }
        }
        var state = VisitorState(visitorId: id, anonymousId: nil, context: values, hasConsented: consent)
        if authenticated, let runtime {
            state.anonymousId = runtime.persistentValue(forKey: "anonymous_id.\(id)") { UUID().uuidString.lowercased() }
        }
        if consent, let caches = runtime?.caches, case .found(let document) = caches.lookupVisitorBlocking(id) {
            state.assign(document.campaigns, history: document.assignmentsHistory)
            state.fetchReason = .FETCHED_FROM_CACHE
            logger.debug("Visitor '\(id)' found in the cache: \(document.campaigns.count) campaign(s), flags readable now")
        }
        let visitor = FSVisitor(state: state, runtime: runtime, onFetchFlagsStatusChanged: onFetchFlagsStatusChanged)
        visitor.notifyFetchStatus(state.fetchStatus, state.fetchReason)
        visitor.sendConsentHit(consent)
        if !consent { runtime?.purgeVisitor(id) }
        if instanceType == .SHARED_INSTANCE { flagship.setSharedVisitor(visitor) }
        return visitor
    }
}
