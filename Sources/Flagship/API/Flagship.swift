import Dispatch
import FlagshipStore
import Foundation
import Logging

/// The SDK: start it once, then create visitors.
///
/// ```swift
/// Flagship.sharedInstance.start(envId: "env", apiKey: "key", config: FSConfigBuilder().build())
/// let visitor = Flagship.sharedInstance.newVisitor(visitorId: "v1", hasConsented: true).build()
/// try await visitor.fetchFlags()
/// let color = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
/// ```
public final class Flagship: Sendable {
    /// The SDK instance of the process: start it, build visitors from it, close it.
    public static let sharedInstance = Flagship()

    static let fallbackLogger = Logger.flagship()
    /// Where the app's callbacks run, whatever the instance: off the caller's stack, one at a
    /// time in the order the SDK asked for them, never under an SDK lock, never on a thread of
    /// Swift's cooperative pool (a callback may block). One serial queue for the process.
    static let callbacks = DispatchQueue(label: "io.flagship.callbacks")

    /// The started instance and the shared visitor: one lock, one value, as in `FSVisitor`.
    private struct State {
        var runtime: SDKRuntime?
        var shared: FSVisitor?
    }

    // Held only to read or swap the state: never across I/O, a close or a callback.
    private let state = Locked(State())

    /// An instance of its own, beside `sharedInstance`: the tests and the benchmarks run several
    /// instances in one process, as a fleet runs them in several.
    package init() {}

    var currentRuntime: SDKRuntime? {
        state.withLock { $0.runtime }
    }

    /// The last visitor built with `Instance.SHARED_INSTANCE`.
    public var sharedVisitor: FSVisitor? {
        state.withLock { $0.shared }
    }

    func setSharedVisitor(_ visitor: FSVisitor) {
        state.withLock { $0.shared = visitor }
    }

    /// Starts the SDK for an environment. An empty or malformed env id or API key is refused
    /// (logged, status `SDK_NOT_INITIALIZED`). Starting again replaces the previous start, whose
    /// pending hits are sent first.
    public func start(envId: String, apiKey: String, config: FlagshipConfig = FSConfigBuilder().build()) {
        start(envId: envId, apiKey: apiKey, config: config, network: nil)
    }

    /// Starts as `start(envId:apiKey:config:)`, with every request answered by `transport` in
    /// place of the network, each hit sent as soon as it is written (whatever `poolMaxSize`),
    /// and a failed send retried within `retryCap` seconds: FlagshipTesting's SDK, against its
    /// in-process Decision API and events endpoint, delivers without waiting for a batch interval.
    package func start(envId: String, apiKey: String, config: FlagshipConfig, answeringWith transport: any HTTPTransport,
                       retryingWithin retryCap: TimeInterval) {
        var config = config
        let earlier = config.adjustTracking
        config.adjustTracking = { settings in
            earlier?(&settings)
            settings.poolMaxSize = 1
            settings.backoffBase = min(settings.backoffBase, retryCap)
            settings.backoffCap = retryCap
        }
        start(envId: envId, apiKey: apiKey, config: config, network: transport)
    }

    private func start(envId: String, apiKey: String, config: FlagshipConfig, network: (any HTTPTransport)?) {
        let logger = Self.makeLogger(config)
        let previous = state.withLock { state in
            defer { state.runtime = nil }
            return state.runtime
        }
        if let previous {
            Task(executorPreference: ThreadExecutor.background) { await previous.close() }
        }
        if let problem = Self.problem(envId: envId, apiKey: apiKey) {
            logger.error("Flagship not started: \(problem)")
            if previous?.status != nil, previous?.status != .SDK_NOT_INITIALIZED, let callback = config.onSdkStatusChanged {
                Self.callbacks.async { callback(.SDK_NOT_INITIALIZED) }
            }
            return
        }
        let started = SDKRuntime(envId: envId, apiKey: apiKey, config: config, logger: logger, network: network)
        state.withLock { $0.runtime = started }
        logger.info("Flagship \(SDKInfo.version) started for environment \(envId) (\(config.mode.rawValue)); HTTP through \(started.httpClient)")
        started.begin()
    }

