import FlagshipStore
import Foundation

/// An app's ``FSHTTPTransport`` as the SDK's ``HTTPTransport``: what the SDK promises of every
/// request, kept whatever the app's client does.
///
/// - **A deadline.** The app's `send` races the request's timeout in a task group; at the
///   timeout it is cancelled and the caller gets ``TransportError/timedOut(after:)``. Structured:
///   the call returns once the client has stopped, so a client that ignores cancellation holds
///   the call until it returns (async-http-client stops at once).
/// - **Redirects** are followed here, within the origin only (``Redirect``), the timeout
///   bounding them all.
/// - **The answer is bounded**: the request carries the SDK's limit, and a body past it fails
///   the request even if the client read it.
/// - **Errors are the SDK's**: an ``FSTransportError`` keeps its reason, a cancellation is
///   `.cancelled`, and any other error is a failed connection, described by its text.
struct AppTransport: HTTPTransport {
    let base: any FSHTTPTransport
    let maximumResponseBytes: Int

    func send(_ request: FSHTTPRequest) async throws(TransportError) -> FSHTTPResponse {
        let timeout = request.saneTimeout
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(timeout))
        var current = request
        current.maximumResponseBytes = maximumResponseBytes
        var redirects = 0
        while true {
            let left = clock.now.duration(to: deadline)
            let response: FSHTTPResponse
            do {
                response = try await exchange(current, within: left)
            } catch .timedOut {
                throw .timedOut(after: timeout)
            }
            guard response.body.count <= maximumResponseBytes else { throw .responseTooLarge(limit: maximumResponseBytes) }
            guard let redirect = Redirect(answer: response, to: current.url) else { return response }
            guard redirects < Redirect.maxFollowed else {
                throw .connectionFailed("\(request.url.hostAndPort) redirected the request more than \(Redirect.maxFollowed) times")
            }
            redirects += 1
            current = try redirect.request(following: current, from: request.url)
        }
    }

    func shutdown() async {
        await base.shutdown()
    }

    /// One exchange through the app's client, racing `left` in a task group: whichever ends
    /// first answers, and the other is cancelled (and awaited: structured, nothing outlives it).
    private func exchange(_ request: FSHTTPRequest, within left: Duration) async throws(TransportError) -> FSHTTPResponse {
        guard left > .zero else { throw .timedOut(after: 0) }
        let base = base
        do {
            return try await withThrowingTaskGroup(of: FSHTTPResponse?.self) { group in
                group.addTask { try await base.send(request) }
                group.addTask {
                    try await DeadlineTimer.shared.sleep(for: left)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let response = first else { throw FSTransportError.timedOut(after: 0) }
                return response
            }
        } catch {
            throw Task.isCancelled ? .cancelled : Self.failure(error)
        }
    }

    /// What an error from the app's client means to the SDK.
    static func failure(_ error: any Error) -> TransportError {
        switch error {
        case let error as FSTransportError: error.failure
        case let error as TransportError: error
        case is CancellationError: .cancelled
        default: .connectionFailed("the HTTP client failed: \(error)")
        }
    }
}
