import Foundation
import Logging

/// Builds a `FlagshipConfig`, one setting per call.
///
/// ```swift
/// let config = FSConfigBuilder().DecisionApi().withTimeout(1500).withLogLevel(.INFO).build()
/// ```
///
/// Not `Sendable`: a builder is filled and built where it was made; the `FlagshipConfig` it
/// builds is a `Sendable` value.
public final class FSConfigBuilder {
    private var config = FlagshipConfig()

    /// A builder holding every default: Decision API mode, a 2,000 ms timeout, `WARNING` logs,
    /// the SQLite caches.
    public init() {}

    /// Flags decided by the Decision API at each `fetchFlags` (the default).
    @discardableResult
    public func DecisionApi() -> FSConfigBuilder {
        config.mode = .DECISION_API
        return self
    }

    /// Flags decided on this machine from the bucketing file.
    @discardableResult
    public func Bucketing() -> FSConfigBuilder {
        config.mode = .BUCKETING
        return self
    }

    /// - Parameter timeout: **milliseconds** the Decision API may take (default 2000).
    @discardableResult
    public func withTimeout(_ timeout: TimeInterval) -> FSConfigBuilder {
        if timeout.isFinite && timeout > 0 { config.timeout = timeout }
        return self
    }

    /// How much the SDK logs (default `WARNING`); with `withLogger`, it overrides the logger's
    /// level.
    @discardableResult
    public func withLogLevel(_ logLevel: FSLevel) -> FSConfigBuilder {
        config.logLevel = logLevel
        config.logLevelWasSet = true
        return self
    }

    /// Tells `instrumentation` of the SDK's work as it goes (hits by stage, fetches, batches,
    /// commits, hits waiting): for metrics. `FlagshipMetrics()` (the `FlagshipMetrics` product)
    /// reports it through swift-metrics.
    @discardableResult
    public func withInstrumentation(_ instrumentation: any FlagshipInstrumentation) -> FSConfigBuilder {
        config.instrumentation = instrumentation
        return self
    }

    /// Traces the SDK's outbound work with `tracer`: a span per `fetchFlags` (`flagship.fetchFlags`)
    /// and per batch of hits sent (`flagship.batch`), and the trace context carried on every
    /// request. `FlagshipTracing()` (the `FlagshipTracing` product) uses swift-distributed-tracing.
    @discardableResult
    public func withTracer(_ tracer: any FlagshipTracer) -> FSConfigBuilder {
        config.tracer = tracer
        return self
    }

    /// Sends every request (decisions, hits, the bucketing file) through `transport`: the HTTP
    /// client the app already has, in place of the SDK's URLSession. The SDK keeps its deadline,
    /// its redirect rule (within the origin only) and its bound on answers around it
    /// (``FSHTTPTransport``). `AsyncHTTPClientTransport()` (the `FlagshipAsyncHTTPClient`
    /// product) is one. The SDK calls the transport's `shutdown()` when it closes.
    @discardableResult
    public func withHTTPTransport(_ transport: any FSHTTPTransport) -> FSConfigBuilder {
        config.httpTransport = transport
        return self
    }

    /// Runs `hooks` around every flag evaluation of every visitor, before a visitor's own
    /// (`FSVisitorBuilder.withHooks`); each call adds to the hooks given before. A visitor's hooks
    /// are fixed when it is built. Without hooks, a read costs what it costs without this feature.
    /// `FlagshipEvaluationMetrics()` (the `FlagshipMetrics` product) and
    /// `FlagshipEvaluationTracing()` (the `FlagshipTracing` product) are hooks.
    @discardableResult
    public func withHooks(_ hooks: [any FlagshipHook]) -> FSConfigBuilder {
        config.hooks += hooks
        return self
    }

