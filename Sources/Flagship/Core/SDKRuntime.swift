import Dispatch
import FlagshipStore
import Foundation
import Logging
import Synchronization

/// Everything a started SDK instance owns: its configuration, logger, local store and caches,
/// network clients and tracking manager, and its status.
final class SDKRuntime: Sendable {
    let envId: String
    let config: FlagshipConfig
    let logger: Logger
    let caches: CacheService?
    /// The Decision API in API mode, the bucketing file in bucketing mode.
    let decider: any FlagDecider
    /// Deletes the default visitor cache's visitors not seen for the retention period (`nil`:
    /// no default visitor cache over a writable store, or a fleet's store keeps the visitors).
    let retention: VisitorRetention?
    /// Bucketing mode: the stored file, and the downloads that refresh it.
    let bucketing: BucketingPoller?
    let tracking: TrackingManager
    /// Failed fetches, whichever form made them: one warning when they start failing (and one
    /// per other kind of failure while they fail), one when a fetch succeeds again.
    let fetchOutage: OutageLog
    /// The bucketing file's change listeners and the watched visitors (`flagChanges()`).
    let flagWatch = FlagWatch()
    /// The flag keys (with the type asked) whose type mismatch was logged: once each.
    let mismatchesLogged = Locked<Set<String>>([])
    /// Recent visitors' context digests: a returning visitor's unchanged context is not hashed
    /// again to be compared with the last SEGMENT hit's (at most 8,192 visitors remembered).
    let contextDigests = ContextDigests()
    /// The evaluation hooks that threw: counted, each hook type and stage logged once.
    let hookFailures: HookFailures
    /// Where the app's callbacks run (`Flagship.callbacks`, one queue for the process).
    var callbacks: DispatchQueue { Flagship.callbacks }
    /// Whether this is the first start of the SDK with this store.
    let firstTimeInit: Bool

    private let store: FlagshipDatabase?
    /// `DisabledTransport` when the network is disabled: then no request can leave.
    let transport: any HTTPTransport
    /// Which HTTP client the requests go through, for the start's log line.
    let httpClient: String
    private let statusCell: SDKStatusCell
    /// The background work (`run`), started by `begin()`, and the first `close()`, which a second
    /// one awaits; `stopsWhenClosed`: a close asked for the status `SDK_NOT_INITIALIZED` at its end.
    private let tasks = Locked<(background: Task<Void, Never>?, closing: Task<Void, Never>?, stopsWhenClosed: Bool)>((nil, nil, false))

    /// The state key recording that the SDK has started with this store before.
    static let firstInitKey = "sdk.first_init_at"

    /// `network`: what answers requests in place of `URLSessionTransport` (FlagshipTesting).
    init(envId: String, apiKey: String, config: FlagshipConfig, logger: Logger, network given: (any HTTPTransport)? = nil) {
        fetchOutage = OutageLog(logger: logger, now: config.now)
        hookFailures = HookFailures(instrumentation: config.instrumentation)
        self.envId = envId
        self.config = config
        self.logger = logger
        let store = LocalStore.openOrFallBack(envId: envId, directory: config.cacheDirectory, file: config.cacheFile, logger: logger)
        self.store = store
        let eventsTimeout = max(config.timeout / 1000, 5)
        let hitQueue = Self.hitQueue(envId: envId, config: config, store: store, claimDuration: max(60, 4 * eventsTimeout), logger: logger)
        caches = store.map {
            CacheService(manager: config.cacheManager, store: $0, shared: hitQueue as? any VisitorKeepingHitQueue,
                         ownStoreReadBound: config.ownStoreReadBound, hotVisitors: config.hotVisitors, now: config.now, logger: logger)
        }
        retention = Self.retention(envId: envId, config: config, store: store, logger: logger)
        firstTimeInit = Self.recordFirstInit(store: store, now: config.now, logger: logger)
        (transport, httpClient) = Self.network(envId: envId, config: config, given: given, logger: logger)
        statusCell = SDKStatusCell(logger: logger, callbacks: Flagship.callbacks, onChange: config.onSdkStatusChanged)
        (bucketing, decider) = Self.decider(envId: envId, apiKey: apiKey, config: config, store: store, transport: transport,
                                            statusCell: statusCell, flagWatch: flagWatch, logger: logger)
        // The writer's jobs run on the queue of the SQLite store they write: the hits' (an
        // explicitly given default hit cache's), else the instance's (visitor documents, a fleet's spill).
        tracking = Self.tracking(envId: envId, apiKey: apiKey, config: config, queue: hitQueue, transport: transport,
                                 visitorDocuments: caches.flatMap { caches in caches.pending.map { ($0, caches.store) } },
                                 executor: (hitQueue as? SQLiteHitQueue)?.store.executor ?? store?.executor, logger: logger)
    }

