import Flagship
import FlagshipStore
import Foundation

/// The real SDK, started against a test's flag values, with no server and no socket.
///
/// Everything but the network is the SDK an app ships: the decision path, the tracking manager,
/// the visitor cache and the hit cache in a real SQLite store (in a temporary directory of the
/// environment's own). The network is in-process: the Decision API answers from
/// ``FlagshipTestData`` (read at each fetch, so a change is seen by the next `fetchFlags()`), and
/// every hit and activate the SDK delivers is recorded, in order, for assertions.
///
/// ```swift
/// let flags = FlagshipTestData()
/// flags.setValue("green", for: "btnColor", visitorId: "alice")
/// let environment = try FlagshipTestEnvironment(flags)
/// let visitor = await environment.flagship.newVisitor(visitorId: "alice", hasConsented: true).buildAsync()
/// try await visitor.fetchFlags()
/// _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")     // "green", exposed
/// try await environment.waitUntilDelivered()
/// // environment.activates: one, flagKey "btnColor", value "green"
/// await environment.close()
/// ```
///
/// Each environment starts its own `Flagship` instance (`flagship`), so tests run in parallel
/// without meeting; for code that uses `Flagship.sharedInstance`, start it with
/// `usingSharedInstance: true` (and keep such tests from running in parallel). The SDK runs in
/// Decision API mode. Each hit is sent as soon as it is written, and a failed send is retried
/// within 0.1 s, so that `waitUntilDelivered()` waits for no batch interval or long backoff.
///
/// `close()` (or `run`) closes the SDK and removes the directory; safe to call twice.
public final class FlagshipTestEnvironment: Sendable {
    /// The API key the SDK is started with (the in-process endpoints do not check it).
    public static let apiKey = "flagship_testing_key"
    /// Longest wait between a failed send and its retry.
    static let retryCap: TimeInterval = 0.1

    /// The started SDK: a `Flagship` of the environment's own, or `Flagship.sharedInstance`.
    public let flagship: Flagship
    /// The flag values the in-process Decision API answers with; change them at any time.
    public let testData: FlagshipTestData
    /// The env id the SDK was started with.
    public let envId: String
    /// The directory of the SDK's SQLite store (`flagship-<envId>.sqlite`), removed by `close()`.
    public let storeDirectory: URL

    private let config: FlagshipConfig
    private let backend: InProcessBackend
    private let closed = Locked(false)

    /// Starts the SDK against `testData`.
    ///
    /// - Parameters:
    ///   - testData: the flag values and the campaigns that give them, answered to every fetch.
    ///   - envId: the env id the SDK is started with (in every hit's `envId`).
    ///   - usingSharedInstance: starts `Flagship.sharedInstance` rather than an instance of its own.
    ///   - configure: sets what the app sets (callbacks, log level, timeout, tracking config,
    ///     caches...) on the builder. The environment then sets the mode (Decision API), the base
    ///     URLs and the store's location, over what `configure` set.
    public init(_ testData: FlagshipTestData, envId: String = "flagship_testing", usingSharedInstance: Bool = false,
                configure: (FSConfigBuilder) -> Void = { _ in }) throws {
        if let problem = Flagship.problem(envId: envId, apiKey: Self.apiKey) {
            throw FlagshipTestingError.invalidEnvId(problem)
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("flagship-testing-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let builder = FSConfigBuilder()
        configure(builder)
        builder.DecisionApi()
            .withDecisionBaseURL(InProcessBackend.decisionBaseURL)
            .withEventsBaseURL(InProcessBackend.eventsBaseURL)
            .withCacheDirectory(directory)
            .withCacheFile(directory.appendingPathComponent("flagship-\(envId).sqlite"))
        self.testData = testData
        self.envId = envId
        storeDirectory = directory
        config = builder.build()
        backend = InProcessBackend(envId: envId, testData: testData)
        flagship = usingSharedInstance ? Flagship.sharedInstance : Flagship()
        start()
    }

    /// Runs `body` with a new environment and closes it after, whether `body` returns or throws.
    public static func run<Result>(
        _ testData: FlagshipTestData, envId: String = "flagship_testing", usingSharedInstance: Bool = false,
        configure: (FSConfigBuilder) -> Void = { _ in }, isolation: isolated (any Actor)? = #isolation,
        _ body: (FlagshipTestEnvironment) async throws -> Result
    ) async throws -> Result {
        let environment = try FlagshipTestEnvironment(testData, envId: envId, usingSharedInstance: usingSharedInstance,
                                                      configure: configure)
        do {
            let result = try await body(environment)
            await environment.close()
            return result
        } catch {
            await environment.close()
            throw error
        }
    }

    private func start() {
        flagship.start(envId: envId, apiKey: Self.apiKey, config: config, answeringWith: backend, retryingWithin: Self.retryCap)
    }

    // MARK: What the SDK sent

    /// The hits delivered to the events endpoint, in the order received (consent hits included:
    /// `isConsent`).
    public var hits: [TestHit] { backend.hits }

    /// The activates delivered, in the order received.
    public var activates: [TestActivate] { backend.activates }

    /// The fetches answered, in order, with the context each sent and the flags it got.
    public var decisionRequests: [TestDecisionRequest] { backend.decisions }

    /// Requests failed by a simulated outage (`network`), retries included.
    public var failedRequestCount: Int { backend.failedRequests }

    /// Forgets the hits, activates, fetches and failures recorded so far.
    public func clearRecords() {
        backend.clearRecords()
    }

    // MARK: The network

    /// What the in-process network does with requests; `.available` at start. Set it to
    /// simulate an outage, then back to `.available`: what waited is sent at the next retry.
    public var network: TestNetworkCondition {
        get { backend.network }
        set { backend.network = newValue }
    }

    // MARK: Waiting

    /// Returns once every hit and activate accepted so far is written to the store and no send is
    /// under way: delivered, or waiting for a retry while the network is down.
    public func waitUntilIdle() async {
        await flagship.waitUntilTrackingIsIdle()
    }

    /// Returns once no hit or activate waits to be sent: each accepted so far was delivered (or,
    /// under `.failing(status:)` with a 4xx, refused and dropped). Throws ``FlagshipTestingError``
    /// with code `.undelivered` at once when hits wait and the network is not available, and
    /// `.timedOut` when they still wait at `timeout`.
    public func waitUntilDelivered(timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            let handled = backend.requestCount
            await flagship.waitUntilTrackingIsIdle()
            guard let waiting = await flagship.trackingStatistics()?.waiting, waiting > 0 else { return }
            let network = backend.network
            guard network == .available else { throw FlagshipTestingError.undelivered(waiting: waiting, network: network) }
            // Waiting for a retry (the backoff's wake): the next request the SDK makes.
            guard await backend.waitForRequest(after: handled, until: deadline) else {
                throw FlagshipTestingError.timedOut(waiting: waiting)
            }
        }
    }

    // MARK: Lifecycle

    /// Closes the SDK and starts it again on the same store, as an app's restart: what it had
    /// not sent is replayed, known visitors are read back from the visitor cache.
    public func restart() async throws {
        guard !closed.withLock({ $0 }) else { throw FlagshipTestingError.closed }
        await flagship.close()
        start()
    }

    /// Closes the SDK (sending what it can within its deadline) and removes the store's
    /// directory. Safe to call twice.
    public func close() async {
        guard closed.setFirst() else { return }
        await flagship.close()
        try? FileManager.default.removeItem(at: storeDirectory)
    }
}