    /// `start(envId:apiKey:config:)` on a thread of its own, awaited: opening the store blocks
    /// (migrating it, checking it after a crash, salvaging a damaged file), and a task must not
    /// hold a thread of the cooperative pool meanwhile. What `FlagshipService.run()` calls.
    package func startOffThePool(envId: String, apiKey: String, config: FlagshipConfig) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                self.start(envId: envId, apiKey: apiKey, config: config)
                continuation.resume()
            }
            thread.name = "io.flagship.start"
            thread.start()
        }
    }

    /// Awaits the started instance's background work until `close()` has closed it; returns at
    /// once when the instance is not started.
    ///
    /// That work is the tracking manager's loops (the sender, the batch timer, the backoff wake),
    /// the bucketing poller and the visitor cache's retention: child tasks of one task, which
    /// `start` begins on the SDK's own thread. `start` runs it for you, so an app that only calls
    /// `start` and `close()` never needs this. A service whose life is a task awaits it, as it
    /// awaits `PostgresClient.run()` (`FlagshipService.run()` does).
    ///
    /// Cancelling the caller closes the instance as `close()` does (the last flush bounded by the
    /// close deadline, what is left kept in the hit cache), then returns. A later `start` begins
    /// another instance, which this call does not wait for.
    public func run() async {
        guard let runtime = currentRuntime else { return }
        await withTaskCancellationHandler {
            await runtime.closed()
        } onCancel: {
            Task(executorPreference: ThreadExecutor.background) { await self.close(runtime) }
        }
    }

    /// Closes `runtime` (a close under way is awaited); when it is still the started instance, the
    /// instance then reads `SDK_NOT_INITIALIZED`, as after `close()`.
    private func close(_ runtime: SDKRuntime) async {
        let current = state.withLock { state -> Bool in
            guard state.runtime === runtime else { return false }
            state = State()
            return true
        }
        await runtime.close(stopping: current)
    }

    /// The state of the SDK: `SDK_NOT_INITIALIZED` before a start or after a refused one.
    public func getStatus() -> FSSdkStatus {
        currentRuntime?.status ?? .SDK_NOT_INITIALIZED
    }

    /// A builder for a visitor; `build()` it.
    public func newVisitor(visitorId: String, hasConsented: Bool, instanceType: Instance = .SHARED_INSTANCE) -> FSVisitorBuilder {
        FSVisitorBuilder(flagship: self, visitorId: visitorId, hasConsented: hasConsented, instanceType: instanceType)
    }

    /// Stops the SDK: one last batch is sent within a deadline, and whatever could not be sent
    /// stays cached for the next start. Returns once done. Safe to call twice.
    public func close() async {
        _ = await closeReporting()
    }

    /// Closes like `close() async` and says what the tracking manager did since start: hits
    /// delivered, expired, rejected, and still waiting in the cache (for `flagship replay`).
    package func closeReporting() async -> TrackingStatistics? {
        // The state goes whole, the shared visitor too, whether an instance was started or not.
        let runtime = state.withLock { state in
            defer { state = State() }
            return state.runtime
        }
        guard let runtime else { return nil }
        await runtime.close(stopping: true)
        return await runtime.tracking.statistics()
    }

    /// Whether this instance keeps up with its hits: `ready`, `overloaded` (backpressure),
    /// `deliveryFailing` (the events endpoint cannot be reached) or `stopped`. No I/O: serve it
    /// from a readiness probe.
    public var health: FSHealth {
        guard let runtime = currentRuntime, runtime.status != .SDK_NOT_INITIALIZED else {
            return FSHealth(status: .stopped, backlog: 0, backlogLimit: 0, shed: 0)
        }
        return runtime.tracking.health
    }

    /// What the tracking manager did so far (hits delivered, evicted, lost...), without closing:
    /// for the benchmarks, which check that a measured run lost nothing.
    package func trackingStatistics() async -> TrackingStatistics? {
        await currentRuntime?.tracking.statistics()
    }

    /// Returns once every visitor document and hit accepted so far is in the caches (the local
    /// store's tables, or a custom cache's calls returned): written, not sent.
    ///
    /// `fetchFlags` returns once the flags are in memory and the fire-and-forget `sendHit` at
    /// once; their writes wait for the next group commit. `close()` waits for them too, within its
    /// deadline: call this where a caller needs them on disk sooner (before handing the store to
    /// another process, say).
    public func flushCaches() async {
        await currentRuntime?.flushCaches()
    }

    /// Everything the SDK's store holds for a visitor, for an access request: its cached
    /// document (context, campaigns, assignment history), its recorded decisions with the
    /// bucketing file version of each, and its hits that wait to be sent. What was accepted
    /// before the call is written first, so it is in the answer. On a fleet, the shared
    /// PostgreSQL store's rows are read too. A visitor cache of the app's own
    /// (``FSCacheManager``) is the app's to read.
    ///
    /// ```swift
    /// let data = try await Flagship.sharedInstance.visitorData(visitorId: "alice")
    /// print(String(decoding: data.jsonData(), as: UTF8.self))
    /// ```
    ///
    /// Throws ``FlagshipError/sdkNotInitialized`` before `start`, ``FSCacheError`` when the store
    /// cannot be read, and `CancellationError` when the calling task is cancelled: the store's
    /// read then stops where it is (its statement interrupted), holding nothing.
    public func visitorData(visitorId: String) async throws -> FSVisitorData {
        guard let runtime = currentRuntime else { throw FlagshipError.sdkNotInitialized }
        return try await runtime.visitorData(visitorId)
    }

    /// Downloads the bucketing file now (bucketing mode), as the next poll would: for the
    /// benchmarks, which change the served file mid-run.
    package func pollBucketingFileNow() async {
        await currentRuntime?.bucketing?.poll()
    }

    /// Returns once the hits accepted so far are written and no send is under way or due (all
    /// delivered, or waiting for the backoff): the start's replay included.
    package func waitUntilTrackingIsIdle() async {
        await currentRuntime?.tracking.waitUntilIdle()
    }

    /// As `close() async`, blocking the calling thread until done. The work runs on a thread of
    /// its own, so this is safe from a task too, even with every thread of the cooperative pool
    /// busy; from async code `await close()` is still better, as it holds no thread.
    public func close() {
        // Not `noasync`: top-level code in a main.swift is type-checked as synchronous, so there
        // `await close()` picks this overload, and `noasync` made it an error. In an async
        // function the `async` overload wins anyway, and a `close()` without `await` is refused.
        ThreadExecutor.runBlocking(name: "io.flagship.close") { await self.close() }
    }

    // MARK: Start-up checks and logging

    /// Why `start` would refuse this env id and API key, if it would: for a caller that must
    /// fail loudly rather than log (the lifecycle service).
    package static func problem(envId: String, apiKey: String) -> String? {
        if envId.isEmpty { return "the env id is empty" }
        if apiKey.isEmpty { return "the API key is empty" }
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_"))
        if envId.unicodeScalars.contains(where: { !$0.isASCII || !allowed.contains($0) }) {
            return "the env id may hold only letters, digits, '-' and '_'"
        }
        // The key goes into a header: no whitespace or control character may come with it.
        if apiKey.unicodeScalars.contains(where: { !$0.isASCII || $0.value <= 0x20 || $0.value == 0x7F }) {
            return "the API key holds spaces or characters a header cannot carry"
        }
        return nil
    }

    /// swift-log under the label `io.flagship`, filtered by the configured `FSLevel`. The
    /// reference ranks INFO above DEBUG, so DEBUG shows swift-log's info lines and INFO adds
    /// its debug lines.
    static func makeLogger(_ config: FlagshipConfig) -> Logger {
        var logger: Logger
        if let given = config.logger, !(config.logLevelWasSet && config.logLevel == .NONE) {
            // The app's logger keeps its own level unless `withLogLevel` said otherwise.
            guard config.logLevelWasSet else { return Logger.flagship(wrapping: given) }
            logger = Logger.flagship(wrapping: given)
        } else if config.logLevel == .NONE {
            logger = Logger(label: "io.flagship") { _ in SwiftLogNoOpLogHandler() }
        } else {
            logger = Logger.flagship(factory: config.logHandlerFactory)
        }
        switch config.logLevel {
        case .NONE, .EXCEPTIONS: logger.logLevel = .critical
        case .ERROR: logger.logLevel = .error
        case .WARNING: logger.logLevel = .warning
        case .DEBUG: logger.logLevel = .info
        case .INFO: logger.logLevel = .debug
        case .ALL: logger.logLevel = .trace
        }
        return logger
    }
}