    /// Makes the instance ready: in API mode at once; in bucketing mode from the stored file when
    /// there is one (`SDK_INITIALIZING` until a file is known), then polling for a newer one.
    /// Starts the background work (`run`) on the SDK's own thread.
    func begin() {
        tracking.start()
        var work: [@Sendable () async -> Void] = [tracking.run]
        if let retention { work.append { await retention.run() } }
        if let bucketing {
            work.append { await bucketing.runStoreWork() }
            bucketing.loadStored()
            if bucketing.file == nil { setStatus(.SDK_INITIALIZING) }
            if config.networkDisabled {
                // No download will come: a fetch decides from the stored file or the bootstrap at
                // once, and without either fails at once rather than wait for one.
                bucketing.startOffline()
            } else {
                work.append { await bucketing.run() }
            }
        } else {
            setStatus(.SDK_INITIALIZED)
        }
        let background = Task(executorPreference: ThreadExecutor.background) { await Self.run(work) }
        tasks.withLock { $0.background = background }
    }

    /// The instance's background work, as child tasks of the one task that awaits this: the
    /// tracking manager's loops (the sender, the batch timer, the backoff wake), the visitor
    /// cache's retention and the bucketing poller. Returns once `close()` has ended them all.
    static func run(_ work: [@Sendable () async -> Void]) async {
        await withDiscardingTaskGroup { group in
            for child in work { group.addTask(operation: child) }
        }
    }

    /// The task whose children are the background work, begun by `begin()`: for tests that check
    /// it ends with `close()`.
    var backgroundTask: Task<Void, Never>? {
        tasks.withLock { $0.background }
    }

    /// Returns once the background work has ended (at once before `begin()`), then once the
    /// `close()` that ended it has: what `Flagship.run()` awaits.
    func closed() async {
        await tasks.withLock { $0.background }?.value
        await tasks.withLock { $0.closing }?.value
    }

    var status: FSSdkStatus {
        statusCell.current
    }

    /// Records a status; `onSdkStatusChanged` hears of real changes only.
    func setStatus(_ status: FSSdkStatus) {
        statusCell.set(status)
    }

    /// Consent withdrawn: the visitor's cache entry and its waiting hits (consent hits kept) go,
    /// in order after everything the visitor did before.
    /// Returns once what was accepted so far is written: visitor documents and hits.
    func flushCaches() async {
        await tracking.waitForWrites()
        await caches?.waitForPendingWrites()
    }

    /// Everything the SDK's stores hold for `visitorId`, once what was accepted is written: this
    /// instance's store, and a fleet's shared store when there is one (rows that wait in this
    /// instance's file while the shared store was away are listed too).
    func visitorData(_ visitorId: String) async throws -> FSVisitorData {
        await flushCaches()
        var records = VisitorDataRecords.nothing(for: visitorId)
        if let store {
            // On the store's queue; a cancelled caller's read is interrupted.
            do {
                records = try await store.read { try $0.visitorData(visitorId: visitorId) }
            } catch let cancelled as CancellationError {
                throw cancelled
            } catch {
                throw FSCacheError(error, path: store.database.path)
            }
        }
        if let shared = config.sharedStore as? any SharedVisitorData {
            records.merge(try await shared.visitorData(envId: envId, visitorId: visitorId))
        }
        return FSVisitorData(records)
    }