    /// Logs through the app's `Logger` (its handler, its metadata, such as a request id, and its
    /// level) instead of one the SDK makes under the label `io.flagship`. The level is the
    /// logger's own unless `withLogLevel` is called too, which then sets it (`.NONE` silences the
    /// SDK whatever the logger).
    ///
    /// ```swift
    /// var logger = Logger(label: "shop.flags")
    /// logger[metadataKey: "service"] = "checkout"
    /// let config = FSConfigBuilder().Bucketing().withLogger(logger).build()
    /// ```
    @discardableResult
    public func withLogger(_ logger: Logger) -> FSConfigBuilder {
        config.logger = logger
        return self
    }

    /// Told of each change of the SDK's status, off the caller's thread; a status set again
    /// unchanged is not told. The SDK's callbacks run one at a time, in order, on a dispatch queue
    /// of the SDK's (`io.flagship.callbacks`), never on Swift's cooperative pool: one may block,
    /// but it delays the callbacks after it.
    @discardableResult
    public func withOnSdkStatusChanged(_ onSdkStatusChanged: @escaping OnSdkStatusChanged) -> FSConfigBuilder {
        config.onSdkStatusChanged = onSdkStatusChanged
        return self
    }

    /// - Parameter pollingTime: seconds between two bucketing file downloads (default 60).
    @discardableResult
    public func withBucketingPollingIntervals(_ pollingTime: TimeInterval) -> FSConfigBuilder {
        if pollingTime.isFinite && pollingTime > 0 { config.pollingInterval = pollingTime }
        return self
    }

    /// How hits are batched, cached and kept (default `FSTrackingManagerConfig()`).
    @discardableResult
    public func withTrackingManagerConfig(_ trackingMgrConfig: FSTrackingManagerConfig) -> FSConfigBuilder {
        config.trackingConfig = trackingMgrConfig
        return self
    }

    /// Custom visitor or hit caches, and the lookup timeouts (default: the SQLite caches, 200 ms).
    @discardableResult
    public func withCacheManager(_ customCacheManager: FSCacheManager) -> FSConfigBuilder {
        config.cacheManager = customCacheManager
        return self
    }

    /// The reference's opt-out of usage tracking: recorded in the configuration, but this SDK
    /// sends no usage data whatever the value.
    @discardableResult
    public func withDisableDeveloperUsageTracking(_ disableDeveloperUsageTracking: Bool) -> FSConfigBuilder {
        config.disableDeveloperUsageTracking = disableDeveloperUsageTracking
        return self
    }

    /// Called with the visitor and the flag each time an exposure (an activate) has been
    /// delivered to Flagship, off the caller's thread, in turn with the SDK's other callbacks
    /// (see `withOnSdkStatusChanged(_:)`).
    @discardableResult
    public func withOnVisitorExposed(_ onVisitorExposed: @escaping OnVisitorExposed) -> FSConfigBuilder {
        config.onVisitorExposed = onVisitorExposed
        return self
    }

    /// The Decision API base, `/v2` included (default `https://decision.flagship.io/v2`):
    /// for example the local server's `http://127.0.0.1:8080/v2`.
    @discardableResult
    public func withDecisionBaseURL(_ url: URL) -> FSConfigBuilder {
        config.decisionBaseURL = url
        return self
    }

    /// The events (hits) base (default `https://events.flagship.io`).
    @discardableResult
    public func withEventsBaseURL(_ url: URL) -> FSConfigBuilder {
        config.eventsBaseURL = url
        return self
    }

    /// The bucketing file CDN base (default `https://cdn.flagship.io`).
    @discardableResult
    public func withBucketingBaseURL(_ url: URL) -> FSConfigBuilder {
        config.bucketingBaseURL = url
        return self
    }

