import Dispatch
import FlagshipStore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``HTTPTransport`` over Foundation's `URLSession` (FoundationNetworking, libcurl, on Linux).
///
/// Each request is bounded by a hard deadline, its `timeout` from the call: `URLRequest`'s own
/// `timeoutInterval` only bounds the silence between two packets, so a server that trickles bytes,
/// or a connection attempt that hangs, would otherwise outlive it. At the deadline the call returns
/// `.timedOut` and the data task is cancelled. Answers are read through a delegate, so a body over
/// `maxResponseBytes` is cut off as it arrives instead of being held whole in memory.
///
/// Redirects are followed here, not by Foundation, and only within the request's origin (scheme,
/// host and port): FoundationNetworking resends the first request's headers, the API key
/// included, to wherever `Location` points, and drops the body of a 307. A redirect to another
/// origin fails the request with ``TransportError/redirectRefused(from:to:)``; a 301, 302 or 303
/// to a request with a body fails it with ``TransportError/redirectNotFollowed(status:to:)``
/// (followed, it would be a GET without the body, and its 200 would pass for a delivery).
///
/// One session per transport, ephemeral: no cookies, no URL cache, no credentials kept.
/// ``shutdown()`` cancels what is in flight and invalidates the session; safe to call twice.
package final class URLSessionTransport: HTTPTransport {
    package static let defaultMaxResponseBytes = FSHTTPRequest.defaultMaximumResponseBytes

    let maxResponseBytes: Int
    private let session: URLSession
    private let exchanges: ExchangeTable
    /// Whether `shutdown()` invalidated the session: no task is created on it after that.
    private let isShutDown = Locked(false)

    package init(maxResponseBytes: Int = URLSessionTransport.defaultMaxResponseBytes) {
        self.maxResponseBytes = maxResponseBytes
        // Settles, before the first task, which host check FoundationNetworking will call.
        _ = URLHostCheck.current
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.urlCredentialStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        exchanges = ExchangeTable()
        // The delegate's calls on the SDK's serial queue of short completions: FoundationNetworking's
        // default delegate queue runs them on a concurrent queue, which waits for a thread of the
        // global pool, so while the app's work held it no answer arrived (`Completions`).
        let delegateQueue = OperationQueue()
        delegateQueue.name = "io.flagship.completions"
        delegateQueue.maxConcurrentOperationCount = 1
        delegateQueue.underlyingQueue = Completions.queue
        session = URLSession(configuration: configuration, delegate: exchanges, delegateQueue: delegateQueue)
    }

    deinit {
        // The session keeps its delegate until invalidated: without this, both would leak.
        if !isShutDown.withLock({ $0 }) { session.finishTasksAndInvalidate() }
    }

    /// Sends `request`, following redirects within its origin; its timeout bounds them all.
    package func send(_ request: FSHTTPRequest) async throws(TransportError) -> FSHTTPResponse {
        let timeout = request.saneTimeout
        let started = DispatchTime.now()
        var current = request
        var redirects = 0
        while true {
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            let (result, redirect) = await exchange(current, timeout: max(0, timeout - elapsed))
            let response: FSHTTPResponse
            do {
                response = try result.get()
            } catch .timedOut {
                throw .timedOut(after: timeout)
            }
            guard let redirect else { return response }
            guard redirects < Redirect.maxFollowed else {
                throw .connectionFailed("\(request.url.hostAndPort) redirected the request more than \(Redirect.maxFollowed) times")
            }
            redirects += 1
            current = try redirect.request(following: current, from: request.url)
        }
    }

    /// One request and its answer, or the redirect it met (declined, for `send` to judge).
    private func exchange(_ request: FSHTTPRequest, timeout: TimeInterval) async -> (Exchange.Outcome, Redirect?) {
        let exchange = Exchange(url: request.url, timeout: timeout, maxResponseBytes: maxResponseBytes)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                start(request, exchange: exchange, continuation: continuation)
            }
        } onCancel: {
            exchange.finish(.failure(.cancelled))
        }
        return (result, exchange.redirect)
    }

    package func shutdown() {
        if isShutDown.setFirst() { session.invalidateAndCancel() }
    }

    private func start(_ request: FSHTTPRequest, exchange: Exchange,
                       continuation: CheckedContinuation<Result<FSHTTPResponse, TransportError>, Never>) {
        guard exchange.attach(continuation) else { return }  // cancelled before it started
        // Holding the lock while creating the task keeps `shutdown()` from invalidating the
        // session in between (creating a task on an invalidated session is a crash).
        let task: URLSessionDataTask? = isShutDown.withLock { shutDown in
            shutDown ? nil : session.dataTask(with: Self.urlRequest(request))
        }
        guard let task else {
            exchange.finish(.failure(.cancelled))
            return
        }
        exchanges.register(exchange, for: task.taskIdentifier)
        if !exchange.run(task) {
            exchanges.unregister(task.taskIdentifier)
        }
    }

    private static func urlRequest(_ request: FSHTTPRequest) -> URLRequest {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        for (name, value) in request.headers {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        urlRequest.httpBody = request.body
        // FoundationNetworking truncates this to whole seconds (0.5 would time out at once), and
        // it only bounds idle time: whole seconds here, and the exchange's deadline is the bound.
        urlRequest.timeoutInterval = max(1, request.saneTimeout.rounded(.up))
        urlRequest.httpShouldHandleCookies = false
        return urlRequest
    }
}

