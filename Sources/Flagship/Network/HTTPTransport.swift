import Foundation

/// Sends one HTTP request and gives back the whole answer, whatever its status.
///
/// The seam between the Flagship clients (decision, events) and the network, with typed errors:
/// ``URLSessionTransport`` by default; an app's ``FSHTTPTransport`` through ``AppTransport``,
/// which gives it the SDK's deadline, redirect rule and answer bound. An answer with any status
/// is a response, not an error: only a request that got no complete answer throws. `package`:
/// FlagshipTesting answers in-process through it.
package protocol HTTPTransport: Sendable {
    func send(_ request: FSHTTPRequest) async throws(TransportError) -> FSHTTPResponse
    /// Cancels what is in flight and refuses new requests. Safe to call twice. No default: a
    /// conformer's own synchronous `shutdown()` is its witness, and a default `async` one would
    /// be what `await`-ing code calls on the concrete type, silently doing nothing.
    func shutdown() async
}

extension FSHTTPRequest {
    /// The timeout as a transport can take it, Foundation, Dispatch and `Duration` alike: one
    /// that is not finite (or over a day) is a day, a negative one is zero (FoundationNetworking
    /// traps on an infinite one).
    var saneTimeout: TimeInterval {
        guard timeout.isFinite, timeout <= 86_400 else { return 86_400 }
        return max(0, timeout)
    }
}

/// The transport of an SDK whose network is disabled: refuses every request, sends nothing.
struct DisabledTransport: HTTPTransport {
    func send(_ request: FSHTTPRequest) async throws(TransportError) -> FSHTTPResponse {
        throw .networkDisabled
    }

    func shutdown() {}
}

/// Why a request got no complete answer. Descriptions name the host, never a header's value.
package enum TransportError: Error, Hashable, CustomStringConvertible {
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
