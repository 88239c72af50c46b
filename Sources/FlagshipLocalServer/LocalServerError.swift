#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the local server could not do what was asked, with what is needed to act on it.
public enum LocalServerError: Error, Equatable, CustomStringConvertible {
    /// 127.0.0.1:`port` could not be bound (in use, most often).
    case portUnavailable(port: UInt16, errno: Int32)
    /// A socket call failed.
    case socket(call: String, errno: Int32)
    /// The record file could not be opened for appending.
    case recordFile(path: String, reason: String)
    /// A decision file could not be read, or is not a decision.
    case decisionFile(path: String, reason: String)
    /// A bucketing file could not be read (`path`: where from, when read from a file), or the
    /// bucketing engine cannot use it.
    case bucketingFile(path: String?, reason: String)
    /// `waitFor...` ran out of time; `arrived` says what had come instead.
    case waitTimedOut(waitingFor: String, timeout: Duration, arrived: String)

    /// One line saying what failed and why (the system's message for an `errno`).
    public var description: String {
        switch self {
        case .portUnavailable(let port, let code):
            return "cannot listen on 127.0.0.1:\(port): \(String(cString: strerror(code)))"
        case .socket(let call, let code):
            return "\(call) failed: \(String(cString: strerror(code)))"
        case .recordFile(let path, let reason):
            return "cannot append to the record file \(path): \(reason)"
        case .decisionFile(let path, let reason):
            return "the decision file \(path) \(reason)"
        case .bucketingFile(let path?, let reason):
            return "the bucketing file \(path): \(reason)"
        case .bucketingFile(nil, let reason):
            return "not a usable bucketing file: \(reason)"
        case .waitTimedOut(let waitingFor, let timeout, let arrived):
            return "timed out after \(timeout) waiting for \(waitingFor); \(arrived)"
        }
    }
}
