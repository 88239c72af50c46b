import Dispatch
import FlagshipStore
import Foundation
import Logging

/// Where a visitor's hits and activates go: one per SDK instance, not one per visitor.
///
/// The seam between visitors and the tracking manager: visitors only ever call these.
protocol HitTracking: Sendable {
    /// Accepts a hit or an activate and returns at once. `durable` is told once the hit is in the
    /// cache (continuous caching, or `committed`) or in the pool (periodic caching), or why it
    /// was not; `onDelivered` (activates) runs once the server accepted it.
    func track(_ hit: OutgoingHit, onDelivered: (@Sendable () -> Void)?,
               durable: (@Sendable (Result<Void, FlagshipError>) -> Void)?, committed: Bool)
    /// Consent withdrawn: the visitor's waiting hits are deleted, consent hits excepted, after
    /// every hit accepted before this call.
    func purge(visitorId: String)
    /// Stops the timers, sends what it can within a deadline, leaves the rest in the cache.
    /// Returns only then; safe to call twice.
    func close() async
}

extension HitTracking {
    func track(_ hit: OutgoingHit) {
        track(hit, onDelivered: nil, durable: nil, committed: false)
    }

    func track(_ hit: OutgoingHit, onDelivered: (@Sendable () -> Void)?) {
        track(hit, onDelivered: onDelivered, durable: nil, committed: false)
    }

    /// Accepts a hit and returns once it is committed to the cache (continuous caching, or
    /// `committed`: the next group commit, whatever the strategy) or in the pool (periodic caching).
    func trackAwaitingCommit(_ hit: OutgoingHit, committed: Bool = false) async throws(FlagshipError) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, FlagshipError>, Never>) in
            track(hit, onDelivered: nil, durable: { continuation.resume(returning: $0) }, committed: committed)
        }
        try result.get()
    }
}

/// What the tracking manager did since it started: for `flagship replay`, tests and logs.
package struct TrackingStatistics: Sendable, Equatable {
    /// Hits found in the cache at start (after expiry): what earlier runs left to replay.
    package var cachedAtStart = 0
    /// Hits deleted unsent because they outlived the hit lifetime.
    package var expired = 0
    /// Hits and activates the server accepted.
    package var delivered = 0
    /// Hits and activates refused for good (and dropped).
    package var rejected = 0
    /// Hits evicted, oldest first, to stay within the cache cap.
    package var evicted = 0
    /// Requests that failed and will be retried.
    package var failedRequests = 0
    /// Hits waiting, in the cache (and, before close, in memory), when last counted.
    package var waiting = 0
    /// Hits nobody awaited refused under backpressure (delivery behind while the network answered).
    package var shed = 0
    /// Awaited hits refused under backpressure after waiting for room (`FlagshipError.overloaded`).
    package var refusedOverloaded = 0
    /// Hits lost: the cache could not take them and they were still unsent at close, they waited
    /// in a cache no restart finds, they were dropped past the memory bound, or, nobody awaiting
    /// them, refused past the ingress cap; and, when close's deadline found the store busy, the
    /// accepted hits not yet in it.
    package var lost = 0
    /// Consent withdrawals whose erasure failed and waits to be tried again, now.
    package var erasuresWaiting = 0
    /// Consent withdrawals whose erasure failed when `erasuresWaitingLimit` already waited: not
    /// tried again (each logged as an error).
    package var erasuresAbandoned = 0
}

/// The tracking manager's in-memory structures, by entries: for tests that check memory stays
/// bounded while the network fails.
struct TrackingMemoryFootprint: Sendable, Equatable {
    /// Accepted, waiting for the next group commit.
    var ingress = 0
    /// Held in memory unwritten: the periodic pool, or what the cache could not take.
    var unwritten = 0
    /// `onVisitorExposed` callbacks of activates not yet delivered.
    var activateCallbacks = 0
    /// Callers waiting for the sender to go idle or for `close()` to end.
    var waiters = 0
    /// Consent withdrawals whose deletion has not run yet.
    var purging = 0
}