    /// Bucketing mode: the largest bucketing file the SDK takes, in bytes (default 10 MiB,
    /// `FlagshipConfig.defaultBucketingFileMaximumBytes`). A file over it is refused whole,
    /// wherever it comes from (a download, the store, a bootstrap), logged with its size and this
    /// limit, and the file held before keeps deciding; the download's body is cut off as it
    /// arrives, so memory stays within it. Raise it for an environment whose campaigns outgrow
    /// 10 MiB; a value below 1 KiB, or one that is not a number of bytes a process can hold, is
    /// ignored (logged).
    @discardableResult
    public func withBucketingFileMaximumBytes(_ bytes: Int) -> FSConfigBuilder {
        if bytes >= 1_024, bytes <= Int(Int32.max) {
            config.bucketingFileMaximumBytes = bytes
        } else {
            Flagship.fallbackLogger.error("withBucketingFileMaximumBytes(\(bytes)) ignored: give a size from 1,024 bytes to 2 GiB")
        }
        return self
    }

    /// Bucketing mode: a bucketing file to decide from at start when the store holds none, until
    /// the first download (or another instance's file, with a shared store) replaces it; flags
    /// decided on it give the reason `STATIC`. It is never stored. An unusable file is logged
    /// and ignored.
    @discardableResult
    public func withBootstrap(bucketingFile data: Data) -> FSConfigBuilder {
        config.bootstrap = .data(data)
        return self
    }

    /// As `withBootstrap(bucketingFile:)`, read from `url` (a file) at start.
    @discardableResult
    public func withBootstrap(bucketingFileAt url: URL) -> FSConfigBuilder {
        config.bootstrap = .file(url)
        return self
    }

    /// Decision provenance: with the default caches (or a fleet's store), each assignment a
    /// visitor gets is recorded with when, by which bucketing file version (the sha256 of its
    /// bytes) and on which context it was decided, and the last `keepingFileVersions` files used
    /// are kept by version, so `flagship why --replay` can decide each again. On by default, 20
    /// versions; `false` records nothing (the tables stay empty).
    @discardableResult
    public func withDecisionProvenance(_ enabled: Bool = true, keepingFileVersions: Int = 20) -> FSConfigBuilder {
        config.recordsDecisions = enabled
        config.keptBucketingFileVersions = max(1, keepingFileVersions)
        return self
    }

    /// Bounded storage: visitors of the default visitor cache not seen (looked up or fetched) for
    /// `interval` seconds are deleted with their recorded decisions by a background task, in
    /// small batches; with `maxVisitors`, the least recently seen beyond it go too. `nil` or 0
    /// keeps visitors for ever. Default: 30 days, no budget.
    ///
    /// A visitor deleted and coming back later is decided again, without its assignment history:
    /// in bucketing mode the same hash gives the same variation unless the campaign's allocation
    /// changed meanwhile; its earlier decisions are no longer explained by `flagship why`.
    ///
    /// ```swift
    /// FSConfigBuilder().Bucketing().withVisitorRetention(7 * 86_400, maxVisitors: 1_000_000).build()
    /// ```
    @discardableResult
    public func withVisitorRetention(_ interval: TimeInterval?, maxVisitors: Int? = nil) -> FSConfigBuilder {
        config.visitorRetention = interval.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
        config.maxCachedVisitors = maxVisitors.flatMap { $0 > 0 ? $0 : nil }
        return self
    }

    /// What the platform is told again about a visitor it was already told about: by default a
    /// consent hit only when the consent changes, a SEGMENT hit only when the context changes, an
    /// activate once per visitor and variation every 30 minutes (`FSDeduplication.standard`);
    /// `.reference` restores the reference's behaviour exactly.
    ///
    /// ```swift
    /// FSConfigBuilder().Bucketing().withDeduplication(.exposureWindow(24 * 3_600)).build()
    /// ```
    @discardableResult
    public func withDeduplication(_ deduplication: FSDeduplication) -> FSConfigBuilder {
        config.deduplication = deduplication
        return self
    }