/// One request in flight: collects the answer and resumes its caller exactly once, with the
/// answer, an error, the deadline's `.timedOut` or `.cancelled`, whichever comes first.
private final class Exchange: Sendable {
    typealias Outcome = Result<FSHTTPResponse, TransportError>

    /// `@unchecked`: Foundation on Linux does not mark the task, the work item and the response
    /// `Sendable`; they are reached only under `state`'s lock, and the task's own methods are
    /// thread-safe.
    private struct State: @unchecked Sendable {
        var continuation: CheckedContinuation<Outcome, Never>?
        var outcome: Outcome?
        var task: URLSessionDataTask?
        var deadline: DeadlineTimer.Token?
        var response: HTTPURLResponse?
        var body = Data()
        var redirect: Redirect?
    }

    let url: URL
    let timeout: TimeInterval
    let maxResponseBytes: Int
    private let state = Locked(State())

    init(url: URL, timeout: TimeInterval, maxResponseBytes: Int) {
        self.url = url
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }

    /// Stores the caller's continuation; `false` (and the caller resumed) when already finished.
    func attach(_ continuation: CheckedContinuation<Outcome, Never>) -> Bool {
        let finished: Outcome? = state.withLock { state in
            if state.outcome == nil { state.continuation = continuation }
            return state.outcome
        }
        if let finished { continuation.resume(returning: finished) }
        return finished == nil
    }

    /// Arms the deadline and starts `task`; `false` (and `task` cancelled) when the exchange
    /// finished meanwhile.
    func run(_ task: URLSessionDataTask) -> Bool {
        let timeout = timeout
        let deadline = DeadlineTimer.shared.schedule(at: .now() + timeout) { [weak self] in
            self?.finish(.failure(.timedOut(after: timeout)))
        }
        let finished = state.withLock { state in
            state.task = task
            state.deadline = deadline
            return state.outcome != nil
        }
        if finished {
            DeadlineTimer.shared.cancel(deadline)
            task.cancel()
            return false
        }
        task.resume()
        return true
    }

    /// The redirect the answer asked for, once the exchange finished with it.
    var redirect: Redirect? {
        state.withLock { $0.redirect }
    }

    /// The answer is a redirect, declined: the exchange ends with it, and the task (its
    /// redirect declined, it completes by itself) is not cancelled.
    func redirected(_ redirect: Redirect) {
        let first = state.withLock { state in
            guard state.outcome == nil else { return false }
            state.redirect = redirect
            return true
        }
        if first { finish(.success(FSHTTPResponse(status: redirect.status))) }
    }

