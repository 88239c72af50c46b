import Foundation

/// Why a fetch could not have the visitor's flags: from the Decision API, or in bucketing mode
/// from the bucketing file. Thrown as `FlagshipError.fetchFailed(_:)`, for a caller to switch
/// over (a timeout is not a 403, nor a missing bucketing file).
///
/// Descriptions are whole sentences fit for a log line; none ever contains the API key.
public enum FSFetchFailure: Error, Sendable, Equatable, CustomStringConvertible {
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
    public var description: String {
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

extension FSFetchFailure {
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

/// The SDK's own name for it.
package typealias DecisionError = FSFetchFailure