    /// Hot visitors: the documents of the visitors seen last are kept parsed in memory, so that a
    /// returning visitor's build reads neither the store nor its row's JSON. At most `byteBudget`
    /// bytes of documents (the least recently used go, by halves); each is served for `lifetime`
    /// seconds after it was read from the store or written to it, then read again, so that what
    /// another instance of a fleet (or another process on the same file) changed is seen within
    /// `lifetime`. A visitor whose consent is withdrawn in this process is never served from
    /// memory again. Default: 16 MiB, 2 s; a budget or lifetime of 0 keeps nothing. An app's
    /// own visitor cache (`withCacheManager`) is always asked.
    ///
    /// ```swift
    /// FSConfigBuilder().Bucketing().withHotVisitors(byteBudget: 64 << 20, lifetime: 5)
    /// ```
    @discardableResult
    public func withHotVisitors(byteBudget: Int, lifetime: TimeInterval) -> FSConfigBuilder {
        config.hotVisitors = HotVisitors.Settings(byteBudget: max(0, byteBudget), lifetime: lifetime.isFinite ? max(0, lifetime) : 0)
        return self
    }

    /// When the retention task prunes and writes the lookups it noted (tests).
    @discardableResult
    func withRetentionSchedule(pruneEvery pruneInterval: TimeInterval, recordLookupsEvery sightingsInterval: TimeInterval) -> FSConfigBuilder {
        config.retentionSchedule = (pruneInterval, sightingsInterval)
        return self
    }

    /// Where the default caches keep `flagship-<envId>.sqlite`.
    @discardableResult
    public func withCacheDirectory(_ directory: URL) -> FSConfigBuilder {
        config.cacheDirectory = directory
        return self
    }

    /// The default caches' database is this file, whatever the environment.
    @discardableResult
    public func withCacheFile(_ file: URL) -> FSConfigBuilder {
        config.cacheFile = file
        return self
    }

    /// Log lines go to this handler instead of swift-log's bootstrapped one.
    @discardableResult
    func withLogHandler(_ factory: @escaping @Sendable (String) -> any LogHandler) -> FSConfigBuilder {
        config.logHandlerFactory = factory
        return self
    }

    /// The clock behind hit times and ages (waits stay real).
    @discardableResult
    func withClock(_ now: @escaping @Sendable () -> Date) -> FSConfigBuilder {
        withClock(SystemClock(now: now))
    }

    /// The clock behind hit times, ages, batch intervals and backoff.
    @discardableResult
    func withClock(_ clock: any SDKClock) -> FSConfigBuilder {
        config.now = { clock.now() }
        config.clock = clock
        return self
    }

    /// How long a lookup in the SDK's own store is waited for before the visitor is left
    /// undecided (tests).
    @discardableResult
    func withOwnStoreReadBound(_ bound: TimeInterval) -> FSConfigBuilder {
        config.ownStoreReadBound = bound
        return self
    }

    /// How the tracking manager is tuned beyond `FSTrackingManagerConfig` (tests).
    @discardableResult
    func withTrackingSettings(_ adjust: @escaping @Sendable (inout TrackingManager.Settings) -> Void) -> FSConfigBuilder {
        // Adjustments add up: a later call changes what an earlier one set, and only that.
        let earlier = config.adjustTracking
        config.adjustTracking = { settings in
            earlier?(&settings)
            adjust(&settings)
        }
        return self
    }

    /// Hits, visitors and the bucketing file kept in `provider`'s store, shared by a fleet
    /// (FlagshipPostgres), with the default caches as its spill.
    @discardableResult
    package func withSharedStore(_ provider: any SharedStoreProvider) -> FSConfigBuilder {
        config.sharedStore = provider
        return self
    }

    /// Nothing leaves the process (`flagship fetch --offline`): no decision request, no
    /// bucketing download, no hit sent; hits wait in the cache for a later start.
    @discardableResult
    package func withNetworkDisabled() -> FSConfigBuilder {
        config.networkDisabled = true
        return self
    }

    /// The configuration as set so far; the builder can go on being used.
    public func build() -> FlagshipConfig {
        config
    }
}
