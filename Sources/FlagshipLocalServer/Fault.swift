import Foundation

/// How an injected fault spoils an answer, to see the SDK survive what production networks do.
public enum FaultKind: Sendable, Equatable {
    /// Answer this status with a JSON error body, and close the connection.
    case status(Int)
    /// Answer 429 Too Many Requests with `Retry-After: <seconds>`, and close the connection.
    case tooManyRequests(retryAfter: Int)
    /// Answer as usual, this much later. Waited asynchronously: other requests go on meanwhile.
    case latency(Duration)
    /// Close the connection without answering.
    ///
    /// URLSession on Linux (libcurl) retries a request once when a connection it reused closes
    /// without a byte, and its retry sends the head but not the body: the client then waits for
    /// its own timeout, and the retry, never whole, is not recorded. On a new connection the
    /// client fails at once.
    case dropConnection
    /// Answer 200 with this body, and close the connection.
    case malformedBody(MalformedBody)
    /// Send the usual head, which announces the whole body, then half the body, and close: a
    /// transfer cut off mid-way. (An answer with an empty body, like the events route's, is
    /// then just closed after its head.)
    case cutOffBody
    /// Answer this redirect status (301, 302, 303, 307 or 308) with `Location: location` and an
    /// empty body: a load balancer or a hijacked DNS entry sending the client somewhere else.
    /// `location` may be absolute (another origin) or a path on this server.
    case redirect(Int, location: String)
}

/// Bodies that are not the JSON a Flagship SDK expects.
public enum MalformedBody: Sendable, Equatable {
    /// `{"visitorId": "v", "campaigns": [`: JSON that stops part-way.
    case truncatedJSON
    /// An HTML error page, as a proxy in front of the API might send.
    case notJSON
    /// Valid JSON of the wrong shape: fields of the wrong types.
    case wrongShape
    /// Any bytes.
    case custom(Data)

    /// The bytes sent as the body.
    public var data: Data {
        switch self {
        case .truncatedJSON: return Data(#"{"visitorId": "v", "campaigns": ["#.utf8)
        case .notJSON: return Data("<html><body><h1>502 Bad Gateway</h1></body></html>".utf8)
        case .wrongShape: return Data(#"{"visitorId": 42, "panic": "no", "campaigns": {"id": "c1"}}"#.utf8)
        case .custom(let data): return data
        }
    }
}

/// Which of the requests a fault sees it spoils. Deterministic, so a failing test fails the
/// same way every run.
public enum FaultShare: Sendable, Equatable {
    /// Every request, until the fault is removed.
    case every
    /// The next `n` requests; then the fault is gone.
    case next(Int)
    /// The `k`-th, `2k`-th, `3k`-th... request the fault sees.
    case everyNth(Int)
    /// About this fraction of requests (0...1), chosen by a pseudo-random generator seeded with
    /// `seed`: the same requests every run.
    case fraction(Double, seed: UInt64)
}

/// Names an injected fault, to remove it alone.
public struct FaultID: Hashable, Sendable {
    let value: Int
}

extension FaultKind: CustomStringConvertible {
    /// A few words naming the fault (`status 503`, `latency 2.0 seconds`), for a log.
    public var description: String {
        switch self {
        case .status(let status): return "status \(status)"
        case .tooManyRequests(let seconds): return "status 429, retry after \(seconds) s"
        case .latency(let duration): return "latency \(duration)"
        case .dropConnection: return "drop connection"
        case .malformedBody(let body): return "malformed body \(body)"
        case .cutOffBody: return "cut-off body"
        case .redirect(let status, let location): return "redirect \(status) to \(location)"
        }
    }

    var isLatency: Bool {
        if case .latency = self { return true }
        return false
    }
}

extension MalformedBody: CustomStringConvertible {
    /// The body's kind in parentheses (`(not JSON)`, `(12 custom bytes)`), for a log.
    public var description: String {
        switch self {
        case .truncatedJSON: return "(truncated JSON)"
        case .notJSON: return "(not JSON)"
        case .wrongShape: return "(wrong shape)"
        case .custom(let data): return "(\(data.count) custom bytes)"
        }
    }
}
