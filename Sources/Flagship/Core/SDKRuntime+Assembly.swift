import FlagshipStore
import Foundation
import Logging

/// How a start assembles its parts from the configuration: the hit queue, the visitor retention,
/// the bootstrap file, the first-start record. Called once each, from `SDKRuntime.init`.
extension SDKRuntime {
    /// The retention of the visitors the SDK keeps: the default visitor cache's, in a store it
    /// can write, or a fleet's store that prunes its own; `nil` for an app's visitor cache, and
    /// without a retention or a budget (then no task runs, and no lookup is noted).
    static func retention(envId: String, config: FlagshipConfig, store: FlagshipDatabase?, logger: Logger) -> VisitorRetention? {
        guard config.visitorRetention != nil || config.maxCachedVisitors != nil else {
            store?.sightings.isRecording = false
            return nil
        }
        guard config.cacheManager.visitorCache == nil else { return nil }
        let visitors: VisitorRetention.Visitors
        if let shared = config.sharedStore {
            // The local store is only the fleet's spill then: what it takes moves to the shared one.
            guard let pruning = shared as? any SharedVisitorRetention else { return nil }
            visitors = .shared(pruning, envId: envId)
        } else {
            guard let store, store.opening.readOnly == nil else { return nil }
            visitors = .local(store)
        }
        // A short retention is pruned as often as a thirtieth of it (every 10 s at least): hourly,
        // a retention of minutes would let the file grow by an hour of visitors between prunes,
        // and each prune would be one long burst of deletions (the soak at 3,400 visitors/s,
        // visitors kept 5 minutes: 150,000 visitors a minute, a dip in the served rate each time).
        let pruneInterval = config.visitorRetention.map { min(config.retentionSchedule.pruneInterval, max(10, $0 / 30)) }
            ?? config.retentionSchedule.pruneInterval
        let policy = VisitorRetention.Policy(retention: config.visitorRetention, maxVisitors: config.maxCachedVisitors,
                                             pruneInterval: pruneInterval,
                                             sightingsInterval: config.retentionSchedule.sightingsInterval)
        return VisitorRetention(visitors, policy: policy, clock: config.clock, logger: logger)
    }

    /// The bootstrap bucketing file's bytes; a file that cannot be read is logged and ignored.
    static func bootstrap(_ bootstrap: FlagshipConfig.Bootstrap?, maximumBytes: Int, logger: Logger) -> Data? {
        switch bootstrap {
        case .data(let data)?:
            return data
        case .file(let url)?:
            do {
                return try BucketingFile.bytes(at: url, maximumBytes: maximumBytes)
            } catch {
                logger.error("The bootstrap bucketing file \(url.path) cannot be read (\(error.reason)): it is ignored")
                return nil
            }
        case nil:
            return nil
        }
    }

    /// Where hits wait: a shared store's queue (FlagshipPostgres's tables), with the queue below
    /// and this instance's visitors table as its spill; else the custom hit cache when one is
    /// configured, else the `hits` table of the store (read in pages), else memory alone.
    static func hitQueue(envId: String, config: FlagshipConfig, store: FlagshipDatabase?, claimDuration: TimeInterval,
                                 logger: Logger) -> any HitQueue {
        let capacity = config.trackingConfig.maxCachedHits
        let timeout = config.cacheManager.hitCacheLookupTimeout
        if let provider = config.sharedStore {
            var local = config
            local.sharedStore = nil
            let spill = hitQueue(envId: envId, config: local, store: store, claimDuration: claimDuration, logger: logger)
            let now = config.now
            // The spill keeps visitors only where the default visitor cache would.
            let visitors = config.cacheManager.visitorCache == nil && store?.opening.readOnly == nil ? store : nil
            return provider.queue(envId: envId, leaseDuration: claimDuration, local: LocalHitsAndVisitors(hits: spill, store: visitors),
                                  now: { now().unixMilliseconds }, logger: logger)
        }
        if let given = config.cacheManager.hitCache?.delegate(as: FSDefaultCacheHit.self) {
            // The default cache handed over explicitly: its table, typed and paged, as usual.
            return SQLiteHitQueue(store: given.database, capacity: min(capacity, given.maxHits),
                                  leaseDuration: claimDuration, logger: logger, now: { [now = config.now] in now().unixMilliseconds })
        }
        if let custom = config.cacheManager.hitCache {
            return DelegateHitQueue(delegate: custom, capacity: capacity, lookupTimeout: timeout, logger: logger)
        }
        if let store {
            return SQLiteHitQueue(store: store, capacity: capacity, leaseDuration: claimDuration, logger: logger,
                                  now: { [now = config.now] in now().unixMilliseconds })
        }
        return DelegateHitQueue(delegate: ConfinedDelegate(NoHitCache(), label: "io.flagship.cache.hits"), capacity: capacity, lookupTimeout: timeout, logger: logger)
    }

