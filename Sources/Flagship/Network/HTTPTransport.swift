import Foundation

/// Sends one HTTP request and gives back the whole answer, whatever its status.
///
/// The seam between the Flagship clients (decision, events) and the network: the SDK uses
/// ``URLSessionTransport``; anything else (another HTTP stack) can stand in. An answer with any
/// status is a response, not an error: only a request that got no complete answer throws.
/// `package`: FlagshipTesting answers in-process through it (`FSConfigBuilder.withTransport`).
package protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse
    /// Cancels what is in flight and refuses new requests. Safe to call twice.
    func shutdown()
}

extension HTTPTransport {
    package func shutdown() {}
}

/// The transport of an SDK whose network is disabled: refuses every request, sends nothing.
struct DisabledTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        throw .networkDisabled
    }
}

package struct HTTPRequest: Sendable, Equatable {
    package enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
    }

    package var method: Method
    package var url: URL
    package var headers: [String: String]
    package var body: Data?
    /// Seconds from the call to the last byte of the answer; past it the request fails with
    /// ``TransportError/timedOut(after:)``, whether or not the server is still sending.
    package var timeout: TimeInterval

    package init(method: Method, url: URL, headers: [String: String] = [:], body: Data? = nil, timeout: TimeInterval) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// A JSON POST to a Flagship service, with the headers every Flagship request carries
    /// (PROTOCOL.md): content type, accept, SDK client and version, and the API key when given.
    static func flagshipPOST(url: URL, body: Data, apiKey: String?, sdkVersion: String,
                             timeout: TimeInterval) -> HTTPRequest {
        var headers = [
            "Content-Type": "application/json",
            "Accept": "application/json",
            "x-sdk-client": SDKInfo.clientName,
            "x-sdk-version": sdkVersion,
        ]
        if let apiKey { headers["x-api-key"] = apiKey }
        return HTTPRequest(method: .post, url: url, headers: headers, body: body, timeout: timeout)
    }
}

package struct HTTPResponse: Sendable, Equatable {
    package var status: Int
    /// Header names in lower case (HTTP names are case-insensitive).
    package var headers: [String: String]
    package var body: Data

    package init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package var isSuccess: Bool { (200..<300).contains(status) }
}

/// Why a request got no complete answer. Descriptions name the host, never a header's value.
package enum TransportError: Error, Equatable, CustomStringConvertible {
    /// No complete answer within the request's timeout (seconds).
    case timedOut(after: TimeInterval)
    /// Connection refused, host not found, connection dropped, not HTTP...: the reason as a phrase.
    case connectionFailed(String)
    /// The caller's task was cancelled, or the transport was shut down.
    case cancelled
    /// The answer's body is larger than the transport accepts (bytes); it was not read further.
    case responseTooLarge(limit: Int)
    /// The answer redirected to another origin (scheme, host or port), which is not followed:
    /// the request, its API key included, goes only where the SDK was configured to send it.
    /// Both origins as `scheme://host:port`.
    case redirectRefused(from: String, to: String)
    /// The answer to a request with a body redirected it with a status (301, 302, 303) that
    /// would send it again as a GET without its body: not followed, since the answer to that GET
    /// would say nothing of the body. `to`: the target, without its query or fragment.
    case redirectNotFollowed(status: Int, to: String)
    /// The SDK was started with its network disabled: no request leaves the process.
    case networkDisabled

    package var description: String {
        switch self {
        case .timedOut(let timeout):
            return "no complete answer within \(timeout.millisecondsText)"
        case .connectionFailed(let reason):
            return reason
        case .cancelled:
            return "the request was cancelled"
        case .responseTooLarge(let limit):
            return "the answer is larger than \(limit) bytes and was not read"
        case .redirectRefused(let from, let to):
            return "\(from) redirected the request to another origin, \(to), which was not followed (requests go only to the configured host)"
        case .networkDisabled:
            return "the network is disabled (offline): nothing is sent"
        case .redirectNotFollowed(let status, let to):
            return "the answer was a redirect (HTTP \(status)) to \(to), not followed: it would send the request again as a GET without its body"
        }
    }
}

extension TransportError {
    /// The description with `secret` (the API key) blanked out, should a transport ever echo a
    /// header in its message: what the clients put in their own errors.
    func description(redacting secret: String) -> String {
        secret.isEmpty ? description : description.replacingOccurrences(of: secret, with: "<api key>")
    }
}

extension TimeInterval {
    /// Seconds as whole milliseconds for a message, `"2000 ms"`; never traps.
    var millisecondsText: String {
        let milliseconds = (self * 1000).rounded()
        guard milliseconds.isFinite, abs(milliseconds) < 1e15 else { return "\(self) s" }
        return "\(Int64(milliseconds)) ms"
    }
}