    /// Accepts a visitor's newest document for the visitor cache; returns at once. `fromFile`:
    /// its campaigns were decided from a bucketing file (downloaded, stored or bootstrap), so
    /// the default store may keep each variation once for every visitor (`compactParts()`).
    func cacheVisitor(_ document: VisitorCacheDocument, decisions: [DecisionRecord] = [], fromFile: Bool = false) {
        let longest = max(document.visitorId.utf8.count, document.anonymousId?.utf8.count ?? 0)
        guard longest <= FSVisitor.maximumIdBytes else {
            logger.error("Visitor '\(document.visitorId.prefix(32))…' not cached: an id of \(longest) bytes in UTF-8 is over the \(FSVisitor.maximumIdBytes) the store keeps")
            return
        }
        if caches?.cacheVisitor(document, decisions: decisions, fromFile: fromFile) == true { tracking.writeVisitorDocumentsSoon() }
    }

    func purgeVisitor(_ visitorId: String) {
        caches?.flushVisitorInBackground(visitorId)
        tracking.purge(visitorId: visitorId)
    }

    /// Sends what is pending within the close deadline, leaves the rest in the cache, and
    /// releases the store and the network.
    /// Closes within one deadline (`closeDeadline` on the SDK's clock, 5 s by default): the
    /// tracking manager's last round, the end of the background work, the visitor cache's pending
    /// writes and the store's close each get what is left of it. What still runs then (a store
    /// another process keeps locked, a custom cache that has not returned) finishes in the
    /// background, logged, never waited for. A second call returns once the first has ended; a
    /// close goes on to its end when its caller is cancelled.
    ///
    /// `stopping`: the instance reads `SDK_NOT_INITIALIZED` once closed, before the close's end is
    /// heard (by `Flagship.run()`, by a second close): the instance the app closes, not one that
    /// a new start replaced.
    func close(stopping: Bool = false) async {
        let closing = tasks.withLock { state -> Task<Void, Never> in
            if stopping { state.stopsWhenClosed = true }
            if let closing = state.closing { return closing }
            let closing = Task(executorPreference: ThreadExecutor.background) { [self] in
                await closeOnce()
                if tasks.withLock({ $0.stopsWhenClosed }) { setStatus(.SDK_NOT_INITIALIZED) }
            }
            state.closing = closing
            return closing
        }
        await closing.value
        // A close that had ended before this one asked.
        if stopping { setStatus(.SDK_NOT_INITIALIZED) }
    }

    private func closeOnce() async {
        let clock = config.clock
        let deadline = clock.now().addingTimeInterval(tracking.settings.closeDeadline)
        bucketing?.close()
        flagWatch.finish()
        // First: a prune under way stops after its batch, so the last group commits wait for none.
        if let retention, !(await retention.close(until: deadline, clock: clock)) {
            logger.warning("Closed at its deadline with the visitor cache's prune still running: it stops after its batch")
        }
        await tracking.close(until: deadline)
        if !(await endBackground(until: deadline)) {
            logger.debug("Closed at its deadline with background work still running (a custom cache that has not returned): it ends by itself")
        }
        if let caches, !(await caches.waitForPendingWrites(until: deadline, clock: clock)) {
            logger.error("Closed at its deadline with the visitor cache still writing: the last visitor data may not be saved")
        }
        if let bucketing, !(await bucketing.waitForStoreWrites(until: deadline, clock: clock)) {
            logger.warning("Closed at its deadline with the bucketing file still being stored")
        }
        await transport.shutdown()
        guard let store else { return }
        // Closing takes the store's lock, which a write waiting for another process's lock holds:
        // it blocks, so it runs on a serial queue of its own, as SQLite's other blocking work does.
        let closed = await firstOf(deadline: deadline, clock: clock) { (finish: @escaping @Sendable (Bool) -> Void) in
            StoreThreads.queue("io.flagship.store.closing").async {
                store.close()
                finish(true)
            }
        }
        if closed == nil {
            logger.warning("Closed at its deadline with the store still busy: its connection closes once the write under way ends")
        }
    }

