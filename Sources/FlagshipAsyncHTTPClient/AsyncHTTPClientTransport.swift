#if AsyncHTTPClient
import AsyncHTTPClient
import Flagship
import Foundation
import NIOCore
import NIOHTTP1

/// The SDK's requests through async-http-client: the HTTP client of server-side Swift, with its
/// connection pool on SwiftNIO's event loops.
///
/// ```swift
/// import Flagship
/// import FlagshipAsyncHTTPClient
///
/// let config = FSConfigBuilder()
///     .DecisionApi()
///     .withHTTPTransport(AsyncHTTPClientTransport())
///     .build()
/// Flagship.sharedInstance.start(envId: envId, apiKey: apiKey, config: config)
/// ```
///
/// - `AsyncHTTPClientTransport()` makes a client of the SDK's own on the process's singleton
///   event loop group (`HTTPClient.defaultEventLoopGroup`, no threads of its own), with redirects
///   disallowed: the SDK follows them itself, within the origin only. The SDK shuts that client
///   down when it closes.
/// - `AsyncHTTPClientTransport(client:)` shares the app's client and its connection pool; the
///   SDK never shuts it down. Make that client with `redirectConfiguration: .disallow`:
///   async-http-client follows redirects by default, and sends the request's headers, the API
///   key among them, to wherever `Location` points.
///
/// Each request runs with the SDK's timeout as its deadline, reads the answer up to the SDK's
/// bound (`FSHTTPRequest.maximumResponseBytes`) and no further, and takes the SDK's
/// cancellation (a closing SDK, a cancelled task) at once.
public struct AsyncHTTPClientTransport: FSHTTPTransport {
    private let client: HTTPClient
    private let ownsClient: Bool

    /// A client of the SDK's own on the singleton event loop group, redirects disallowed; shut
    /// down with the SDK.
    public init() {
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup,
                            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        ownsClient = true
    }

    /// The app's `client`, shared: the SDK's requests take connections from its pool, and the SDK
    /// leaves it running when it closes.
    public init(client: HTTPClient) {
        self.client = client
        ownsClient = false
    }

    /// Sends `request` with its timeout as the deadline and reads the answer up to its bound;
    /// async-http-client's errors are given in the SDK's words (`FSTransportError`).
    public func send(_ request: FSHTTPRequest) async throws -> FSHTTPResponse {
        var outbound = HTTPClientRequest(url: request.url.absoluteString)
        outbound.method = request.method == .post ? .POST : .GET
        for (name, value) in request.headers { outbound.headers.add(name: name, value: value) }
        if let body = request.body { outbound.body = .bytes(ByteBuffer(bytes: body)) }
        let timeout = TimeAmount.nanoseconds(Int64(max(0, min(request.timeout, 86_400)) * 1e9))
        do {
            let response = try await client.execute(outbound, timeout: timeout)
            let body = try await response.body.collect(upTo: request.maximumResponseBytes)
            var headers: [String: String] = [:]
            for (name, value) in response.headers {
                let name = name.lowercased()
                headers[name] = headers[name].map { $0 + ", " + value } ?? value
            }
            return FSHTTPResponse(status: Int(response.status.code), headers: headers, body: Data(body.readableBytesView))
        } catch {
            throw Self.failure(error, request: request)
        }
    }

    /// Shuts the client down if it is the SDK's own; the app's is left alone.
    public func shutdown() async {
        guard ownsClient else { return }
        try? await client.shutdown()
    }

    /// async-http-client's errors in the SDK's words.
    private static func failure(_ error: any Error, request: FSHTTPRequest) -> any Error {
        if error is CancellationError || error is FSTransportError { return error }
        if error is NIOTooManyBytesError { return FSTransportError.responseTooLarge(limit: request.maximumResponseBytes) }
        let host = request.url.host.map { host in request.url.port.map { "\(host):\($0)" } ?? host } ?? "the server"
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout:
                return FSTransportError.timedOut(after: request.timeout)
            case .cancelled:
                return CancellationError()
            default:
                return FSTransportError.connectionFailed("the request to \(host) failed (\(error))")
            }
        }
        return FSTransportError.connectionFailed("the request to \(host) failed (\(error))")
    }
}
#endif