/// The tracking manager (SDK.md, "Tracking manager"): one per SDK instance, three owners.
///
/// - The **writer** (`HitWriter`) takes every hit without blocking and group-commits them, with
///   the default visitor cache's documents, on the store queue (`TrackingStore`).
/// - The **sender** (`HitSender`) owns claim → send → settle → backoff.
/// - The **lifecycle**, here: `start()` replays what earlier runs left and starts one task whose
///   children are the sender's loop, the batch timer and the backoff wake; `close()` ends them
///   within one deadline on the SDK's clock. Every sleep and deadline reads that clock.
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

    private struct Lifecycle {
        var started = false
        var closed = false
        var closeFinished = false
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        /// The sender's loop, the batch timer and the backoff wake, as children of one task.
        var task: Task<Void, Never>?
        /// Hits found in the cache at start, and waiting when last counted.
        var cachedAtStart = 0
        var waiting = 0
        /// Counted lost by `close()` (beyond the writer's own count).
        var lostAtClose = 0
    }

    let settings: Settings
    private let store: TrackingStore
    /// Where hits wait: what a hit written in the app's own transaction goes into.
    var hitQueue: any HitQueue { store.hits }
    private let writer: HitWriter

    /// Whether a group commit is writing now (`HitWriter.isCommitting`), for tests.
    var writerIsCommitting: Bool { writer.isCommitting }
    private let sender: HitSender
    private let callbacks: DeliveryCallbacks
    let backpressure: Backpressure
    /// When each hit was accepted here, on the monotonic clock: its queue time.
    let ages: HitAges
    private let overloadedRefusals = Locked(0)
    private let clock: any SDKClock
    private let logger: Logger
    private let lifecycle = Locked(Lifecycle())
    /// Where the writer's callback finds the sender: held here, so that it lives as long as the
    /// manager, and weakly there (the sender holds the writer).
    private let readyHits: Locked<HitSender?>
    /// Finished by `close()`: the batch timer and the backoff wake end.
    private let timersStop: AsyncStream<Void>
    private let timersStopContinuation: AsyncStream<Void>.Continuation

    init(queue: any HitQueue, events: EventsClient, settings: Settings, clock: any SDKClock, logger: Logger,
         visitorDocuments: (pending: PendingVisitorDocuments, store: FlagshipDatabase)? = nil) {
        let store = TrackingStore(hits: queue)
        let callbacks = DeliveryCallbacks(limit: settings.pendingActivateCallbacksLimit)
        // The writer tells the sender of hits ready to send; the sender holds the writer, so the
        // writer holds the sender weakly.
        let readyHits = Locked<HitSender?>(nil)
        let backpressure = Backpressure(settings: .init(capacity: settings.capacity, maxWait: settings.backpressureWait),
                                        logger: logger, instrumentation: settings.instrumentation)
        let committedHits = queue.claimsWhenSaving && settings.sends && settings.strategy == .CONTINUOUS_CACHING
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
    }

    deinit {
        // A manager dropped without `close()`: its loops end.
        timersStopContinuation.finish()
        sender.finish()
    }

    // MARK: Start: replay what earlier runs left

    /// Deletes expired hits, counts what earlier runs left, starts sending it oldest first, and
    /// starts the lifecycle task. Once per SDK start, whatever the number of visitors.
    func start() {
        let first = lifecycle.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started && !state.closed
        }
        guard first else { return }
        store.async { [store, writer, sender, lifecycle, clock, logger] in
            store.hits.loadCached(now: clock.now().unixMilliseconds)
            let expired = writer.deleteExpired()
            let waiting = (try? store.hits.count()) ?? 0
            lifecycle.withLock {
                $0.cachedAtStart = waiting
                $0.waiting = waiting
            }
            if waiting > 0 { logger.info("Replaying \(waiting) cached hit(s) left by an earlier run, oldest first") }
            if expired > 0 || waiting > 0 { sender.requestFlush() }
        }
        // The task holds the writer and the sender, not the manager: a manager dropped without
        // `close()` ends it from `deinit`.
        let task = Task { [writer, sender, timersStop, clock, interval = settings.batchInterval] in
            await withDiscardingTaskGroup { group in
                group.addTask { await sender.run() }
                group.addTask {
                    await withDiscardingTaskGroup { timers in
                        timers.addTask { await Self.batchTimer(every: interval, clock: clock, writer: writer, sender: sender) }
                        timers.addTask { await sender.runWakes() }
                        for await _ in timersStop {}
                        timers.cancelAll()
                    }
                }
            }
        }
        lifecycle.withLock { $0.task = task }
    }

    /// Each interval: the periodic pool written, expired hits deleted, a batch sent.
    private static func batchTimer(every interval: TimeInterval, clock: any SDKClock, writer: HitWriter, sender: HitSender) async {
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

    private func refusedInTransaction() -> FlagshipError {
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

    // MARK: Closing

    func close() async {
        await close(until: clock.now().addingTimeInterval(settings.closeDeadline))
    }

    /// Stops the timers, writes what was accepted, sends one last round, releases the claims and
    /// counts what waits, all before `deadline` on the SDK's clock: past it, whatever still holds
    /// the store or the network (a server that never answers, a store another process keeps
    /// locked, a custom cache that never returns) is no longer waited for, and one log line says
    /// what was left.
    func close(until deadline: Date) async {
        let (first, started) = lifecycle.withLock { state -> (Bool, Bool) in
            defer { state.closed = true }
            return (!state.closed, state.started)
        }
        guard first else {
            await withCheckedContinuation { continuation in
                let done = lifecycle.withLock { state -> Bool in
                    if !state.closeFinished { state.closeWaiters.append(continuation) }
                    return state.closeFinished
                }
                if done { continuation.resume() }
            }
            return
        }
        writer.close()
        // A sender waiting out the round spacing stops now: the last round below sends what waits.
        sender.close()
        timersStopContinuation.finish()
        // Sending ends a little before the deadline: the rest is left to record what is left.
        let sendsUntil = deadline.addingTimeInterval(-min(1, settings.closeDeadline / 5))
        // Every hit accepted before closing is written first (the store queue is serial). A store
        // that does not answer by the deadline holds everything after it: nothing else is tried.
        var storeAnswered = await store.run(until: deadline, clock: clock) { [writer] in
            writer.drainAll()
            return true
        } != nil
        // The last round looks in the table as an interval's round does: rows this instance did
        // not write (an app's own transaction, another process) are sent too.
        writer.claimsMayHaveLapsed()
        // The last round runs in the sender's loop, which `start()` started.
        if storeAnswered, started, await sender.waitForIdle(until: sendsUntil) {
            if await !sender.finalRound(until: sendsUntil) {
                // Past the deadline: the send under way is cancelled with its request.
                lifecycle.withLock { $0.task }?.cancel()
            }
        }
        let counted = !storeAnswered ? nil : await store.run(until: deadline, clock: clock) { [writer, logger, queue = store.hits] () -> (Int, Int) in
            writer.writeBeforeClosing()
            do {
                try queue.releaseClaims()
            } catch {
                logger.error("Claims on cached hits could not be released (\(error)): they lapse by themselves")
            }
            let count = (try? queue.count()) ?? 0
            // Rows of an in-memory cache, or of a file no longer at the store path, end with this
            // process: they are lost, never waiting.
            return queue.waitingHitsSurvive ? (count, 0) : (0, count)
        }
        storeAnswered = counted != nil
        // Past the deadline with the store still busy: hits not yet in the cache are not
        // confirmed; they are written still if the store frees before the process ends.
        let unwritten = writer.unwritten()
        let unconfirmed = storeAnswered ? 0 : unwritten.uncommitted
        let waiting = counted?.0 ?? 0
        let stranded = counted?.1 ?? 0
        lifecycle.withLock { state in
            if let counted { state.waiting = counted.0 }
            state.lostAtClose += unwritten.inMemory + stranded + unconfirmed
        }
        let lostNow = unwritten.inMemory + stranded + unconfirmed
        if lostNow > 0 { settings.instrumentation?.hitsGoneUnsent(.lost, count: lostNow) }
        let unsaved = writer.unsavedVisitorDocuments
        if unsaved > 0 {
            logger.error("\(unsaved) visitor document(s) are not in the visitor cache at close: the next start fetches those visitors' flags again")
        }
        if !storeAnswered {
            logger.error("Closed at its deadline (\(Self.describe(settings.closeDeadline))) with the hit cache still busy (locked by another process, or a custom cache that has not returned): \(unconfirmed + unwritten.inMemory) accepted hit(s) not yet in it are counted as lost; hits already cached stay there for the next start")
        } else {
            if waiting > 0 { logger.info("\(waiting) unsent hit(s) stay in the hit cache: the next start sends them") }
            if unwritten.inMemory > 0 { logger.error("\(unwritten.inMemory) unsent hit(s) are lost: the hit cache could not take them") }
            if stranded > 0 {
                logger.error("\(stranded) unsent hit(s) are lost: they are in a hit cache no restart finds (in memory, or in a file deleted or replaced while the SDK ran)")
            }
        }
        await endLifecycle(until: deadline)
        let waiters = lifecycle.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closeFinished = true
            defer { state.closeWaiters.removeAll() }
            return state.closeWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Ends the lifecycle task: no signal comes any more, so the sender's loop ends after its
    /// round; one still sending is cancelled (its request with it). Waited for until `deadline`
    /// at most: a child held by a custom cache that never returns is left to end by itself.
    private func endLifecycle(until deadline: Date) async {
        sender.abandon()
        sender.finish()
        guard let task = lifecycle.withLock({ $0.task }) else { return }
        if sender.isRunning { task.cancel() }
        _ = await firstOf(deadline: deadline, clock: clock) { (finish: @escaping @Sendable (Bool) -> Void) in
            Task {
                await task.value
                finish(true)
            }
        }
    }

    // MARK: For the SDK, the CLI and tests

    /// Returns once what was accepted is written, the start's replay ran, and no send is under
    /// way or due (sending stopped by the backoff counts as done).
    func waitUntilIdle() async {
        await store.run { [writer] in writer.drainAll() }
        await sender.waitForIdle()
    }

    /// The task whose children are the sender's loop, the batch timer and the backoff wake (from
    /// `start()`), for tests that check it ends with `close()`.
    var lifecycleTask: Task<Void, Never>? {
        lifecycle.withLock { $0.task }
    }

    /// Returns once everything accepted before the call is written.
    func waitForWrites() async {
        await store.run { [writer] in writer.drainAll() }
    }

    /// The counts so far; `waiting` counted now, or, once closed, as `close()` left it.
    func statistics() async -> TrackingStatistics {
        if !lifecycle.withLock({ $0.closeFinished }) {
            let waiting = await store.run { [queue = store.hits] in (try? queue.count()) ?? 0 }
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
        let closeWaiters = lifecycle.withLock { $0.closeWaiters.count }
        return TrackingMemoryFootprint(
            ingress: written.ingress, unwritten: written.unwritten, activateCallbacks: callbacks.count,
            waiters: sender.idleWaiterCount + closeWaiters, purging: written.purging)
    }

    static func describe(_ interval: TimeInterval) -> String {
        interval >= 3600 && interval.truncatingRemainder(dividingBy: 3600) == 0
            ? "\(Int(interval / 3600)) h" : "\(Int(interval)) s"
    }
}