    /// Waits, until `deadline` at most, for the background work that `close()` ended (its sender's
    /// last round over, a send still under way cancelled); `false` at the deadline.
    private func endBackground(until deadline: Date) async -> Bool {
        guard let background = tasks.withLock({ $0.background }) else { return true }
        return await firstOf(deadline: deadline, clock: config.clock) { (finish: @escaping @Sendable (Bool) -> Void) in
            Task(executorPreference: ThreadExecutor.background) {
                await background.value
                finish(true)
            }
        } != nil
    }

    /// A value of the key/value state table, inserted if absent, so two processes agree. Runs on
    /// the store's own queue; the caller waits for it within a deadline of its own (`PendingValue`):
    /// a store another process keeps locked makes the insert wait seconds. Past the deadline,
    /// `value` is used and the insert goes on: if the store then holds another value (another
    /// process chose first), that one wins for the next builds, and the log says so.
    func persistentValue(forKey key: String, default value: String) -> PendingValue {
        let pending = PendingValue(fallback: value)
        guard let store else {
            pending.settle(value)
            return pending
        }
        let logger = logger
        let now = config.now().unixMilliseconds
        // On the store's own queue (its async `write`), off the caller's thread.
        Task(executorPreference: ThreadExecutor.background) {
            let stored: String
            do {
                stored = try await store.write { try $0.state.valueInsertingIfAbsent(value, forKey: key, now: now) }
            } catch {
                logger.error("SDK state '\(key)' could not be stored: \(error)")
                stored = value
            }
            if pending.settle(stored), stored != value {
                logger.warning("SDK state '\(key)' was stored by another process meanwhile: this visitor uses its own value until it is built again")
            }
        }
        return pending
    }

    /// A value being read or stored on the store's queue, waited for within a deadline.
    final class PendingValue: Sendable {
        private struct State {
            var value: String?
            var abandoned = false
        }

        private let fallback: String
        private let state = Locked(State())
        /// Set once the value is recorded: what callers wait for.
        private let settled = OneShot<Void>()

        init(fallback: String) {
            self.fallback = fallback
        }

        /// Records the value; returns whether the waiter had already gone on without it.
        @discardableResult
        func settle(_ value: String) -> Bool {
            let abandoned = state.withLock { state -> Bool in
                state.value = value
                return state.abandoned
            }
            settled.fulfil(())
            return abandoned
        }

        /// The value, waiting for it until `deadline` at most (the calling thread blocked, for
        /// the synchronous `build()`); else the fallback.
        func value(waitingUntil deadline: DispatchTime) -> String {
            _ = settled.value(blockingUntil: deadline)
            return take()
        }

        /// The value, suspending until `deadline` at most; else the fallback.
        func value(waitingUntil deadline: DispatchTime) async -> String {
            _ = await settled.value(until: deadline)
            return take()
        }

        private func take() -> String {
            state.withLock { state in
                if state.value == nil { state.abandoned = true }
                return state.value ?? fallback
            }
        }
    }

}

/// The SDK status of one instance, told to `onSdkStatusChanged` on every real change.
/// Its own object, so the bucketing poller can report a new file before the runtime is whole.
///
/// An atomic rather than a lock: every flag read asks for it.
final class SDKStatusCell: Sendable {
    private static let statuses = FSSdkStatus.allCases
    private let value = Atomic<Int>(statuses.firstIndex(of: .SDK_NOT_INITIALIZED)!)
    private let logger: Logger
    private let callbacks: DispatchQueue
    private let onChange: (@Sendable (FSSdkStatus) -> Void)?

    init(logger: Logger, callbacks: DispatchQueue, onChange: (@Sendable (FSSdkStatus) -> Void)?) {
        self.logger = logger
        self.callbacks = callbacks
        self.onChange = onChange
    }

    var current: FSSdkStatus {
        Self.statuses[value.load(ordering: .acquiring)]
    }

    func set(_ status: FSSdkStatus) {
        let index = Self.statuses.firstIndex(of: status)!
        guard value.exchange(index, ordering: .acquiringAndReleasing) != index else { return }
        logger.info("SDK status: \(status.rawValue)")
        if let onChange {
            callbacks.async { onChange(status) }
        }
    }
}
