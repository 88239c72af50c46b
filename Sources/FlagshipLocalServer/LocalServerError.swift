#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the local server could not do what was asked, with what is needed to act on it. A struct
/// with a ``code`` to switch on and the details as properties (``port``, ``errno``, ``path``,
/// ``reason``, ``timeout``, ``arrived``...), as async-http-client's and postgres-nio's errors are:
/// a new code is a new static member, not a breaking change, and a `switch` needs a `default`.
/// Errors are made and compared as before (`XCTAssertEqual(error, .portUnavailable(port: 8080,
/// errno: EADDRINUSE))`); ``description`` is the line to log.
///
/// ```swift
/// do {
///     try server.start()
/// } catch let error as LocalServerError {
///     switch error.code {
///     case .portUnavailable: print("port \(error.port ?? 0) is taken: pick another")
///     default: print(error)
///     }
/// }
/// ```
public struct LocalServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of error, to switch on.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case portUnavailable, socket, recordFile, decisionFile, bucketingFile, waitTimedOut
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// 127.0.0.1:``LocalServerError/port`` could not be bound (in use, most often):
        /// ``LocalServerError/errno`` says why.
        public static let portUnavailable = Code(.portUnavailable)
        /// A socket call (``LocalServerError/call``) failed with ``LocalServerError/errno``.
        public static let socket = Code(.socket)
        /// The record file (``LocalServerError/path``) could not be opened for appending.
        public static let recordFile = Code(.recordFile)
        /// A decision file (``LocalServerError/path``) could not be read, or is not a decision:
        /// ``LocalServerError/reason`` says which.
        public static let decisionFile = Code(.decisionFile)
        /// A bucketing file could not be read (``LocalServerError/path``: where from, when read from
        /// a file), or the bucketing engine cannot use it: ``LocalServerError/reason`` says which.
        public static let bucketingFile = Code(.bucketingFile)
        /// `waitFor...` ran out of time (``LocalServerError/timeout``);
        /// ``LocalServerError/arrived`` says what had come instead.
        public static let waitTimedOut = Code(.waitTimedOut)

        /// The code's name as written here (`portUnavailable`, `waitTimedOut`...), for a log.
        public var description: String { base.rawValue }
    }

    /// What kind of error this is.
    public let code: Code
    /// The port that could not be bound (``Code/portUnavailable``), `nil` for any other code.
    public let port: UInt16?
    /// The system's error number (``Code/portUnavailable``, ``Code/socket``), `nil` for any other
    /// code; ``description`` holds its message.
    public let errno: Int32?
    /// The socket call that failed (`socket`, `listen`, `pipe`...) (``Code/socket``), `nil` for any
    /// other code.
    public let call: String?
    /// The file's path (``Code/recordFile``, ``Code/decisionFile``, and ``Code/bucketingFile``
    /// when it was read from a file), `nil` otherwise.
    public let path: String?
    /// What is wrong with the file, as a phrase (``Code/recordFile``, ``Code/decisionFile``,
    /// ``Code/bucketingFile``), `nil` for any other code.
    public let reason: String?
    /// What the wait was for (`2 hit(s)`) (``Code/waitTimedOut``), `nil` for any other code.
    public let waitingFor: String?
    /// How long the wait lasted (``Code/waitTimedOut``), `nil` for any other code.
    public let timeout: Duration?
    /// What had come instead (``Code/waitTimedOut``), `nil` for any other code.
    public let arrived: String?
    /// One line saying what failed and why (the system's message for an ``errno``).
    public let description: String

    private init(code: Code, port: UInt16? = nil, errno: Int32? = nil, call: String? = nil, path: String? = nil,
                 reason: String? = nil, waitingFor: String? = nil, timeout: Duration? = nil, arrived: String? = nil,
                 description: String) {
        self.code = code
        self.port = port
        self.errno = errno
        self.call = call
        self.path = path
        self.reason = reason
        self.waitingFor = waitingFor
        self.timeout = timeout
        self.arrived = arrived
        self.description = description
    }

    /// 127.0.0.1:`port` could not be bound, for `errno` (``Code/portUnavailable``).
    public static func portUnavailable(port: UInt16, errno: Int32) -> LocalServerError {
        LocalServerError(code: .portUnavailable, port: port, errno: errno,
                         description: "cannot listen on 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
    }

    /// The socket call `call` failed with `errno` (``Code/socket``).
    public static func socket(call: String, errno: Int32) -> LocalServerError {
        LocalServerError(code: .socket, errno: errno, call: call,
                         description: "\(call) failed: \(String(cString: strerror(errno)))")
    }

    /// The record file at `path` could not be opened for appending, for `reason` (``Code/recordFile``).
    public static func recordFile(path: String, reason: String) -> LocalServerError {
        LocalServerError(code: .recordFile, path: path, reason: reason,
                         description: "cannot append to the record file \(path): \(reason)")
    }

    /// The decision file at `path` could not be read, or is not a decision (``Code/decisionFile``).
    public static func decisionFile(path: String, reason: String) -> LocalServerError {
        LocalServerError(code: .decisionFile, path: path, reason: reason,
                         description: "the decision file \(path) \(reason)")
    }

    /// A bucketing file (read from `path`, when from a file) could not be read, or the bucketing
    /// engine cannot use it (``Code/bucketingFile``).
    public static func bucketingFile(path: String?, reason: String) -> LocalServerError {
        LocalServerError(code: .bucketingFile, path: path, reason: reason,
                         description: path.map { "the bucketing file \($0): \(reason)" } ?? "not a usable bucketing file: \(reason)")
    }

    /// A wait for `waitingFor` ran out of time after `timeout`; `arrived` says what had come
    /// instead (``Code/waitTimedOut``).
    public static func waitTimedOut(waitingFor: String, timeout: Duration, arrived: String) -> LocalServerError {
        LocalServerError(code: .waitTimedOut, waitingFor: waitingFor, timeout: timeout, arrived: arrived,
                         description: "timed out after \(timeout) waiting for \(waitingFor); \(arrived)")
    }
}