    /// The first call wins: resumes the caller and, for a failure, cancels the data task.
    func finish(_ outcome: Outcome) {
        let taken = state.withLock { state -> (CheckedContinuation<Outcome, Never>?, URLSessionDataTask?, DeadlineTimer.Token?)? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.continuation = nil; state.task = nil; state.deadline = nil; state.body = Data() }
            return (state.continuation, state.task, state.deadline)
        }
        guard let (continuation, task, deadline) = taken else { return }
        deadline.map(DeadlineTimer.shared.cancel)
        if case .failure = outcome { task?.cancel() }
        continuation?.resume(returning: outcome)
    }

    func received(_ response: URLResponse) -> Bool {
        guard let http = response as? HTTPURLResponse else {
            finish(.failure(.connectionFailed("\(url.hostAndPort) did not answer in HTTP")))
            return false
        }
        if http.expectedContentLength > Int64(maxResponseBytes) {
            finish(.failure(.responseTooLarge(limit: maxResponseBytes)))
            return false
        }
        state.withLock { $0.response = http }
        return true
    }

    func received(_ data: Data) {
        let tooLarge = state.withLock { state in
            guard state.outcome == nil else { return false }
            guard state.body.count + data.count <= maxResponseBytes else { return true }
            state.body.append(data)
            return false
        }
        if tooLarge { finish(.failure(.responseTooLarge(limit: maxResponseBytes))) }
    }

    func completed(_ error: (any Error)?) {
        if let error {
            finish(.failure(transportError(error)))
            return
        }
        let answer = state.withLock { ($0.response, $0.body) }
        guard let response = answer.0 else {
            finish(.failure(.connectionFailed("\(url.hostAndPort) closed the connection without an answer")))
            return
        }
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            headers[String(describing: name).lowercased()] = String(describing: value)
        }
        finish(.success(FSHTTPResponse(status: response.statusCode, headers: headers, body: answer.1)))
    }

    private func transportError(_ error: any Error) -> TransportError {
        let host = url.hostAndPort
        guard let urlError = error as? URLError else {
            return .connectionFailed("the request to \(host) failed (\(error.localizedDescription))")
        }
        let (response, received) = state.withLock { ($0.response, $0.body.count) }
        switch urlError.code {
        case .timedOut:
            return .timedOut(after: timeout)
        case .cancelled:
            return .cancelled
        case _ where response != nil:
            // libcurl reports a body cut short under several codes (-1 among them): the head
            // that arrived says what happened better.
            let expected = response.map { $0.expectedContentLength >= 0 ? " of \($0.expectedContentLength)" : "" } ?? ""
            return .connectionFailed("the connection to \(host) was lost before the answer was complete (\(received)\(expected) bytes received)")
        case .cannotConnectToHost:
            return .connectionFailed("could not connect to \(host) (connection refused or unreachable)")
        case .cannotFindHost, .dnsLookupFailed:
            return .connectionFailed("the host name of \(host) could not be resolved")
        case .networkConnectionLost:
            return .connectionFailed("the connection to \(host) was lost before an answer came")
        case .notConnectedToInternet:
            return .connectionFailed("there is no network connection to reach \(host)")
        case .badServerResponse, .cannotParseResponse, .zeroByteResource:
            // libcurl's "empty reply from server" comes as `badServerResponse`.
            return .connectionFailed("\(host) closed the connection without a valid answer")
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot:
            return .connectionFailed("the secure connection to \(host) failed")
        case .badURL, .unsupportedURL:
            return .connectionFailed("the URL \(url.absoluteString) cannot be used")
        default:
            return .connectionFailed("the request to \(host) failed (URL error \(urlError.code.rawValue))")
        }
    }
}

/// The session's delegate: routes each task's events to its exchange.
private final class ExchangeTable: NSObject, URLSessionDataDelegate, Sendable {
    private let exchanges = Locked<[Int: Exchange]>([:])

    func register(_ exchange: Exchange, for taskIdentifier: Int) {
        exchanges.withLock { $0[taskIdentifier] = exchange }
    }

    func unregister(_ taskIdentifier: Int) {
        exchanges.withLock { $0[taskIdentifier] = nil }
    }

    private func exchange(_ task: URLSessionTask) -> Exchange? {
        exchanges.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let proceed = exchange(dataTask)?.received(response) ?? false
        completionHandler(proceed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        exchange(dataTask)?.received(data)
    }

    /// Every redirect is declined, and handed to `send`, which follows it only within the
    /// origin. Declined before the exchange ends, never by cancelling the task: once the caller
    /// resumes it may shut the session down, and FoundationNetworking traps when a task was
    /// cancelled before its redirect callback ran.
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
        exchange(task)?.redirected(Redirect(status: response.statusCode, target: request.url))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let exchange = exchanges.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        exchange?.completed(error)
    }
}

/// A redirect an answer asked for: its status, and the absolute URL of its `Location`.
/// A URL's origin (RFC 6454): scheme, host and port, the port written or the scheme's default.
struct Origin: Equatable, CustomStringConvertible {
    let scheme: String
    let host: String
    let port: Int

    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        let defaultPort: Int? = switch scheme {
        case "http": 80
        case "https": 443
        default: nil
        }
        guard let port = url.port ?? defaultPort else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    var description: String { "\(scheme)://\(host):\(port)" }
}

extension URL {
    /// `host:port` (or just the host), for messages that must not show a path or query.
    var hostAndPort: String {
        let host = host ?? "the server"
        return port.map { "\(host):\($0)" } ?? host
    }

    /// The path as written (`/` when empty), without the query or fragment, which may hold
    /// secrets: what a message shows of a redirect's target within the origin.
    var pathForMessages: String {
        let path = URLComponents(url: self, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? ""
        return path.isEmpty ? "/" : path
    }
}
