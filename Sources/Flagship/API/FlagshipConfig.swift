import Foundation
import Logging

/// Called when the SDK's status changes, off the caller's thread.
public typealias OnSdkStatusChanged = @Sendable (_ newStatus: FSSdkStatus) -> Void
/// Called once an exposure has been delivered, off the caller's thread.
public typealias OnVisitorExposed = @Sendable (_ visitorExposed: FSVisitorExposed, _ fromFlag: FSExposedFlag) -> Void

/// The SDK's configuration: made by `FSConfigBuilder`, given to `Flagship.start`.
public struct FlagshipConfig: Sendable {
    /// Where variations are decided. Default `DECISION_API`.
    public internal(set) var mode: FSMode = .DECISION_API
    /// Milliseconds the Decision API may take before a fetch gives up. Default 2000.
    public internal(set) var timeout: TimeInterval = 2000
    /// How much the SDK logs. Default `WARNING`.
    public internal(set) var logLevel: FSLevel = .WARNING
    /// Seconds between two bucketing file downloads (bucketing mode). Default 60.
    public internal(set) var pollingInterval: TimeInterval = 60
    /// How hits are batched, cached and kept. Default `FSTrackingManagerConfig()`.
    public internal(set) var trackingConfig = FSTrackingManagerConfig()
    /// The visitor and hit caches and their lookup timeouts. Default: the SQLite caches.
    public internal(set) var cacheManager = FSCacheManager()
    /// The reference's opt-out of usage tracking, kept for its API: this SDK sends no usage data
    /// whatever its value. Default `false`.
    public internal(set) var disableDeveloperUsageTracking = false
    /// Where decisions are asked for, `/v2` included. Default `https://decision.flagship.io/v2`.
    public internal(set) var decisionBaseURL = URL(string: "https://decision.flagship.io/v2")!
    /// Where hits and activates are sent. Default `https://events.flagship.io`.
    public internal(set) var eventsBaseURL = URL(string: "https://events.flagship.io")!
    /// Where the bucketing file is downloaded from (bucketing mode). Default
    /// `https://cdn.flagship.io`.
    public internal(set) var bucketingBaseURL = URL(string: "https://cdn.flagship.io")!
    /// Bucketing mode: the largest bucketing file read, downloaded, stored or given as a bootstrap,
    /// in bytes. Default 10 MiB (`FSConfigBuilder.withBucketingFileMaximumBytes`).
    public internal(set) var bucketingFileMaximumBytes = FlagshipConfig.defaultBucketingFileMaximumBytes
    /// 10 MiB: some 14,000 campaigns of one variation group, two variations and three rules.
    public static let defaultBucketingFileMaximumBytes = 10 * 1024 * 1024
    /// Where the default caches keep their database; `nil`: `$FLAGSHIP_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/flagship`, else `~/.cache/flagship`.
    public internal(set) var cacheDirectory: URL?
    /// The default caches' database file itself, in place of `<cacheDirectory>/flagship-<envId>.sqlite`.
    public internal(set) var cacheFile: URL?
    /// A bucketing file to decide from until the store or the network gives one (`withBootstrap`).
    var bootstrap: Bootstrap?
    /// Whether the default store records each assignment with the bucketing file version, time
    /// and context that decided it (`withDecisionProvenance`). Default `true`.
    public internal(set) var recordsDecisions = true
    /// How many bucketing file versions the store keeps for explaining and replaying decisions. Default 20.
    public internal(set) var keptBucketingFileVersions = 20
    /// Seconds a visitor of the default visitor cache is kept after it was last seen (looked up
    /// or fetched), then deleted with its decisions; `nil`: kept for ever. Default 30 days
    /// (`withVisitorRetention`).
    public internal(set) var visitorRetention: TimeInterval? = FlagshipConfig.defaultVisitorRetention
    /// The most visitors the default visitor cache keeps, the least recently seen evicted first;
    /// `nil` (the default): no limit but the retention.
    public internal(set) var maxCachedVisitors: Int?
    /// What is sent again about a visitor the platform was already told about. Default
    /// `.standard` (`withDeduplication`).
    public internal(set) var deduplication = FSDeduplication.standard
    /// The documents of recently seen visitors kept in memory (`withHotVisitors`).
    var hotVisitors = HotVisitors.Settings()
    /// 30 days: a visitor who comes back within a month keeps its assignments and their history.
    public static let defaultVisitorRetention: TimeInterval = 30 * 86_400
    /// When the retention task prunes and writes the lookups it noted (tests shorten them).
    var retentionSchedule = (pruneInterval: TimeInterval(3_600), sightingsInterval: TimeInterval(60))

    /// Where a bootstrap bucketing file comes from.
    enum Bootstrap: Sendable {
        case data(Data)
        case file(URL)
    }
    var onSdkStatusChanged: OnSdkStatusChanged?
    var onVisitorExposed: OnVisitorExposed?
    /// Where log lines go; `nil`: swift-log's bootstrapped handler, under the label `io.flagship`.
    var logHandlerFactory: (@Sendable (String) -> any LogHandler)?
    /// The app's logger (`withLogger`): its handler, metadata and level, in place of the SDK's own.
    var logger: Logger?
    /// Whether `withLogLevel` was called: only then does it override the level of the app's logger.
    var logLevelWasSet = false
    /// Told of the SDK's work as it goes (`withInstrumentation`).
    var instrumentation: (any FlagshipInstrumentation)?
    /// Spans around fetches and batches, and the trace context on every request (`withTracer`).
    var tracer: (any FlagshipTracer)?
    /// Run around every flag evaluation of every visitor (`withHooks`).
    var hooks: [any FlagshipHook] = []
    /// The clock behind hit times and ages; tests move it by hand.
    var now: @Sendable () -> Date = Date.init
    /// The same clock, with waiting: batch intervals and backoff.
    var clock: any SDKClock = SystemClock()
    var adjustTracking: (@Sendable (inout TrackingManager.Settings) -> Void)?
    /// Nothing leaves the process: no transport is made, hits wait in the cache.
    var networkDisabled = false
    /// The app's HTTP client (`withHTTPTransport`); `nil`: URLSession.
    var httpTransport: (any FSHTTPTransport)?
    /// How long a visitor lookup in the SDK's own store is waited for (`CacheService.ownStoreReadBound`; tests shorten it).
    var ownStoreReadBound: TimeInterval = CacheService.ownStoreReadBound
    /// Where hits, visitors and the bucketing file are kept in place of the default caches, with
    /// them as the spill (`withPostgresStore`, FlagshipPostgres).
    package var sharedStore: (any SharedStoreProvider)?

    init() {}
}
