import Dispatch
import FlagshipStore
import Foundation
import Logging

/// Everything a started SDK instance owns: its configuration, logger, local store and caches,
/// network clients and tracking manager, and its status.
final class SDKRuntime: @unchecked Sendable {
    let envId: String
    let config: FlagshipConfig
    let logger: Logger
    let caches: CacheService?
    let decisionClient: DecisionAPIClient
    let tracking: any HitTracking
    /// Callbacks run here: off the caller's stack, in order, never under an SDK lock.
    let callbacks = DispatchQueue(label: "io.flagship.callbacks")
    /// Whether this is the first start of the SDK with this store.
    let firstTimeInit: Bool

    private let store: FlagshipDatabase?
    private let transport: URLSessionTransport
    // NSLock, not Mutex: the thread sanitizer sees it.
    private let lock = NSLock()
    private var currentStatus: FSSdkStatus
    /// Work started for callers that do not wait (a hit sent, a cache purge): `close()` waits
    /// for all of it before the last batch, so nothing started is lost.
    private var inFlight: [UInt64: Task<Void, Never>] = [:]
    private var nextTaskId: UInt64 = 0
    private var closing = false

    /// The state key recording that the SDK has started with this store before.
    static let firstInitKey = "sdk.first_init_at"

    init(envId: String, apiKey: String, config: FlagshipConfig, logger: Logger) {
        self.envId = envId
        self.config = config
        self.logger = logger
        let store = LocalStore.openOrFallBack(envId: envId, directory: config.cacheDirectory, file: config.cacheFile, logger: logger)
        self.store = store
        caches = store.map { CacheService(manager: config.cacheManager, store: $0, now: config.now, logger: logger) }
        firstTimeInit = Self.recordFirstInit(store: store, now: config.now, logger: logger)
        transport = URLSessionTransport()
        let timeout = config.timeout / 1000
        decisionClient = DecisionAPIClient(envId: envId, apiKey: apiKey, baseURL: config.decisionBaseURL,
                                           timeout: timeout, sdkVersion: SDKInfo.version, transport: transport)
        let events = EventsClient(envId: envId, apiKey: apiKey, decisionBaseURL: config.decisionBaseURL,
                                  eventsBaseURL: config.eventsBaseURL, timeout: max(timeout, 5), transport: transport)
        tracking = TrackingManager(events: events, config: config.trackingConfig, logger: logger, now: config.now)
        currentStatus = .SDK_NOT_INITIALIZED
    }

    var status: FSSdkStatus {
        lock.lock()
        defer { lock.unlock() }
        return currentStatus
    }

    /// Records a status; `onSdkStatusChanged` hears of real changes only.
    func setStatus(_ status: FSSdkStatus) {
        lock.lock()
        let changed = currentStatus != status
        currentStatus = status
        lock.unlock()
        guard changed else { return }
        logger.info("SDK status: \(status.rawValue)")
        if let callback = config.onSdkStatusChanged {
            callbacks.async { callback(status) }
        }
    }

    /// Runs `work` in the background, tracked so that `close()` waits for it.
    func background(_ work: @escaping @Sendable () async -> Void) {
        lock.lock()
        defer { lock.unlock() }
        guard !closing else {
            logger.error("Work dropped: the SDK is closing")
            return
        }
        let id = nextTaskId
        nextTaskId += 1
        // Created under the lock, so the task's own removal waits for its insertion.
        inFlight[id] = Task {
            await work()
            self.lock.withLock { _ = self.inFlight.removeValue(forKey: id) }
        }
    }

    /// Waits for the background work, sends what is pending, and releases the store and the
    /// network. Safe to call twice.
    func close() async {
        let running = lock.withLock {
            closing = true
            return Array(inFlight.values)
        }
        for task in running { await task.value }
        await tracking.close()
        transport.shutdown()
        store?.close()
    }

    /// A value of the key/value state table, inserted if absent, so two processes agree.
    func persistentValue(forKey key: String, default makeValue: () -> String) -> String {
        let value = makeValue()
        guard let store else { return value }
        do {
            return try store.state.valueInsertingIfAbsent(value, forKey: key, now: config.now().unixMilliseconds)
        } catch {
            logger.error("SDK state '\(key)' could not be stored: \(error)")
            return value
        }
    }

    private static func recordFirstInit(store: FlagshipDatabase?, now: @Sendable () -> Date, logger: Logger) -> Bool {
        guard let store else { return true }
        do {
            if try store.state.value(forKey: firstInitKey) != nil { return false }
            try store.state.setValue(String(now().unixMilliseconds), forKey: firstInitKey, now: now().unixMilliseconds)
            return true
        } catch {
            logger.error("SDK state could not be read: \(error)")
            return true
        }
    }
}
