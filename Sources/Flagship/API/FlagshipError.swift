import Foundation

/// What went wrong, for the `async throws` calls. Each says enough to act on.
public enum FlagshipError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `Flagship.sharedInstance.start` was not called, or was refused.
    case sdkNotInitialized
    /// The platform switched the SDK off (panic): nothing is sent until a fetch says otherwise.
    case panic
    /// The visitor has not consented: only the consent hit is sent.
    case consentNotGiven(visitorId: String)
    /// A hit missing a required field or with a wrong value, which field and why; never cached nor sent.
    case invalidHit(FSHitValidationError)
    /// Fetching flags failed or timed out, for the reason given; the previous flags are kept.
    case fetchFailed(FSFetchFailure)
    /// The SDK was closed: the hit was not accepted.
    case closed
    /// The hit cache could not take the hit (disk full, read-only file...: switch over the error's
    /// `code`): it is kept in memory and sent, but would not survive a restart.
    case hitNotCached(FSCacheError)
    /// Hits arrive faster than they are delivered while the events endpoint answers (`backlog`
    /// hits wait), and no room came within the wait (`waited`, seconds): the hit was not taken.
    /// Send it again later, or slow down; `Flagship.health` says when there is room again.
    case overloaded(backlog: Int, waited: TimeInterval)
    /// A hit to be written in the app's own transaction (`sendHit(_:inTransactionOn:)`) was not
    /// written (switch over the error's `code`: `notInTransaction`, `notTheStore`, `readOnly`,
    /// `locked`, `diskFull`...): nothing of it is in the store, and the app's transaction is as
    /// it was. Roll it back, or commit it without the hit.
    case hitNotWritten(FSCacheError)

    /// A sentence for a log or a user: what went wrong, and what to do when something can be done.
    public var description: String {
        switch self {
        case .sdkNotInitialized:
            return "the SDK is not initialized: call Flagship.sharedInstance.start(envId:apiKey:config:) with a valid env id and API key"
        case .panic:
            return "the SDK is in panic mode: the platform has switched it off"
        case .consentNotGiven:
            // The id is in the case, not in the text, which a caller may log above debug.
            return "the visitor has not consented: only the consent hit is sent"
        case .invalidHit(let reason):
            return reason.description
        case .fetchFailed(let reason):
            return "fetching flags failed: \(reason)"
        case .closed:
            return "the SDK was closed: start it again to send hits"
        case .hitNotCached(let reason):
            return "the hit could not be written to the hit cache (\(reason.code): \(reason)): it is kept in memory and sent, but would not survive a restart"
        case .overloaded(let backlog, let waited):
            return "the hit was not taken: \(backlog) hits wait for delivery while the events endpoint answers (backpressure), and no room came within \(waited.millisecondsText); send it again later"
        case .hitNotWritten(let reason):
            return "the hit was not written in the app's transaction (\(reason.code): \(reason)): nothing of it is in the store"
        }
    }
}
