import Foundation

extension Flagship {
    /// A request's visitor, ready: built (its flags from the store first), fetched, never the
    /// shared visitor. The one call a request handler makes:
    ///
    /// ```swift
    /// let visitor = await Flagship.sharedInstance.fetchedVisitor(
    ///     visitorId: userId, hasConsented: consent, context: ["plan": "pro"])
    /// let page = visitor.flagsSnapshot(exposure: .now)
    /// ```
    ///
    /// A returning visitor whose state did not change costs a store lookup and a decision on
    /// this machine (bucketing mode) or one request (Decision API mode); it writes nothing and
    /// sends nothing the platform already has (``FSDeduplication``).
    ///
    /// A fetch that fails does not throw: it is logged (once while fetches keep failing), and the
    /// visitor serves what the store held for it, else the defaults; its ``FSVisitor/fetchStatus``
    /// is then `FETCH_REQUIRED` and ``FSVisitor/requiredFetchReason`` `FETCH_ERROR`. Without
    /// consent nothing is fetched: the visitor's flags give their defaults and its data is erased,
    /// as ``FSVisitor/setConsent(hasConsented:)`` erases it.
    ///
    /// - Parameters:
    ///   - visitorId: the visitor's id; empty: one is generated.
    ///   - hasConsented: whether the visitor consented to tracking.
    ///   - context: String, Bool, Int or Double values (others are refused and logged).
    ///   - isAuthenticated: the id is a logged-in user's (experience continuity).
    public func fetchedVisitor(visitorId: String, hasConsented: Bool, context: [String: Any] = [:],
                               isAuthenticated: Bool = false) async -> FSVisitor {
        let visitor = await newVisitor(visitorId: visitorId, hasConsented: hasConsented, instanceType: .NEW_INSTANCE)
            .withContext(context: context)
            .isAuthenticated(isAuthenticated)
            .buildAsync()
        guard hasConsented else { return visitor }
        do {
            try await visitor.fetchFlags()
        } catch let error as FlagshipError where error.code == .fetchFailed {
            // Logged by the fetch itself; the visitor keeps what the store held.
        } catch {
            visitor.logger.error("A request's visitor was not fetched: \(error)")
        }
        return visitor
    }
}
