/// The state of the SDK (`Flagship.sharedInstance.getStatus()`).
public enum FSSdkStatus: String, Sendable, CaseIterable {
    /// Not started, or a start was refused (empty or malformed env id or API key).
    case SDK_NOT_INITIALIZED
    /// Bucketing mode while no bucketing file is known yet.
    case SDK_INITIALIZING
    /// Ready.
    case SDK_INITIALIZED
    /// The last decision said panic: flags give their defaults, no hit or activate is sent,
    /// only `fetchFlags` runs (and leaves panic when the answer no longer says it).
    case SDK_PANIC
}

/// Where a visitor's flags stand.
public enum FSFetchStatus: String, Sendable, CaseIterable {
    /// Fetched and up to date.
    case FETCHED
    /// A fetch is under way.
    case FETCHING
    /// Flags need a fetch: see `FSFetchReasons` for why.
    case FETCH_REQUIRED
    /// The SDK is in panic mode: flags give their defaults.
    case PANIC
}

/// Why a visitor's flags need a fetch.
public enum FSFetchReasons: String, Sendable, CaseIterable {
    /// The visitor was created and nothing was found for it in the cache.
    case VISITOR_CREATE
    /// The context was changed (`updateContext`, `clearContext`) since the last fetch.
    case UPDATE_CONTEXT
    /// `authenticate(visitorId:)` was called since the last fetch.
    case AUTHENTICATE
    /// `unauthenticate()` was called since the last fetch.
    case UNAUTHENTICATE
    /// The last fetch failed or timed out; the previous flags were kept.
    case FETCH_ERROR
    /// The flags were loaded from the visitor cache: usable now, offline.
    case FETCHED_FROM_CACHE
    /// No reason: the status is `FETCHED`, `FETCHING` or `PANIC`.
    case NONE
}

/// The state of one flag, as its visitor's.
public enum FSFlagStatus: String, Sendable, CaseIterable {
    /// The visitor's flags are fetched (or decided in bucketing mode) and up to date.
    case FETCHED
    /// The flag holds its last known value, but the visitor's flags need a fetch (or one is
    /// under way).
    case FETCH_REQUIRED
    /// No flag of that key was given to the visitor.
    case NOT_FOUND
    /// The SDK is in panic mode: the flag gives its default.
    case PANIC
}

/// How much the SDK logs, in ascending order of verbosity (as the reference ranks them).
public enum FSLevel: Int, Sendable, CaseIterable, Comparable {
    /// Nothing is logged.
    case NONE = 0
    /// Only swift-log's `critical` lines.
    case EXCEPTIONS = 1
    /// Errors and worse.
    case ERROR = 2
    /// Warnings and worse (the default).
    case WARNING = 3
    /// Adds swift-log's `notice` and `info` lines.
    case DEBUG = 4
    /// Adds swift-log's `debug` lines (the reference ranks INFO above DEBUG).
    case INFO = 5
    /// Everything, `trace` included.
    case ALL = 6

    /// Whether `lhs` logs less than `rhs`.
    public static func < (lhs: FSLevel, rhs: FSLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Whether `newVisitor(...).build()` also keeps the visitor as `Flagship.sharedInstance.sharedVisitor`.
public enum Instance: String, Sendable {
    /// The built visitor replaces `Flagship.sharedInstance.sharedVisitor` (the default).
    case SHARED_INSTANCE
    /// The built visitor is only returned; the shared visitor stays as it was.
    case NEW_INSTANCE
}

/// Where variations are decided.
public enum FSMode: String, Sendable {
    /// By the Decision API, at each `fetchFlags`.
    case DECISION_API
    /// On this machine, from the bucketing file.
    case BUCKETING
}
