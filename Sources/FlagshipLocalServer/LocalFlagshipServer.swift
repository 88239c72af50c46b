import Flagship
import FlagshipStore
import Foundation

/// A Flagship backend on 127.0.0.1 for tests, demos and offline work: it answers the Decision
/// API (`POST /v2/{envId}/campaigns`), serves a bucketing file (`GET /{envId}/bucketing.json`),
/// takes activates (`POST /v2/activate`), hit batches (`POST /`) and telemetry (`/analytics`,
/// `/troubleshooting`), records every request, and injects faults on demand, so that an SDK can
/// be tested against real HTTP without a network.
///
/// ```swift
/// let server = LocalFlagshipServer(envId: "env", apiKey: "key", decision: .panic)
/// try server.start()
/// defer { server.stop() }
/// // Point the SDK at server.decisionBaseURL and server.eventsBaseURL, then:
/// let activates = try await server.waitForActivates(count: 1)
/// ```
///
/// Each response leaves in one write on a TCP_NODELAY socket: about a millisecond per request
/// on loopback, where a split write would wait ~40 ms for the client's delayed ACK. Faults are
/// deterministic (`FaultShare`), so a failing test fails the same way every run.
public final class LocalFlagshipServer: Sendable {
    /// What the server was made with; the decision and the bucketing file it holds at start.
    public let configuration: Configuration

    private struct Lifecycle {
        var loop: ConnectionLoop?
        /// The port bound last: a restarted server takes it back, so URLs handed out stay valid.
        var port: UInt16?
    }

    private let responder: Responder
    private let lifecycle = Locked(Lifecycle())
    /// Connections refused because their bytes would have passed `Configuration.maximumBufferedBytes`.
    private let refusedOverBuffer = Locked(0)
    /// The bytes of requests still arriving that the server holds now, over all connections.
    private let heldBytes = Locked(0)

