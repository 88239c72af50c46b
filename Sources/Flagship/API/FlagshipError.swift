import Foundation

/// What went wrong, for the `async throws` calls. Each says enough to act on.
///
/// A struct with a ``code`` to switch on, and the details of its kind (``fetchFailure``,
/// ``cacheError``, ``hitValidation``, ``backlog``...), as async-http-client's and postgres-nio's
/// errors are: a new kind is a new static member, not a breaking change, and a `switch` needs a
/// `default`. Each kind is made by a static member named as the code (`.closed`,
/// `.fetchFailed(_:)`), and errors compare equal with their details.
///
/// ```swift
/// do {
///     try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "buy"))
/// } catch let error as FlagshipError {
///     switch error.code {
///     case .overloaded: print("retry in a moment:", error.backlog ?? 0, "hits wait")
///     case .hitNotCached: print("sent from memory only:", error.cacheError?.code ?? .other)
///     default: print(error)
///     }
/// }
/// ```
public struct FlagshipError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of error, to switch on.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case sdkNotInitialized, panic, consentNotGiven, invalidHit, fetchFailed, closed, hitNotCached, overloaded, hitNotWritten
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// ``FlagshipError/sdkNotInitialized``.
        public static let sdkNotInitialized = Code(.sdkNotInitialized)
        /// ``FlagshipError/panic``.
        public static let panic = Code(.panic)
        /// ``FlagshipError/consentNotGiven(visitorId:)``.
        public static let consentNotGiven = Code(.consentNotGiven)
        /// ``FlagshipError/invalidHit(_:)``.
        public static let invalidHit = Code(.invalidHit)
        /// ``FlagshipError/fetchFailed(_:)``.
        public static let fetchFailed = Code(.fetchFailed)
        /// ``FlagshipError/closed``.
        public static let closed = Code(.closed)
        /// ``FlagshipError/hitNotCached(_:)``.
        public static let hitNotCached = Code(.hitNotCached)
        /// ``FlagshipError/overloaded(backlog:waited:)``.
        public static let overloaded = Code(.overloaded)
        /// ``FlagshipError/hitNotWritten(_:)``.
        public static let hitNotWritten = Code(.hitNotWritten)

        /// The code's name as written here (`fetchFailed`, `overloaded`...).
        public var description: String { base.rawValue }
    }

    /// The error with its details: the SDK's own form, which it switches over.
    package enum Reason: Sendable, Equatable {
        case sdkNotInitialized
        case panic
        case consentNotGiven(visitorId: String)
        case invalidHit(FSHitValidationError)
        case fetchFailed(FSFetchFailure)
        case closed
        case hitNotCached(FSCacheError)
        case overloaded(backlog: Int, waited: TimeInterval)
        case hitNotWritten(FSCacheError)
    }

    package let reason: Reason

    package init(_ reason: Reason) {
        self.reason = reason
    }

    /// `Flagship.sharedInstance.start` was not called, or was refused.
    public static let sdkNotInitialized = FlagshipError(.sdkNotInitialized)
    /// The platform switched the SDK off (panic): nothing is sent until a fetch says otherwise.
    public static let panic = FlagshipError(.panic)
    /// The visitor has not consented: only the consent hit is sent.
    public static func consentNotGiven(visitorId: String) -> FlagshipError { FlagshipError(.consentNotGiven(visitorId: visitorId)) }
    /// A hit missing a required field or with a wrong value, which field and why; never cached nor sent.
    public static func invalidHit(_ error: FSHitValidationError) -> FlagshipError { FlagshipError(.invalidHit(error)) }
    /// Fetching flags failed or timed out, for the reason given; the previous flags are kept.
    public static func fetchFailed(_ failure: FSFetchFailure) -> FlagshipError { FlagshipError(.fetchFailed(failure)) }
    /// The SDK was closed: the hit was not accepted.
    public static let closed = FlagshipError(.closed)
    /// The hit cache could not take the hit (disk full, read-only file...: switch over the error's
    /// `code`): it is kept in memory and sent, but would not survive a restart.
    public static func hitNotCached(_ error: FSCacheError) -> FlagshipError { FlagshipError(.hitNotCached(error)) }
    /// Hits arrive faster than they are delivered while the events endpoint answers (`backlog`
    /// hits wait), and no room came within the wait (`waited`, seconds): the hit was not taken.
    /// Send it again later, or slow down; `Flagship.health` says when there is room again.
    public static func overloaded(backlog: Int, waited: TimeInterval) -> FlagshipError {
        FlagshipError(.overloaded(backlog: backlog, waited: waited))
    }
    /// A hit to be written in the app's own transaction (`sendHit(_:inTransactionOn:)`) was not
    /// written (switch over the error's `code`: `notInTransaction`, `notTheStore`, `readOnly`,
    /// `locked`, `diskFull`...): nothing of it is in the store, and the app's transaction is as
    /// it was. Roll it back, or commit it without the hit.
    public static func hitNotWritten(_ error: FSCacheError) -> FlagshipError { FlagshipError(.hitNotWritten(error)) }

    /// What kind of error this is.
    public var code: Code {
        switch reason {
        case .sdkNotInitialized: .sdkNotInitialized
        case .panic: .panic
        case .consentNotGiven: .consentNotGiven
        case .invalidHit: .invalidHit
        case .fetchFailed: .fetchFailed
        case .closed: .closed
        case .hitNotCached: .hitNotCached
        case .overloaded: .overloaded
        case .hitNotWritten: .hitNotWritten
        }
    }

    /// Why the fetch failed (``Code/fetchFailed``), `nil` for any other kind.
    public var fetchFailure: FSFetchFailure? {
        if case .fetchFailed(let failure) = reason { return failure }
        return nil
    }

    /// What the store said (``Code/hitNotCached``, ``Code/hitNotWritten``), `nil` for any other kind.
    public var cacheError: FSCacheError? {
        switch reason {
        case .hitNotCached(let error), .hitNotWritten(let error): error
        default: nil
        }
    }

    /// Which field of the hit is wrong, and why (``Code/invalidHit``), `nil` for any other kind.
    public var hitValidation: FSHitValidationError? {
        if case .invalidHit(let error) = reason { return error }
        return nil
    }

    /// The visitor who has not consented (``Code/consentNotGiven``), `nil` for any other kind.
    public var visitorId: String? {
        if case .consentNotGiven(let visitorId) = reason { return visitorId }
        return nil
    }

    /// Hits waiting for delivery when the hit was refused (``Code/overloaded``), `nil` for any other kind.
    public var backlog: Int? {
        if case .overloaded(let backlog, _) = reason { return backlog }
        return nil
    }

    /// Seconds waited for room before the hit was refused (``Code/overloaded``), `nil` for any other kind.
    public var waited: TimeInterval? {
        if case .overloaded(_, let waited) = reason { return waited }
        return nil
    }

    /// A sentence for a log or a user: what went wrong, and what to do when something can be done.
    public var description: String {
        switch reason {
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

extension FlagshipError.Code {
    /// Matches a thrown ``FlagshipError`` of this code: `catch FlagshipError.Code.overloaded { … }`.
    public static func ~= (code: FlagshipError.Code, error: any Error) -> Bool {
        (error as? FlagshipError)?.code == code
    }
}
