import Foundation

/// The HTTP client the SDK sends its requests through: give it the one your server already has.
///
/// By default the SDK talks HTTP through Foundation's `URLSession`, which keeps the `Flagship`
/// product light. A server usually has an HTTP client already (async-http-client, with its
/// connection pool and event loops): conform it to this protocol and hand it over with
/// ``FSConfigBuilder/withHTTPTransport(_:)``, or take the ready one in the
/// `FlagshipAsyncHTTPClient` product (trait `AsyncHTTPClient`).
///
/// A transport sends one request and gives back the whole answer, **whatever its status**: a
/// 500 or a 404 is a response, not an error. It throws only when it got no complete answer, with
/// an ``FSTransportError`` when it knows why (a timeout, a body over the limit), or any error of
/// its own, which the SDK reports as a failed connection. What the SDK does around every
/// transport, so that yours need not:
/// - **a hard deadline**: the call returns ``FSTransportError/Code/timedOut`` at the request's
///   `timeout` even if your transport is still waiting, and cancels its task;
/// - **redirects**: an answer 301, 302, 303, 307 or 308 is followed only within the request's
///   origin (scheme, host and port), since its headers carry the API key; a redirect elsewhere
///   fails the request. Your client should not follow redirects itself (async-http-client:
///   `redirectConfiguration: .disallow`), or it sends the API key wherever `Location` points;
/// - **a bound on the answer**: a body over ``FSHTTPRequest/maximumResponseBytes`` fails the
///   request. Your transport should stop reading at that bound rather than hold more.
///
/// ```swift
/// struct MyTransport: FSHTTPTransport {
///     let client: MyHTTPClient
///     func send(_ request: FSHTTPRequest) async throws -> FSHTTPResponse {
///         let answer = try await client.send(request.method.rawValue, request.url,
///                                            headers: request.headers, body: request.body)
///         return FSHTTPResponse(status: answer.status, headers: answer.headers, body: answer.body)
///     }
/// }
///
/// Flagship.sharedInstance.start(envId: envId, apiKey: apiKey,
///                                config: FSConfigBuilder().withHTTPTransport(MyTransport(client: client)).build())
/// ```
public protocol FSHTTPTransport: Sendable {
    /// Sends `request` and returns its answer, whatever the status.
    func send(_ request: FSHTTPRequest) async throws -> FSHTTPResponse

    /// Called once when the SDK closes, after its last request. A transport over a client the
    /// app owns leaves it alone (the default does nothing); one that made its own client shuts
    /// it down here.
    func shutdown() async
}

extension FSHTTPTransport {
    /// Does nothing: the client belongs to the app.
    public func shutdown() async {}
}

/// A request the SDK sends: a JSON POST to the Decision API or the events endpoint, or a GET of
/// the bucketing file.
public struct FSHTTPRequest: Sendable, Equatable {
    /// The methods the SDK uses.
    public enum Method: String, Sendable {
        /// A download: the bucketing file.
        case get = "GET"
        /// A JSON body: a decision, a batch of hits, an activate.
        case post = "POST"
    }

    /// The largest answer the SDK takes unless a bigger bucketing file is allowed (10 MiB).
    public static let defaultMaximumResponseBytes = 10 * 1024 * 1024

    /// `GET` or `POST`.
    public var method: Method
    /// Where the request goes, query included.
    public var url: URL
    /// Header names as the SDK writes them (`Content-Type`, `x-api-key`...); the API key is one
    /// of them: never log them.
    public var headers: [String: String]
    /// The JSON body of a POST; `nil` for a GET.
    public var body: Data?
    /// Seconds from the call to the last byte of the answer; past it the request fails with
    /// ``FSTransportError/Code/timedOut``, whether or not the server is still sending.
    public var timeout: TimeInterval
    /// The largest body the SDK takes in the answer (bytes): a transport stops reading past it
    /// and throws ``FSTransportError/responseTooLarge(limit:)``.
    public var maximumResponseBytes: Int

