import FlagshipLocalServer
import Foundation

/// The hits a local server accepted, counted as each request is answered (`onRequest`): reading
/// `server.hits` would flatten every request received so far at each look.
final class DeliveredHits: @unchecked Sendable {
    struct TimedOut: Error, CustomStringConvertible {
        let expected: Int
        let arrived: Int
        let timeout: Duration

        var description: String { "\(arrived) of \(expected) hits arrived within \(timeout)" }
    }

    // `count` is only touched under `lock`.
    private let lock = NSLock()
    private var count = 0

    var value: Int {
        lock.withLock { count }
    }

    /// A local server for the benchmarks' environment that counts what it accepts here.
    func startServer() throws -> LocalFlagshipServer {
        let server = LocalFlagshipServer(.init(envId: SDKSession.envId, apiKey: SDKSession.apiKey, onRequest: record))
        try server.start()
        return server
    }

    func record(_ request: RecordedRequest) {
        guard request.route == .events, request.isAccepted else { return }
        let hits = request.json?["h"]?.arrayValue?.count ?? 0
        lock.withLock { count += hits }
    }

    /// Returns once `expected` hits arrived, looking every millisecond.
    func wait(for expected: Int, timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while value < expected {
            guard ContinuousClock.now < deadline else { throw TimedOut(expected: expected, arrived: value, timeout: timeout) }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
