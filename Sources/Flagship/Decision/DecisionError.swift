import Foundation

/// Why a fetch could not have the visitor's flags: from the Decision API, or in bucketing mode
/// from the bucketing file. Thrown as `FlagshipError.fetchFailed(_:)`, for a caller to switch
/// over its ``code`` (a timeout is not a 403, nor a missing bucketing file).
///
/// A struct with a code, as async-http-client's and postgres-nio's errors are: a new kind of
/// failure is a new static member, not a breaking change, and a `switch` needs a `default`.
/// Descriptions are whole sentences fit for a log line; none ever contains the API key.
///
/// ```swift
/// do {
///     try await visitor.fetchFlags()
/// } catch let error as FlagshipError {
///     switch error.fetchFailure?.code {
///     case .timedOut?: print("slow Decision API; flags kept:", error)
///     case .httpStatus?: print("status", error.fetchFailure?.status ?? 0)
///     default: print(error)
///     }
/// }
/// ```
public struct FSFetchFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure, to switch on.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case timedOut, transport, httpStatus, malformedBody, noBucketingFile, storeUnavailable
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// No complete answer within the configured timeout.
        public static let timedOut = Code(.timedOut)
        /// The server could not be reached, or the connection broke.
        public static let transport = Code(.transport)
        /// The server answered with a status other than 2xx (``FSFetchFailure/status``).
        public static let httpStatus = Code(.httpStatus)
        /// A 2xx answer whose body is not a decision.
        public static let malformedBody = Code(.malformedBody)
        /// Bucketing mode: no bucketing file is stored and none could be downloaded yet.
        public static let noBucketingFile = Code(.noBucketingFile)
        /// The visitor's stored assignments could not be read from the SDK's own store in time.
        public static let storeUnavailable = Code(.storeUnavailable)

        /// The code's name as written here (`timedOut`, `httpStatus`...).
        public var description: String { base.rawValue }
    }

    /// The failure with its details.
    package let reason: DecisionError

    package init(_ reason: DecisionError) {
        self.reason = reason
    }

    /// What kind of failure this is.
    public var code: Code {
        switch reason {
        case .timedOut: .timedOut
        case .transport: .transport
        case .httpStatus: .httpStatus
        case .malformedBody: .malformedBody
        case .noBucketingFile: .noBucketingFile
        case .storeUnavailable: .storeUnavailable
        }
    }

    /// The status the server answered with (``Code/httpStatus``), `nil` for any other kind.
    public var status: Int? {
        if case .httpStatus(let status) = reason { return status }
        return nil
    }

    /// The seconds waited (``Code/timedOut``: the timeout; ``Code/storeUnavailable``: the
    /// store's bound), `nil` for any other kind.
    public var waited: TimeInterval? {
        switch reason {
        case .timedOut(let seconds), .storeUnavailable(let seconds): seconds
        default: nil
        }
    }

    /// No complete answer within `after` seconds.
    public static func timedOut(after: TimeInterval) -> FSFetchFailure { FSFetchFailure(.timedOut(after: after)) }
    /// The server could not be reached, for `reason`.
    public static func transport(_ reason: String) -> FSFetchFailure { FSFetchFailure(.transport(reason)) }
    /// The server answered `status`.
    public static func httpStatus(_ status: Int) -> FSFetchFailure { FSFetchFailure(.httpStatus(status)) }
    /// A 2xx answer that is not a decision, for `reason`.
    public static func malformedBody(_ reason: String) -> FSFetchFailure { FSFetchFailure(.malformedBody(reason)) }
    /// No bucketing file yet.
    public static let noBucketingFile = FSFetchFailure(.noBucketingFile)
    /// The stored assignments could not be read within `after` seconds.
    public static func storeUnavailable(after: TimeInterval) -> FSFetchFailure { FSFetchFailure(.storeUnavailable(after: after)) }

    /// What failed, as a sentence for a log (durations in milliseconds); never the API key.
    public var description: String { reason.description }

    package var causeKey: String { reason.causeKey }
}

/// Why a decision failed, with its details: the SDK's own form of ``FSFetchFailure``, which
/// carries it to the app.
package enum DecisionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No complete answer within the configured timeout (seconds).
    case timedOut(after: TimeInterval)
    /// The server could not be reached, or the connection broke (refused, DNS, dropped, cancelled).
    case transport(String)
    /// The server answered with a status other than 2xx.
    case httpStatus(Int)
    /// A 2xx answer whose body is not a decision: not JSON, truncated, of the wrong shape, too large.
    case malformedBody(String)
    /// Bucketing mode: no bucketing file is stored and none could be downloaded yet.
    case noBucketingFile
    /// The visitor's stored assignments could not be read from the SDK's own store within the
    /// bound (seconds): the visitor is not decided again without them, where a changed
    /// allocation could move it to another variation. Fetch again once the store answers.
    case storeUnavailable(after: TimeInterval)

    /// What failed, as a sentence for a log (durations in milliseconds); never the API key.
    package var description: String {
        switch self {
        case .timedOut(let timeout):
            return "the Decision API did not answer within \(timeout.millisecondsText)"
        case .transport(let reason):
            return "the Decision API could not be reached: \(reason)"
        case .httpStatus(let status):
            return "the Decision API answered with HTTP status \(status)"
        case .malformedBody(let reason):
            return "the Decision API's answer could not be read: \(reason)"
        case .noBucketingFile:
            return "no bucketing file yet: none is stored and none could be downloaded"
        case .storeUnavailable(let bound):
            return "the visitor's stored assignments could not be read within \(bound.millisecondsText): it is not decided again without them"
        }
    }
}

extension DecisionError {
    /// The kind of failure, for logging each kind once per outage: the case (and the status),
    /// not the message, which may vary from one failure to the next (byte counts, hosts).
    package var causeKey: String {
        switch self {
        case .timedOut: return "timedOut"
        case .transport: return "transport"
        case .httpStatus(let status): return "httpStatus \(status)"
        case .malformedBody: return "malformedBody"
        case .noBucketingFile: return "noBucketingFile"
        case .storeUnavailable: return "storeUnavailable"
        }
    }
}

extension FSFetchFailure.Code {
    /// Matches a failure of this code: `if case FSFetchFailure.Code.timedOut = failure { … }`.
    public static func ~= (code: FSFetchFailure.Code, failure: FSFetchFailure) -> Bool {
        failure.code == code
    }
}