    /// A request as the SDK makes one; a transport's tests can make them too.
    public init(method: Method, url: URL, headers: [String: String] = [:], body: Data? = nil, timeout: TimeInterval,
                maximumResponseBytes: Int = FSHTTPRequest.defaultMaximumResponseBytes) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maximumResponseBytes = maximumResponseBytes
    }

    /// A JSON POST to a Flagship service, with the headers every Flagship request carries
    /// (PROTOCOL.md): content type, accept, SDK client and version, and the API key when given.
    static func flagshipPOST(url: URL, body: Data, apiKey: String?, sdkVersion: String,
                             timeout: TimeInterval) -> FSHTTPRequest {
        var headers = [
            "Content-Type": "application/json",
            "Accept": "application/json",
            "x-sdk-client": SDKInfo.clientName,
            "x-sdk-version": sdkVersion,
        ]
        if let apiKey { headers["x-api-key"] = apiKey }
        return FSHTTPRequest(method: .post, url: url, headers: headers, body: body, timeout: timeout)
    }
}

/// The answer to an ``FSHTTPRequest``: any status.
public struct FSHTTPResponse: Sendable, Equatable {
    /// The HTTP status, any of them: the SDK judges it.
    public var status: Int
    /// Header names in lower case (HTTP names are case-insensitive); the SDK reads `location`
    /// and `last-modified`.
    public var headers: [String: String]
    /// The whole body.
    public var body: Data

    /// Header names are lowered here, so a transport may pass them as its client gives them.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        var lowered: [String: String] = [:]
        lowered.reserveCapacity(headers.count)
        for (name, value) in headers { lowered[name.lowercased()] = value }
        self.headers = lowered
        self.body = body
    }

    package var isSuccess: Bool { (200..<300).contains(status) }
}

/// Why a request got no complete answer: what a transport throws when it knows.
///
/// A struct with a ``code`` to switch on, so that new reasons can come without breaking a
/// `switch` (as async-http-client's and postgres-nio's errors do). Descriptions name the host,
/// never a header's value.
public struct FSTransportError: Error, Hashable, CustomStringConvertible {
    /// What went wrong, to switch on.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case timedOut, connectionFailed, cancelled, responseTooLarge, redirectRefused, redirectNotFollowed, networkDisabled
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// No complete answer within the request's timeout.
        public static let timedOut = Code(.timedOut)
        /// Connection refused, host not found, connection dropped, not HTTP, or an error of the
        /// transport's own.
        public static let connectionFailed = Code(.connectionFailed)
        /// The caller's task was cancelled, or the transport was shut down.
        public static let cancelled = Code(.cancelled)
        /// The answer's body is larger than the request allows.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The answer redirected to another origin: not followed (the API key goes only where
        /// the SDK was configured to send it).
        public static let redirectRefused = Code(.redirectRefused)
        /// A 301, 302 or 303 to a request with a body: following would resend it as a GET
        /// without its body.
        public static let redirectNotFollowed = Code(.redirectNotFollowed)
        /// The SDK was started with its network disabled.
        public static let networkDisabled = Code(.networkDisabled)

        /// The code's name: `timedOut`, `connectionFailed`...
        public var description: String { base.rawValue }
    }

    /// The reason, with its details.
    package let failure: TransportError

    package init(_ failure: TransportError) {
        self.failure = failure
    }

    /// No complete answer within `seconds`.
    public static func timedOut(after seconds: TimeInterval) -> FSTransportError { FSTransportError(.timedOut(after: seconds)) }
    /// No answer, for `reason` (a phrase: "connection refused by api.example.com:443").
    public static func connectionFailed(_ reason: String) -> FSTransportError { FSTransportError(.connectionFailed(reason)) }
    /// The request was cancelled.
    public static let cancelled = FSTransportError(.cancelled)
    /// The answer's body passed `limit` bytes and was not read further.
    public static func responseTooLarge(limit: Int) -> FSTransportError { FSTransportError(.responseTooLarge(limit: limit)) }

    /// What went wrong, to switch on.
    public var code: Code {
        switch failure {
        case .timedOut: .timedOut
        case .connectionFailed: .connectionFailed
        case .cancelled: .cancelled
        case .responseTooLarge: .responseTooLarge
        case .redirectRefused: .redirectRefused
        case .redirectNotFollowed: .redirectNotFollowed
        case .networkDisabled: .networkDisabled
        }
    }

    /// The reason in words, naming the host, never a header's value.
    public var description: String { failure.description }
}
