import Dispatch
import FlagshipStore
import Foundation
import Logging

/// The tracking manager (SDK.md, "Tracking manager"): one per SDK instance, three owners.
///
/// - The **writer** (`HitWriter`) takes every hit without blocking and group-commits them, with
///   the default visitor cache's documents, on the store queue (`TrackingStore`).
/// - The **sender** (`HitSender`) owns claim → send → settle → backoff.
/// - The **lifecycle**, here: `start()` replays what earlier runs left; `run` is the work whose
///   children are the sender's loop, the batch timer and the backoff wake, a child of the SDK
///   instance's one background task (`SDKRuntime.run`); `close()` ends them within one deadline
///   on the SDK's clock. Every sleep and deadline reads that clock.
package final class TrackingManager: HitTracking {
    struct Settings: Sendable {
        var poolMaxSize = 10
        var batchInterval: TimeInterval = 5
        var strategy: BatchCachingStrategy = .CONTINUOUS_CACHING
        var hitLifetime: TimeInterval = 4 * 3600
        /// Hits claimed and sent per request to the events endpoint (split further by bytes).
        var pageSize = 500
        /// Hits held in memory, unwritten, at most (periodic caching, or a cache that fails).
        var memoryLimit = 10_000
        /// Hits written per group commit at most.
        var ingressLimit = 5_000
        /// The least time between the end of a group commit and the start of the next when work
        /// arrived while it ran (`HitWriter.drain`): work that finds the writer idle is committed
        /// at once; under a flow, what arrives in the spacing goes in one transaction. Measured in the soak at 2,000
        /// visitors/s: commits back to back took about one visitor each and rewrote 15 pages
        /// (61 KB of write-ahead log) apiece, 78 KB written per visitor. 0: no spacing.
        var commitSpacing: TimeInterval = 0.005
        /// How long a visitor document waits in memory before a group commit set going by hits
        /// writes it: a request's fetch and the exposures that follow it (recorded in the same
        /// document, `FSDeduplication`) are one write of the visitor's row rather than two. A
        /// lookup reads the waiting document meanwhile; a barrier, an interval's tick and `close()`
        /// write it whatever its age. 0: written by the next group commit.
        var documentCoalescing: TimeInterval = 0.1
        /// Hits waiting for the group commit at most, past which a hit nobody awaits (a flag
        /// read's activate, a fire-and-forget `sendHit`) is refused, counted as lost, rather than
        /// making its caller wait for the disk: memory stays bounded. Awaited hits (`try await
        /// sendHit`) are always taken: their callers wait for the commit, which bounds them.
        var ingressCap = 20_000
        /// Consent withdrawals whose erasure failed, kept to be tried again at each interval. Past
        /// it, a failed erasure is logged and counted (`erasuresAbandoned`), not kept: 10,000
        /// visitor ids, under 1 MB.
        var erasuresWaitingLimit = 10_000
        /// Exposure callbacks kept for activates not yet delivered, at most.
        var pendingActivateCallbacksLimit = 10_000
        /// The hit cache's cap (`maxCachedHits`): backpressure starts at half of it.
        var capacity = 100_000
        /// How long `try await sendHit` waits for room under backpressure before it throws.
        var backpressureWait: TimeInterval = 5
        /// Committed hits handed to the sender in memory, claimed, at most (past it they wait in
        /// the store, claimable, and the sender claims them: about 117 pages written per claim of
        /// 500). `nil`: as many as backpressure lets wait (half the cap), at most 50,000, so that
        /// short of backpressure the sender never claims under a flow. Measured in the soak: with
        /// 5,000, a backlog that passed it once at 3,400 visitors/s never came back down, each hit
        /// then costing the store a claim as well as its settlement.
        var committedInMemoryLimit: Int?

        /// `committedInMemoryLimit`, or its default from the cap.
        var handOverLimit: Int {
            committedInMemoryLimit ?? min(50_000, max(1, capacity / 2))
        }
        /// The least time between the starts of two send rounds that follow each other at once
        /// (hits accepted while a round was under way). An idle sender still sends at once; under
        /// load, what arrives meanwhile gathers into fuller requests instead of one request, and
        /// four transactions, per group commit: measured in the server loop, rounds back to back
        /// made 0.6 requests and about a quarter of a commit per visitor. 0: no spacing.
        var roundSpacing: TimeInterval = 0.05
        /// How long `close()` may spend on its last sends.
        var closeDeadline: TimeInterval = 5
        var backoffBase: TimeInterval = 1
        var backoffCap: TimeInterval = 300
        /// Replaces the events client's timeout (at least 5 s otherwise): tests that make the
        /// server answer too late pay a fraction of a second per timeout, not five.
        var requestTimeout: TimeInterval?
        /// `false`: nothing is sent (the SDK's network is disabled); hits wait in the cache.
        var sends = true
        /// A random number in 0..<1 for the backoff's jitter (tests fix it).
        var jitter: @Sendable () -> Double = { Double.random(in: 0..<1) }
        /// Told of hits by stage, batches, commits and hits waiting (`withInstrumentation`).
        var instrumentation: (any FlagshipInstrumentation)?
        /// A span per batch sent (`withTracer`).
        var tracer: (any FlagshipTracer)?

        init() {}

        init(_ config: FSTrackingManagerConfig) {
            poolMaxSize = config.poolMaxSize
            batchInterval = config.batchIntervalTimer
            strategy = config.strategy
            hitLifetime = config.hitLifetime
            capacity = config.maxCachedHits
        }
    }

    struct Lifecycle {
        var started = false
        var closed = false
        var closeFinished = false
        /// The first `close()`, which a second one awaits.
        var closing: Task<Void, Never>?
        /// Hits found in the cache at start, and waiting when last counted.
        var cachedAtStart = 0
        var waiting = 0
        /// Counted lost by `close()` (beyond the writer's own count).
        var lostAtClose = 0
    }

    let settings: Settings
    let store: TrackingStore
    /// Where hits wait: what a hit written in the app's own transaction goes into.
    var hitQueue: any HitQueue { store.hits }
    let writer: HitWriter

    /// Whether a group commit is writing now (`HitWriter.isCommitting`), for tests.
    var writerIsCommitting: Bool { writer.isCommitting }
    let sender: HitSender
    let callbacks: DeliveryCallbacks
    let backpressure: Backpressure
    /// When each hit was accepted here, on the monotonic clock: its queue time.
    let ages: HitAges
    let overloadedRefusals = Locked(0)
    let clock: any SDKClock
    let logger: Logger
    let lifecycle = Locked(Lifecycle())
    /// Where the writer's callback finds the sender: held here, so that it lives as long as the
    /// manager, and weakly there (the sender holds the writer).
    let readyHits: Locked<HitSender?>
    /// Finished by `close()`: the batch timer and the backoff wake end.
    let timersStop: AsyncStream<Void>
    let timersStopContinuation: AsyncStream<Void>.Continuation
    /// Finished by `close()` once its last round is over, and by `deinit`: `run` returns once its
    /// children have. `true` yielded cancels them (a send under way, with its request).
    let runStop: AsyncStream<Bool>
    let runStopContinuation: AsyncStream<Bool>.Continuation

    init(queue: any HitQueue, events: EventsClient, settings: Settings, clock: any SDKClock, logger: Logger,
         visitorDocuments: (pending: PendingVisitorDocuments, store: FlagshipDatabase)? = nil, executor: SerialQueueExecutor?) {
        let store = TrackingStore(hits: queue, executor: executor)
        let callbacks = DeliveryCallbacks(limit: settings.pendingActivateCallbacksLimit)
        // The writer tells the sender of hits ready to send; the sender holds the writer, so the
        // writer holds the sender weakly.
        let readyHits = Locked<HitSender?>(nil)
        let backpressure = Backpressure(settings: .init(capacity: settings.capacity, maxWait: settings.backpressureWait),
                                        logger: logger, instrumentation: settings.instrumentation)
        let committedHits = store.ownTable != nil && settings.sends && settings.strategy == .CONTINUOUS_CACHING
            ? CommittedHits(limit: settings.handOverLimit) : nil
        let writer = HitWriter(settings: settings, store: store, clock: clock, logger: logger, callbacks: callbacks,
                               visitorDocuments: visitorDocuments, committedHits: committedHits,
                               backpressure: backpressure) { [weak box = readyHits] hits, activate in
            box?.withLock { $0 }?.noteReady(hits: hits, activate: activate)
        }
        // As many acceptances as the cache holds hits, 100,000 at most (about 10 MB).
        let local = queue is SQLiteHitQueue || queue is LocalHitsAndVisitors || queue is DelegateHitQueue
        let ages = HitAges(clock: clock, limit: min(max(1, settings.capacity), 100_000), storedOnStartTimeline: local)
        let sender = HitSender(settings: settings, store: store, writer: writer,
                               events: settings.requestTimeout.map { events.withTimeout($0) } ?? events,
                               clock: clock, logger: logger, callbacks: callbacks,
                               committedHits: committedHits, backpressure: backpressure, ages: ages)
        self.ages = ages
        self.backpressure = backpressure
        readyHits.withLock { $0 = sender }
        self.readyHits = readyHits
        self.store = store
        self.writer = writer
        self.sender = sender
        self.callbacks = callbacks
        self.settings = settings
        self.clock = clock
        self.logger = logger
        (timersStop, timersStopContinuation) = AsyncStream.makeStream(of: Void.self)
        (runStop, runStopContinuation) = AsyncStream.makeStream(of: Bool.self)
    }

    deinit {
        // A manager dropped without `close()`: its loops end.
        timersStopContinuation.finish()
        sender.finish()
        writer.finishCommits()
        runStopContinuation.finish()
    }

    // MARK: Start: replay what earlier runs left

    /// Deletes expired hits, counts what earlier runs left, and starts sending it oldest first
    /// (once `run` runs). Once per SDK start, whatever the number of visitors.
    func start() {
        let first = lifecycle.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started && !state.closed
        }
        guard first else { return }
        store.async { [store, writer, sender, lifecycle, clock, logger] in
            store.hits.loadCached(now: clock.now().unixMilliseconds) { takeIn in
                // A custom cache's hits, once it answers: taken in by a job of the store, in order.
                store.async {
                    let loaded = takeIn()
                    guard loaded > 0 else { return }
                    // Hits accepted since the start are not expired: what expires now was loaded.
                    let replayed = max(0, loaded - (await writer.deleteExpired()))
                    guard replayed > 0 else { return }
                    lifecycle.withLock {
                        $0.cachedAtStart += replayed
                        $0.waiting += replayed
                    }
                    logger.info("Replaying \(replayed) cached hit(s) left by an earlier run, oldest first")
                    sender.requestFlush()
                }
            }
            let expired = await writer.deleteExpired()
            let waiting = (try? await store.hits.count()) ?? 0
            lifecycle.withLock {
                $0.cachedAtStart = waiting
                $0.waiting = waiting
            }
            if waiting > 0 { logger.info("Replaying \(waiting) cached hit(s) left by an earlier run, oldest first") }
            if expired > 0 || waiting > 0 { sender.requestFlush() }
        }
    }

    /// The lifecycle's work: the sender's loop, the writer's group commits, the batch timer and
    /// the backoff wake, as children of the task that awaits it (the SDK instance's `run`), until
    /// `close()` ends them. It holds the writer and the sender, not the manager: a manager
    /// dropped without `close()` ends it from `deinit`.
    var run: @Sendable () async -> Void {
        { [writer, sender, timersStop, runStop, clock, interval = settings.batchInterval] in
            await withDiscardingTaskGroup { group in
                group.addTask { await sender.run() }
                group.addTask { await writer.runCommits() }
                group.addTask {
                    await withDiscardingTaskGroup { timers in
                        timers.addTask { await Self.batchTimer(every: interval, clock: clock, writer: writer, sender: sender) }
                        timers.addTask { await sender.runWakes() }
                        for await _ in timersStop {}
                        timers.cancelAll()
                    }
                }
                for await cancel in runStop where cancel { group.cancelAll() }
            }
        }
    }

    /// Each interval: the periodic pool written, expired hits deleted, a batch sent.
    static func batchTimer(every interval: TimeInterval, clock: any SDKClock, writer: HitWriter, sender: HitSender) async {
        while !Task.isCancelled {
            do {
                try await clock.sleep(until: clock.now().addingTimeInterval(interval))
            } catch {
                return
            }
            await writer.tick()
            // A claim held by a process that stalled, or kept in memory too long, lapses with
            // time: the next round's claims look for such rows again.
            writer.claimsMayHaveLapsed()
            sender.requestFlush()
        }
    }

    // MARK: Accepting

    func track(_ hit: OutgoingHit, onDelivered: (@Sendable () -> Void)?,
               durable: (@Sendable (Result<Void, FlagshipError>) -> Void)?, committed: Bool) {
        if let onDelivered, !callbacks.register(onDelivered, for: hit.id) {
            logger.warning("onVisitorExposed will not be called for an activate: \(settings.pendingActivateCallbacksLimit) activates already wait for delivery",
                           metadata: logger.logLevel <= .debug ? ["hit_id": .string(hit.id)] : nil)
        }
        ages.noteAccepted(hit.id)
        if !writer.accept(hit, durable: durable, committed: committed) {
            ages.forget([hit.id])
            if onDelivered != nil { callbacks.forget([hit.id]) }
        }
    }

    /// Accepts a hit and returns once it is committed (or pooled, as the strategy says). Under
    /// backpressure it first waits for room, `backpressureWait` at most, then throws
    /// `FlagshipError.overloaded`: the hit was not taken.
    func trackDurably(_ hit: OutgoingHit, committed: Bool = false) async throws(FlagshipError) {
        if await !backpressure.waitForRoom(clock: clock) {
            overloadedRefusals.withLock { $0 += 1 }
            throw .overloaded(backlog: backpressure.backlog, waited: settings.backpressureWait)
        }
        try await trackAwaitingCommit(hit, committed: committed)
    }

    /// The admission of a hit written in the app's own transaction (`sendHit(_:inTransactionOn:)`),
    /// by the rule every awaited hit follows, without the wait: the app's thread holds its write
    /// lock, so under backpressure the hit is refused at once (`FlagshipError.overloaded`, counted
    /// with the awaited refusals) rather than waited for. `writing` writes it, told whether the
    /// cap may evict: only while sends fail (an outage), as for the SDK's own writes. It returns
    /// the hits waiting in the app's view of the table, which refuse the hit as well (nothing
    /// written) when they are at backpressure's high water while sends succeed: the backlog this
    /// instance knows may not count rows other transactions committed since its last write.
    func admitInTransaction(_ write: (_ evictAtCap: Bool, _ refuseFrom: Int?) throws(FlagshipError) -> Void) throws(FlagshipError) {
        let outage = try admitInTransaction()
        do {
            try write(outage, outage ? nil : backpressure.settings.highWater)
        } catch where error.code == .overloaded {
            throw refusedInTransaction()
        }
    }

    /// The same admission, for a store that checks no count in the app's transaction (a fleet's):
    /// throws under this instance's backpressure; returns whether sends fail (an outage).
    package func admitInTransaction() throws(FlagshipError) -> Bool {
        guard !backpressure.isOverloaded else { throw refusedInTransaction() }
        return backpressure.sendsAreFailing
    }

    func refusedInTransaction() -> FlagshipError {
        overloadedRefusals.withLock { $0 += 1 }
        return .overloaded(backlog: backpressure.backlog, waited: 0)
    }

    /// A visitor document joined the pending ones: the next group commit takes it, with the hits.
    func writeVisitorDocumentsSoon() {
        writer.writeVisitorDocumentsSoon()
    }

    func purge(visitorId: String) {
        writer.purge(visitorId: visitorId)
    }

    // MARK: For the SDK, the CLI and tests

    /// Returns once what was accepted is written, the start's replay ran, and no send is under
    /// way or due (sending stopped by the backoff counts as done).
    func waitUntilIdle() async {
        await store.run { [writer] in await writer.drainAll() }
        await sender.waitForIdle()
    }

    /// Returns once everything accepted before the call is written.
    func waitForWrites() async {
        await store.run { [writer] in await writer.drainAll() }
    }

    /// The counts so far; `waiting` counted now, or, once closed, as `close()` left it.
    func statistics() async -> TrackingStatistics {
        if !lifecycle.withLock({ $0.closeFinished }) {
            let waiting = await store.run { [queue = store.hits] in (try? await queue.count()) ?? 0 }
            let inMemory = writer.unwritten().inMemory
            lifecycle.withLock { $0.waiting = waiting + inMemory }
        }
        let (written, sent) = (writer.counts, sender.counts)
        return lifecycle.withLock { state in
            TrackingStatistics(
                cachedAtStart: state.cachedAtStart, expired: written.expired, delivered: sent.delivered,
                rejected: sent.rejected, evicted: written.evicted, failedRequests: sent.failedRequests,
                waiting: state.waiting, shed: backpressure.shed, refusedOverloaded: overloadedRefusals.withLock { $0 },
                lost: written.lost + state.lostAtClose, erasuresWaiting: writer.erasuresWaiting,
                erasuresAbandoned: written.erasuresAbandoned)
        }
    }

    /// Whether this instance keeps up, from what it knows now (no I/O).
    var health: FSHealth {
        let closed = lifecycle.withLock { $0.closed }
        let status: FSHealth.Status = closed ? .stopped
            : backpressure.isOverloaded ? .overloaded
            : sender.sendsFailing ? .deliveryFailing : .ready
        return FSHealth(status: status, backlog: backpressure.backlog, backlogLimit: backpressure.settings.highWater,
                        shed: backpressure.shed)
    }

    /// How many entries each in-memory structure holds now: what must stay flat however long
    /// the network fails (the hits themselves wait in the cache).
    func memoryFootprint() -> TrackingMemoryFootprint {
        let written = writer.footprint
        return TrackingMemoryFootprint(
            ingress: written.ingress, unwritten: written.unwritten, activateCallbacks: callbacks.count,
            waiters: sender.idleWaiterCount, purging: written.purging)
    }

    static func describe(_ interval: TimeInterval) -> String {
        interval >= 3600 && interval.truncatingRemainder(dividingBy: 3600) == 0
            ? "\(Int(interval / 3600)) h" : "\(Int(interval)) s"
    }
}