    static func recordFirstInit(store: FlagshipDatabase?, now: @Sendable () -> Date, logger: Logger) -> Bool {
        guard let store else { return true }
        do {
            if try store.read({ try $0.state.value(forKey: firstInitKey) }) != nil { return false }
            try store.write { try $0.state.setValue(String(now().unixMilliseconds), forKey: firstInitKey, now: now().unixMilliseconds) }
            return true
        } catch {
            logger.error("SDK state could not be read: \(error)")
            return true
        }
    }

    /// The HTTP client the requests go through (`given`: an in-process backend; else the app's
    /// transport, else URLSession), behind the misconfiguration watch and trace propagation, or
    /// none when the network is disabled; and its name, for the start's log line.
    static func network(envId: String, config: FlagshipConfig, given: (any HTTPTransport)?,
                        logger: Logger) -> (transport: any HTTPTransport, name: String) {
        // No client at all without the network: a URLSession costs a start about 8 ms.
        guard !config.networkDisabled else { return (DisabledTransport(), "none (the network is disabled)") }
        // A response may be as large as the largest bucketing file taken (10 MiB unless raised).
        let responses = max(FSHTTPRequest.defaultMaximumResponseBytes, config.bucketingFileMaximumBytes)
        let client: any HTTPTransport = given
            ?? config.httpTransport.map { AppTransport(base: $0, maximumResponseBytes: responses) }
            ?? URLSessionTransport(maxResponseBytes: responses)
        let name = given != nil ? "an in-process backend"
            : config.httpTransport.map { "the app's \(type(of: $0))" }
            ?? "URLSession, its host check \(URLHostCheck.current.summary)"
        let network: any HTTPTransport = MisconfigurationWatch(client, envId: envId, logger: logger)
        return (config.tracer.map { TracePropagatingTransport(base: network, tracer: $0) } ?? network, name)
    }

    /// Bucketing mode: the poller of the bucketing file and a decider over it; API mode: the
    /// Decision API's client.
    static func decider(envId: String, apiKey: String, config: FlagshipConfig, store: FlagshipDatabase?,
                        transport: any HTTPTransport, statusCell: SDKStatusCell, flagWatch: FlagWatch,
                        logger: Logger) -> (BucketingPoller?, any FlagDecider) {
        let timeout = config.timeout / 1000
        if config.mode == .BUCKETING {
            let poller = BucketingPoller(envId: envId, baseURL: config.bucketingBaseURL, interval: config.pollingInterval,
                                         timeout: timeout, transport: transport, store: store,
                                         shared: config.sharedStore?.bucketingFiles(envId: envId, logger: logger),
                                         bootstrap: Self.bootstrap(config.bootstrap, maximumBytes: config.bucketingFileMaximumBytes, logger: logger),
                                         keptVersions: config.recordsDecisions ? config.keptBucketingFileVersions : nil,
                                         maximumBytes: config.bucketingFileMaximumBytes,
                                         clock: config.clock, logger: logger,
                                         onChange: { [flagWatch] change in flagWatch.fileChanged(change) }) { file in
                statusCell.set(file.panic ? .SDK_PANIC : .SDK_INITIALIZED)
            }
            return (poller, BucketingDecider(poller: poller))
        }
        return (nil, DecisionAPIClient(envId: envId, apiKey: apiKey, baseURL: config.decisionBaseURL,
                                       timeout: timeout, sdkVersion: SDKInfo.version, transport: transport))
    }

    /// The tracking manager, with its events client and the settings the configuration gives.
    static func tracking(envId: String, apiKey: String, config: FlagshipConfig, queue hitQueue: any HitQueue,
                         transport: any HTTPTransport, visitorDocuments: (PendingVisitorDocuments, FlagshipDatabase)?,
                         executor: SerialQueueExecutor?, logger: Logger) -> TrackingManager {
        let eventsTimeout = max(config.timeout / 1000, 5)
        let events = EventsClient(envId: envId, apiKey: apiKey, decisionBaseURL: config.decisionBaseURL,
                                  eventsBaseURL: config.eventsBaseURL, timeout: eventsTimeout, transport: transport,
                                  maxBatchBytes: config.trackingConfig.maxBatchBytes)
        var settings = TrackingManager.Settings(config.trackingConfig)
        config.adjustTracking?(&settings)
        if config.networkDisabled { settings.sends = false }
        settings.instrumentation = config.instrumentation
        settings.tracer = config.tracer
        return TrackingManager(
            queue: hitQueue,
            events: events, settings: settings, clock: config.clock, logger: logger,
            visitorDocuments: visitorDocuments, executor: executor)
    }
}

/// The hit cache when not even an in-memory database could be had: hits wait in memory only.
struct NoHitCache: FSHitCacheDelegate, Sendable {
    func cacheHits(hits: [String: [String: Any]]) {}
    func lookupHits() -> [String: [String: Any]] { [:] }
    func flushHits(hitIds: [String]) {}
    func flushAllHits() {}
}