    /// A server answering as `configuration` says; it listens only once `start()` is called.
    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
        responder = Responder(configuration: configuration)
    }

    /// A server for `envId` and `apiKey`, the other settings as `Configuration` names them; it
    /// listens only once `start()` is called.
    public convenience init(
        envId: String, apiKey: String, decision: DecisionSource = .sample, bucketingFile: ServedBucketingFile? = nil,
        port: UInt16 = 0, recordFile: URL? = nil
    ) {
        self.init(Configuration(
            envId: envId, apiKey: apiKey, port: port, decision: decision, bucketingFile: bucketingFile, recordFile: recordFile
        ))
    }

    deinit {
        stop()
    }

    // MARK: Lifecycle

    /// Listens and returns the base URL, `http://127.0.0.1:PORT`. Already running: returns it.
    /// After `stop()`, starts again on the same port (and fails if it was taken meanwhile).
    @discardableResult
    public func start() throws -> URL {
        try responder.log.openRecordFile()
        let port = try lifecycle.withLock { lifecycle -> UInt16 in
            if let loop = lifecycle.loop { return loop.port }
            let loop = try ConnectionLoop(port: lifecycle.port ?? configuration.port, maximumBufferedBytes: configuration.maximumBufferedBytes,
                                          refusals: refusedOverBuffer, held: heldBytes) { [responder] message, reply in
                responder.handle(message, reply: reply)
            }
            lifecycle.loop = loop
            lifecycle.port = loop.port
            return loop.port
        }
        return Self.baseURL(port: port)
    }

    /// Closes the listening socket and every connection, and ends the server's thread. Requests
    /// being answered are dropped. Safe to call twice, and before `start()`.
    public func stop() {
        let loop = lifecycle.withLock { lifecycle -> ConnectionLoop? in
            defer { lifecycle.loop = nil }
            return lifecycle.loop
        }
        loop?.stop()
    }

    /// Whether the server listens: between `start()` and `stop()`.
    public var isRunning: Bool {
        lifecycle.withLock { $0.loop != nil }
    }

    /// The port bound, once started.
    public var port: UInt16? {
        lifecycle.withLock { $0.port }
    }

    /// `http://127.0.0.1:PORT`. Only meaningful once `start()` has bound a port.
    public var baseURL: URL {
        guard let port else { preconditionFailure("LocalFlagshipServer: call start() before asking for its URLs") }
        return Self.baseURL(port: port)
    }

    /// `<base>/v2`: the SDK's Decision API base URL (campaigns and activate).
    public var decisionBaseURL: URL { baseURL.appendingPathComponent("v2") }

    /// `<base>`: the SDK's events base URL (hit batches at its root).
    public var eventsBaseURL: URL { baseURL }

    /// `<base>`: the SDK's bucketing base URL (the file at `/{envId}/bucketing.json`).
    public var bucketingBaseURL: URL { baseURL }

    private static func baseURL(port: UInt16) -> URL {
        // A literal of digits after a fixed prefix always makes a URL.
        URL(string: "http://127.0.0.1:\(port)")!
    }

    // MARK: Decisions and faults

    /// How the campaigns route answers from the next request on.
    public var decision: DecisionSource {
        get { responder.decision }
        set { responder.decision = newValue }
    }

    /// The file served at `GET /{envId}/bucketing.json`, and decided with by
    /// `DecisionSource.bucketing`, from the next request on; `nil`: none (that route answers 404).
    public var bucketingFile: ServedBucketingFile? {
        get { responder.bucketingFile }
        set { responder.bucketingFile = newValue }
    }

    /// Replaces the bucketing file with `data`, answered with `Last-Modified: lastModified`.
    /// Throws a ``LocalServerError`` with code `.bucketingFile`, and keeps the file it had, when
    /// the bucketing engine cannot use `data`.
    public func setBucketingFile(_ data: Data, lastModified: Date = Date()) throws {
        bucketingFile = try ServedBucketingFile(data: data, lastModified: lastModified)
    }

    /// Spoils the answers to `share` of the requests on `route` (`nil`: every route), from the
    /// next request on. Returns an id for `removeFault(_:)`.
    @discardableResult
    public func injectFault(_ kind: FaultKind, on route: Route? = nil, share: FaultShare = .every) -> FaultID {
        responder.injectFault(kind, route: route, share: share)
    }

    /// Removes the fault `injectFault` returned `id` for, from the next request on; the others
    /// stay. An id already removed is ignored.
    public func removeFault(_ id: FaultID) {
        responder.removeFault(id)
    }

    /// Removes every injected fault: the server answers normally again.
    public func clearFaults() {
        responder.clearFaults()
    }

    // MARK: What arrived

    /// Every request received since start (or `clearReceived()`), in arrival order; with a
    /// `Configuration.recordLimit`, the newest that many.
    public var received: [RecordedRequest] {
        responder.log.records
    }

    /// What arrived since the server was made, counted whatever `recordLimit` kept and whatever
    /// `clearReceived()` forgot.
    public var totals: ReceivedTotals {
        responder.log.totals
    }

    /// Connections answered 503 and closed because the bytes they sent would have taken the
    /// requests held at once past `Configuration.maximumBufferedBytes`, since the server was made.
    public var refusedOverBufferLimit: Int {
        refusedOverBuffer.withLock { $0 }
    }

    /// The bytes of requests still arriving (or not yet taken) that the server holds now, over
    /// all its connections: what `Configuration.maximumBufferedBytes` bounds.
    public var bytesHeld: Int {
        heldBytes.withLock { $0 }
    }

    /// The requests of `received` on `route`, in arrival order.
    public func received(_ route: Route) -> [RecordedRequest] {
        received.filter { $0.route == route }
    }

    /// The activate entries (`batch` items) of the activate requests the server accepted.
    public var activates: [FSJSONValue] {
        Self.activates(in: received)
    }

    /// The hits (`h` items) of the event batches the server accepted.
    public var hits: [FSJSONValue] {
        Self.hits(in: received)
    }

    /// Forgets what was received (the record file keeps it), e.g. between phases of a test.
    public func clearReceived() {
        responder.log.removeAll()
    }

    /// Waits until at least `count` requests on `route` have been received (whatever their
    /// outcome) and returns them all; throws a ``LocalServerError`` with code `.waitTimedOut`
    /// after `timeout`.
    public func waitForRequests(
        route: Route, count: Int = 1, timeout: Duration = .seconds(5)
    ) async throws -> [RecordedRequest] {
        try await responder.log.wait(
            timeout: timeout,
            timedOut: { records in
                let arrived = records.filter { $0.route == route }
                return .waitTimedOut(
                    waitingFor: "\(count) request(s) on \(route)", timeout: timeout,
                    arrived: "\(arrived.count) arrived: \(Self.summary(of: arrived))"
                )
            },
            extract: { records in
                let matching = records.filter { $0.route == route }
                return matching.count >= count ? matching : nil
            }
        )
    }

    /// Waits until the accepted event batches hold at least `count` hits, and returns them all.
    public func waitForHits(count: Int, timeout: Duration = .seconds(5)) async throws -> [FSJSONValue] {
        try await waitForItems("hit(s)", count: count, timeout: timeout, Self.hits(in:))
    }

    /// Waits until the accepted activate requests hold at least `count` entries, and returns them all.
    public func waitForActivates(count: Int, timeout: Duration = .seconds(5)) async throws -> [FSJSONValue] {
        try await waitForItems("activate(s)", count: count, timeout: timeout, Self.activates(in:))
    }

    private func waitForItems(
        _ name: String, count: Int, timeout: Duration, _ items: @escaping @Sendable ([RecordedRequest]) -> [FSJSONValue]
    ) async throws -> [FSJSONValue] {
        try await responder.log.wait(
            timeout: timeout,
            timedOut: { records in
                .waitTimedOut(
                    waitingFor: "\(count) \(name)", timeout: timeout,
                    arrived: "\(items(records).count) arrived; requests: \(Self.summary(of: records))"
                )
            },
            extract: { records in
                let found = items(records)
                return found.count >= count ? found : nil
            }
        )
    }

    private static func activates(in records: [RecordedRequest]) -> [FSJSONValue] {
        records.flatMap(\.acceptedActivates)
    }

    private static func hits(in records: [RecordedRequest]) -> [FSJSONValue] {
        records.flatMap(\.acceptedHits)
    }

    /// `[campaigns 403, activate dropped]`: what a timed-out wait saw instead.
    private static func summary(of records: [RecordedRequest]) -> String {
        "[" + records.map { "\($0.route) \($0.status.map(String.init) ?? "dropped")" }.joined(separator: ", ") + "]"
    }
}
