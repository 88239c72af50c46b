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
    func trackDurably(_ hit: OutgoingHit, committed: Bool = false) async throws(FlagshipError) {
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
    /// Hits lost: the cache could not take them and they were still unsent at close, they waited
    /// in a cache no restart finds, they were dropped past the memory bound, or, nobody awaiting
    /// them, refused past the ingress cap; and, when close's deadline found the store busy, the
    /// accepted hits not yet in it.
    package var lost = 0
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

/// The tracking manager (SDK.md, "Tracking manager").
///
/// - **Accepting** never blocks on I/O: a hit joins an in-memory ingress under a lock. Under
///   continuous caching, a serial store queue writes whatever has gathered in one transaction
///   (group commit), then says so to whoever awaits durability; under periodic caching, hits wait
///   in a bounded pool written to the cache at each interval.
/// - **Sending** is one task at a time: it claims the oldest page of activates (100 at most per
///   request), then of hits, sends it, and records the outcome in one transaction; it goes on
///   while pages come full, so a restart replays everything oldest first. It starts when the pool
///   reaches `poolMaxSize`, at each interval, at once for an activate, and at start (replay).
/// - **Failing**: a retryable answer closes a gate for an exponential backoff with jitter (1 s
///   doubling to 5 min, `Retry-After` as a floor), reset by a success; nothing is sent before
///   it opens, so there is never a tight loop. Refused hits are dropped with an error log.
final class TrackingManager: HitTracking {
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
        /// Hits waiting for the group commit at most, past which a hit nobody awaits (a flag
        /// read's activate, a fire-and-forget `sendHit`) is refused, counted as lost, rather than
        /// making its caller wait for the disk: memory stays bounded. Awaited hits (`try await
        /// sendHit`) are always taken: their callers wait for the commit, which bounds them.
        var ingressCap = 20_000
        /// Exposure callbacks kept for activates not yet delivered, at most.
        var pendingActivateCallbacksLimit = 10_000
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

        init() {}

        init(_ config: FSTrackingManagerConfig) {
            poolMaxSize = config.poolMaxSize
            batchInterval = config.batchIntervalTimer
            strategy = config.strategy
            hitLifetime = config.hitLifetime
        }
    }

    private struct Accepted {
        let outgoing: OutgoingHit
        /// Its cache document, made on the caller's thread for a hit; `nil` for an activate, made
        /// by the writer: a flag read that reports an exposure does no more than it must.
        let document: String?
        let durable: (@Sendable (Result<Void, FlagshipError>) -> Void)?

        var hit: CachedHit {
            document.map { CachedHit(outgoing, document: $0) } ?? CachedHit(outgoing)
        }
    }

    private enum PageOutcome {
        case empty, partial, full, failed
    }

    private struct State {
        /// Continuous caching: accepted, waiting for the next group commit.
        var ingress = ChunkedQueue<Accepted>()
        /// Hits the group commit under way is writing: neither in the ingress nor yet in the cache.
        var writing = 0
        /// Hits refused since the ingress reached its cap (logged when it starts, told when it ends).
        var refusedAtCap = 0
        var drainScheduled = false
        /// Accepted but not in the cache: the periodic pool, or hits the cache failed to take.
        var unwritten: [OutgoingHit] = []
        /// Ids of unwritten hits being sent, or being written to the cache: taken by one, left by the other.
        var unwrittenInFlight: Set<String> = []
        /// The cache refused the last write: later refusals are not logged again until it recovers.
        var cacheWriteFailing = false
        /// Hits dropped from memory since the cache began refusing writes, told when it recovers.
        var droppedWhileFailing = 0
        /// The endpoints whose cached hits could not be claimed last time (logged once until they can).
        var cacheReadFailing: Set<HitEndpoint> = []
        /// Deleting expired hits failed last time (logged once until it works again).
        var expiryFailing = false
        /// Writing visitor documents failed last time (logged once until it works again).
        var visitorWritesFailing = false
        /// Visitor documents went to a file deleted or replaced while open (logged once).
        var visitorFileGoneLogged = false
        /// Hits accepted since the last send started: the pool size that triggers a batch.
        var poolCount = 0
        var activateCallbacks: [String: @Sendable () -> Void] = [:]
        var senderRunning = false
        var flushRequested = false
        /// The sender waits out `roundSpacing` before its next round.
        var spacing = false
        /// Backoff: nothing is sent before this time.
        var retryAt: Date?
        var backoff: Backoff
        var timer: Task<Void, Never>?
        /// The sender: one task from `start()` to `close()`, woken by `flushSignal`.
        var sender: Task<Void, Never>?
        var wake: Task<Void, Never>?
        var started = false
        var closed = false
        /// Set while `close()` sends its last batch, which ignores the backoff gate.
        var finalFlush = false
        var closeFinished = false
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        /// Told when the sender stops; each is safe to call more than once.
        var idleWaiters: [@Sendable () -> Void] = []
        var statistics = TrackingStatistics()
        /// Consent withdrawals whose deletion has not run yet, by visitor: how many, and the ids of
        /// the visitor's hits accepted since, which the deletion must spare.
        var purging: [String: (pending: Int, acceptedSince: Set<String>)] = [:]
    }

    let settings: Settings
    private let queue: any HitQueue
    private let events: EventsClient
    private let clock: any SDKClock
    private let logger: Logger
    private let storeQueue = DispatchQueue(label: "io.flagship.tracking.store")
    private let state: Locked<State>
    /// Why a hit written to the cache is still not durable, when the store fell back to memory.
    private let inMemoryOnly: String?
    /// The default visitor cache's documents waiting for the group commit, and its store.
    private let visitorDocuments: (pending: PendingVisitorDocuments, store: FlagshipDatabase)?
    /// Wakes the sender. At most one signal waits: a flush asked for while one is pending is the
    /// same flush (`requestFlush` signals only when it marks the sender running).
    private let flushSignals: AsyncStream<Void>
    private let flushSignal: AsyncStream<Void>.Continuation

    init(queue: any HitQueue, events: EventsClient, settings: Settings, clock: any SDKClock, logger: Logger,
         visitorDocuments: (pending: PendingVisitorDocuments, store: FlagshipDatabase)? = nil) {
        self.queue = queue
        self.visitorDocuments = visitorDocuments
        (flushSignals, flushSignal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.events = settings.requestTimeout.map { events.withTimeout($0) } ?? events
        self.settings = settings
        self.clock = clock
        self.logger = logger
        inMemoryOnly = queue.keepsHitsOnDisk
            ? nil : "the hit cache runs in memory, or its file can only be read: the hit would not survive a restart"
        state = Locked(State(backoff: Backoff(base: settings.backoffBase, cap: settings.backoffCap)))
    }

    // MARK: Start: replay what earlier runs left

    /// Deletes expired hits, counts what earlier runs left, starts sending it oldest first, and
    /// starts the batch timer. Once per SDK start, whatever the number of visitors.
    func start() {
        let first = state.withLock { state -> Bool in
            defer { state.started = true }
            return !state.started && !state.closed
        }
        guard first else { return }
        storeQueue.async { [self] in
            queue.loadCached(now: clock.now().unixMilliseconds)
            let expired = deleteExpired()
            let waiting = (try? queue.count()) ?? 0
            state.withLock {
                $0.statistics.cachedAtStart = waiting
                $0.statistics.waiting = waiting
            }
            if waiting > 0 { logger.info("Replaying \(waiting) cached hit(s) left by an earlier run, oldest first") }
            if expired > 0 || waiting > 0 { requestFlush() }
        }
        let interval = settings.batchInterval
        let timer = Task { [weak self, clock] in
            while !Task.isCancelled {
                do {
                    try await clock.sleep(until: clock.now().addingTimeInterval(interval))
                } catch {
                    return
                }
                guard let self else { return }
                await self.tick()
            }
        }
        // The one owner of claim, send, settle and backoff, for the whole life of the manager.
        let sender = Task { [weak self, flushSignals] in
            for await _ in flushSignals {
                guard let self else { return }
                await self.senderLoop()
            }
        }
        state.withLock { state in
            state.timer = timer
            state.sender = sender
        }
    }

    /// Each interval: the periodic pool written to the cache, expired hits deleted, a batch sent.
    private func tick() async {
        await onStore { [self] in
            writeUnwritten()
            // Visitor documents a failed write put back are tried again.
            if visitorDocuments?.pending.isEmpty == false { drain() }
            _ = deleteExpired()
        }
        requestFlush()
    }

    // MARK: Accepting

    func track(_ hit: OutgoingHit, onDelivered: (@Sendable () -> Void)?,
               durable: (@Sendable (Result<Void, FlagshipError>) -> Void)?, committed: Bool) {
        enum Next { case refused, overCap(first: Bool), drain, accepted(kick: Bool, overflow: Bool), none }
        var callbackDropped = false
        // A hit to be committed at once goes through the group commit, as under continuous caching.
        let pooled = settings.strategy == .PERIODIC_CACHING && !committed
        // A hit's document is made here, on the caller's thread: the writer's one thread only
        // writes. An activate's, on the writer: it comes from a flag read, which must not wait.
        let document = pooled || hit.isActivate ? nil : hit.cacheDocumentText
        let next = state.withLock { state -> Next in
            guard !state.closed else { return .refused }
            // Nobody waits for this hit, and the disk is far behind: refused, never waited for.
            if durable == nil, !pooled, state.ingress.count >= settings.ingressCap {
                state.refusedAtCap += 1
                state.statistics.lost += 1
                return .overCap(first: state.refusedAtCap == 1)
            }
            if !state.purging.isEmpty, state.purging[hit.visitorId] != nil {
                state.purging[hit.visitorId]?.acceptedSince.insert(hit.id)
            }
            if let onDelivered {
                if state.activateCallbacks.count < settings.pendingActivateCallbacksLimit {
                    state.activateCallbacks[hit.id] = onDelivered
                } else {
                    callbackDropped = true
                }
            }
            guard pooled else {
                state.ingress.append(Accepted(outgoing: hit, document: document, durable: durable))
                guard !state.drainScheduled else { return .none }
                state.drainScheduled = true
                return .drain
            }
            state.unwritten.append(hit)
            if !hit.isActivate { state.poolCount += 1 }
            return .accepted(kick: hit.isActivate || state.poolCount >= settings.poolMaxSize,
                             overflow: state.unwritten.count == settings.memoryLimit)
        }
        if callbackDropped {
            logger.warning("onVisitorExposed will not be called for activate '\(hit.id)': \(settings.pendingActivateCallbacksLimit) activates already wait for delivery")
        }
        switch next {
        case .refused:
            logger.error("\(hit.type) hit not sent: the SDK was closed")
            durable?(.failure(.closed))
        case .overCap(let first):
            if first {
                logger.error("Hits arrive faster than the hit cache takes them (\(settings.ingressCap) wait for it): hits nobody awaits are dropped, counted as lost, until it catches up; `try await sendHit` waits instead")
            }
        case .drain:
            storeQueue.async { [self] in drain() }
        case .accepted(let kick, let overflow):
            durable?(.success(()))
            // A pool that outgrows memory is written before the interval.
            if overflow { storeQueue.async { [self] in writeUnwritten() } }
            if kick { requestFlush() }
        case .none:
            break
        }
    }

    /// A visitor document joined the pending ones: the next group commit takes it, with the hits.
    func writeVisitorDocumentsSoon() {
        let schedule = state.withLock { state -> Bool in
            guard !state.drainScheduled else { return false }
            state.drainScheduled = true
            return true
        }
        if schedule { storeQueue.async { [self] in drain() } }
    }

    /// Group commit: writes everything that gathered in the ingress, and the visitor documents
    /// waiting, in one transaction, until both stay empty. Runs on the store queue.
    private func drain() {
        // Documents whose write failed wait for the next interval, not for the next loop.
        var documentsFailed = false
        while true {
            let (batch, refused) = state.withLock { state -> ([Accepted], Int) in
                let batch = state.ingress.removeFirst(upTo: settings.ingressLimit)
                state.writing = batch.count
                if batch.isEmpty { state.drainScheduled = false }
                // Room again: the refusals since the cap was reached are told, once.
                let refused = state.ingress.count < settings.ingressCap ? state.refusedAtCap : 0
                if refused > 0 { state.refusedAtCap = 0 }
                return (batch, refused)
            }
            if refused > 0 {
                logger.error("Hits waiting for the hit cache are below \(settings.ingressCap) again: \(refused) hit(s) nobody awaited were dropped meanwhile (counted as lost)")
            }
            let documents = documentsFailed ? [] : visitorDocuments?.pending.take() ?? []
            guard !batch.isEmpty || !documents.isEmpty else { return }
            let (saved, documentsError) = write(batch.map(\.hit), documents: documents)
            if !documents.isEmpty {
                documentsFailed = documentsError != nil
                settle(documents, error: documentsError)
            }
            guard !batch.isEmpty else { continue }
            let hits = batch.map(\.outgoing)
            var outcome: Result<Void, FlagshipError> = .success(())
            do {
                let evicted = try saved.get()
                if evicted > 0 {
                    state.withLock { $0.statistics.evicted += evicted }
                    logger.warning("Hit cache full: evicted the \(evicted) oldest unsent hit(s)")
                }
                if let inMemoryOnly { outcome = .failure(.hitNotCached(inMemoryOnly)) }
                // What waited in memory for the cache goes in now, not at the next interval.
                if cacheWritable() { writeUnwritten() }
            } catch {
                outcome = .failure(.hitNotCached(String(describing: error)))
                keepInMemory(hits, notWritten: hits.count, becauseOf: error)
            }
            for accepted in batch { accepted.durable?(outcome) }
            let kick = state.withLock { state -> Bool in
                state.writing = 0
                state.poolCount += hits.count(where: { !$0.isActivate })
                return hits.contains(where: \.isActivate) || state.poolCount >= settings.poolMaxSize
            }
            if kick { requestFlush() }
        }
    }

    private typealias PendingDocument = (record: VisitorRecord, version: Int)

    /// Writes hits and visitor documents: in one transaction when the hit queue is the `hits`
    /// table of the visitors' store, else the documents first in a transaction of their own.
    /// Returns the hits' outcome (how many were evicted) and the documents' error, if any.
    private func write(_ hits: [CachedHit], documents: [PendingDocument]) -> (hits: Result<Int, any Error>, documents: (any Error)?) {
        guard let visitorDocuments, !documents.isEmpty else {
            return (hits.isEmpty ? .success(0) : Result { try queue.save(hits) }, nil)
        }
        let store = visitorDocuments.store
        let records = documents.map(\.record)
        let writeDocuments: (Connection) throws -> Void = { try $0.visitors.save(records) }
        if let table = queue as? SQLiteHitQueue, table.isTable(of: store) {
            let saved = Result { try table.save(hits, alongside: writeDocuments) }
            return (saved, saved.failure)
        }
        var documentsError: (any Error)?
        do {
            guard store.opening.readOnly == nil else {
                throw StoreError.fileSystem(path: store.database.path, reason: "the database file is read, not written")
            }
            try store.database.write(writeDocuments)
        } catch {
            documentsError = error
        }
        return (hits.isEmpty ? .success(0) : Result { try queue.save(hits) }, documentsError)
    }

    /// The outcome of writing visitor documents: committed ones leave the pending set, failed
    /// ones wait again (tried at each interval), logged when writes start and stop failing.
    private func settle(_ documents: [PendingDocument], error: (any Error)?) {
        guard let visitorDocuments else { return }
        guard let error else {
            visitorDocuments.pending.committed(documents)
            let (recovered, fileGone) = state.withLock { state -> (Bool, Bool) in
                defer { state.visitorWritesFailing = false }
                let fileGone = !visitorDocuments.store.fileIsInPlace && !state.visitorFileGoneLogged
                if fileGone { state.visitorFileGoneLogged = true }
                return (state.visitorWritesFailing, fileGone)
            }
            if recovered { logger.info("Visitor documents can be written to the visitor cache again") }
            if fileGone {
                logger.error("Visitors cached from now on go to a database file that no longer exists (\(visitorDocuments.store.database.path) was deleted or moved while open): they will not survive a restart, which creates a new file")
            }
            return
        }
        visitorDocuments.pending.putBack(documents)
        if state.withLock({ state in defer { state.visitorWritesFailing = true }; return !state.visitorWritesFailing }) {
            logger.error("\(documents.count) visitor document(s) could not be written to the visitor cache (\(error)): the newest of each visitor waits in memory, read by lookups, and is tried again at each interval")
        } else {
            logger.debug("Visitor documents still could not be written: \(error)")
        }
    }

    /// Hits the cache could not take: sent from memory, the oldest dropped past the limit (counted
    /// as lost). Logged when the cache starts failing and when dropping starts, not per hit: a
    /// full disk under a flood of hits must not flood the log too.
    private func keepInMemory(_ hits: [OutgoingHit], notWritten: Int, becauseOf error: any Error) {
        let (firstFailure, drop) = state.withLock { state -> (Bool, MemoryDrop) in
            let firstFailure = !state.cacheWriteFailing
            state.cacheWriteFailing = true
            state.unwritten += hits
            return (firstFailure, dropPastTheMemoryLimit(&state))
        }
        if firstFailure {
            logger.error("\(notWritten) hit(s) could not be written to the hit cache (\(error)): they are kept in memory and sent, but would not survive a restart. Until the cache can be written again, hits wait in memory (at most \(settings.memoryLimit))")
        } else {
            logger.debug("\(notWritten) hit(s) kept in memory: the hit cache still cannot be written (\(error))")
        }
        log(drop)
    }

    private struct MemoryDrop {
        var count = 0
        var first = false
    }

    /// While the cache refuses writes, keeps the `memoryLimit` newest hits in memory by dropping
    /// the oldest (counted as lost). An old hit being sent is not dropped under the sender, nor
    /// a newer one in its place: if its send fails, it is dropped when it is back.
    private func dropPastTheMemoryLimit(_ state: inout State) -> MemoryDrop {
        let excess = state.unwritten.count - settings.memoryLimit
        guard state.cacheWriteFailing, excess > 0 else { return MemoryDrop() }
        let dropped = Set(state.unwritten.prefix(excess).filter { !state.unwrittenInFlight.contains($0.id) }.map(\.id))
        guard !dropped.isEmpty else { return MemoryDrop() }
        state.unwritten.removeAll { dropped.contains($0.id) }
        for id in dropped { state.activateCallbacks[id] = nil }
        let first = state.droppedWhileFailing == 0
        state.droppedWhileFailing += dropped.count
        state.statistics.lost += dropped.count
        return MemoryDrop(count: dropped.count, first: first)
    }

    private func log(_ drop: MemoryDrop) {
        if drop.first {
            logger.error("The oldest hits kept in memory are being dropped: more than \(settings.memoryLimit) wait while the hit cache cannot be written")
        } else if drop.count > 0 {
            logger.debug("\(drop.count) more unsent hit(s) dropped from memory")
        }
    }

    /// A write to the cache succeeded: if it was failing, says so (with what was dropped meanwhile).
    /// Returns whether the cache just recovered.
    private func cacheWritable() -> Bool {
        guard let dropped = state.withLock({ state -> Int? in
            guard state.cacheWriteFailing else { return nil }
            defer { state.droppedWhileFailing = 0 }
            state.cacheWriteFailing = false
            return state.droppedWhileFailing
        }) else { return false }
        logger.info("The hit cache can be written again\(dropped > 0 ? ": \(dropped) unsent hit(s) were dropped meanwhile" : "")")
        return true
    }

    /// Periodic caching: the pool written to the cache (runs on the store queue).
    private func writeUnwritten() {
        // Taken (as in flight) while being written: a sender that took them from memory meanwhile
        // would send hits that are then also in the cache, unclaimed, and sent a second time.
        let pending = state.withLock { state in
            let pending = state.unwritten.filter { !state.unwrittenInFlight.contains($0.id) }
            state.unwrittenInFlight.formUnion(pending.map(\.id))
            return pending
        }
        guard !pending.isEmpty else { return }
        let written = Set(pending.map(\.id))
        do {
            let evicted = try queue.save(pending.map(CachedHit.init))
            state.withLock { state in
                state.unwritten.removeAll { written.contains($0.id) }
                state.unwrittenInFlight.subtract(written)
                state.statistics.evicted += evicted
            }
            if evicted > 0 { logger.warning("Hit cache full: evicted the \(evicted) oldest unsent hit(s)") }
            _ = cacheWritable()
        } catch {
            state.withLock { $0.unwrittenInFlight.subtract(written) }
            keepInMemory([], notWritten: pending.count, becauseOf: error)
        }
    }

    /// Deletes the hits past their lifetime, logging how many (runs on the store queue).
    private func deleteExpired() -> Int {
        let boundary = clock.now().unixMilliseconds - Int64((settings.hitLifetime * 1000).rounded())
        var expired = 0
        do {
            expired = try queue.deleteExpired(createdBefore: boundary)
            if state.withLock({ state in defer { state.expiryFailing = false }; return state.expiryFailing }) {
                logger.info("Expired hits can be deleted again")
            }
        } catch {
            // Tried at every interval: a disk that stays full must not add a line each time.
            if state.withLock({ state in defer { state.expiryFailing = true }; return !state.expiryFailing }) {
                logger.error("Expired hits could not be deleted (\(error)): tried again at each interval, logged again once it works")
            } else {
                logger.debug("Expired hits still could not be deleted: \(error)")
            }
        }
        let inMemory = state.withLock { state -> Int in
            let before = state.unwritten.count
            state.unwritten.removeAll { $0.createdAt < boundary && !state.unwrittenInFlight.contains($0.id) }
            return before - state.unwritten.count
        }
        expired += inMemory
        if expired > 0 {
            state.withLock { $0.statistics.expired += expired }
            logger.warning("Deleted \(expired) unsent hit(s) older than \(Self.describe(settings.hitLifetime))")
        }
        return expired
    }

    func purge(visitorId: String) {
        state.withLock { state in
            state.unwritten.removeAll { $0.visitorId == visitorId && !$0.isConsentHit && !state.unwrittenInFlight.contains($0.id) }
            state.purging[visitorId, default: (0, [])].pending += 1
        }
        // The deletion runs after the writes queued before it, but a group commit under way may
        // also write hits accepted after this call (consent given again at once): those are spared.
        storeQueue.async { [self] in
            let spared = state.withLock { $0.purging[visitorId]?.acceptedSince ?? [] }
            do {
                let deleted = try erase(visitorId: visitorId, keeping: spared)
                if deleted > 0 { logger.info("Consent withdrawn: deleted \(deleted) unsent hit(s) of visitor '\(visitorId)'") }
            } catch {
                logger.error("Data of visitor '\(visitorId)' could not be deleted after consent was withdrawn: \(error)")
            }
            state.withLock { state in
                state.purging[visitorId]?.pending -= 1
                if state.purging[visitorId]?.pending == 0 { state.purging[visitorId] = nil }
            }
        }
    }

    /// Consent withdrawn: the visitor's hits (but `keeping` and its consent hits) and, with the
    /// default visitor cache, its row: one transaction when both are tables of one store. Runs on
    /// the store queue, so after any group commit that took the visitor's last document.
    private func erase(visitorId: String, keeping: Set<String>) throws -> Int {
        guard let store = visitorDocuments?.store, store.opening.readOnly == nil else {
            return try queue.purge(visitorId: visitorId, keeping: keeping)
        }
        if let table = queue as? SQLiteHitQueue, table.isTable(of: store) {
            return try table.purge(visitorId: visitorId, keeping: keeping) { try $0.visitors.delete(visitorId: visitorId) }
        }
        try store.write { try $0.visitors.delete(visitorId: visitorId) }
        try store.database.eraseWALHistory()
        return try queue.purge(visitorId: visitorId, keeping: keeping)
    }

    // MARK: Sending

    /// Starts the sender unless it runs (then it goes round once more) or the backoff gate is closed.
    private func requestFlush() {
        guard settings.sends else { return }
        let start = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            if state.senderRunning {
                state.flushRequested = true
                return false
            }
            if let retryAt = state.retryAt, clock.now() < retryAt { return false }
            state.senderRunning = true
            state.flushRequested = false
            return true
        }
        guard start else { return }
        flushSignal.yield()
    }

    private func senderLoop() async {
        while true {
            let started = clock.now()
            await flushRound(until: nil)
            let again = state.withLock { state -> Bool in
                let gateOpen = state.retryAt.map { clock.now() >= $0 } ?? true
                if state.flushRequested && gateOpen && !state.closed {
                    state.flushRequested = false
                    return true
                }
                state.senderRunning = false
                state.flushRequested = false
                return false
            }
            // Asked again while this round ran: the next one waits out the spacing, so that what
            // keeps arriving gathers into it.
            if again, await !waitOutSpacing(since: started) {
                state.withLock { $0.senderRunning = false }
                break
            }
            if !again { break }
        }
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        for waiter in waiters { waiter() }
    }

    /// Waits until `roundSpacing` has passed since `started`; `false` when the sender must stop
    /// instead (the SDK is closing). `close()` cancels the sender in this wait: the flag it reads
    /// is set under the lock that closing takes, and its own last round sends what waits.
    private func waitOutSpacing(since started: Date) async -> Bool {
        let next = started.addingTimeInterval(settings.roundSpacing)
        guard settings.roundSpacing > 0, clock.now() < next else { return true }
        guard state.withLock({ state in state.spacing = !state.closed; return state.spacing }) else { return false }
        let slept: Bool
        do {
            try await clock.sleep(until: next)
            slept = true
        } catch {
            slept = false
        }
        return state.withLock { state in
            state.spacing = false
            // The round about to start takes what a flush asked meanwhile wanted sent.
            state.flushRequested = false
            return slept && !state.closed
        }
    }

    /// Sends pages, activates first, until both run dry, a send fails, or `deadline` passes.
    private func flushRound(until deadline: Date?) async {
        state.withLock { $0.poolCount = 0 }
        while true {
            if let deadline, clock.now() >= deadline { return }
            let activates = await sendPage(.activate)
            if activates == .failed { return }
            if let deadline, clock.now() >= deadline { return }
            let hits = await sendPage(.events)
            if hits == .failed { return }
            if activates != .full && hits != .full { return }
        }
    }

    private func sendPage(_ endpoint: HitEndpoint) async -> PageOutcome {
        let stop = state.withLock { $0.closed && !$0.finalFlush }
        guard !stop else { return .failed }
        let limit = endpoint == .activate ? EventsClient.maxActivatesPerRequest : settings.pageSize
        let claimedAt = clock.now().unixMilliseconds
        var claimed: [OutgoingHit] = []
        do {
            claimed = try await onStore { [queue] in try queue.claim(endpoint, limit: limit, now: claimedAt) }
            let recovered = state.withLock { state -> Bool in
                state.cacheReadFailing.remove(endpoint) != nil
            }
            if recovered { logger.info("Cached hits can be read for sending again") }
        } catch {
            // Hits waiting in memory still go: a disk that fails must not hold them back too.
            if state.withLock({ $0.cacheReadFailing.insert(endpoint).inserted }) {
                logger.error("Cached hits could not be read for sending (\(error)): only hits waiting in memory are sent until they can")
            }
        }
        let fromMemory = state.withLock { state -> [OutgoingHit] in
            var taken: [OutgoingHit] = []
            for hit in state.unwritten where taken.count < limit - claimed.count
                && hit.isActivate == (endpoint == .activate) && !state.unwrittenInFlight.contains(hit.id) {
                taken.append(hit)
            }
            state.unwrittenInFlight.formUnion(taken.map(\.id))
            return taken
        }
        let batch = claimed + fromMemory
        guard !batch.isEmpty else { return .empty }

        let sentAt = clock.now().unixMilliseconds
        let results = endpoint == .activate
            ? await events.sendActivates(batch, now: sentAt)
            : await events.sendHits(batch, now: sentAt)
        // A send that outlived `close()` (its deadline passed, the transport was shut down): close
        // released the claims and counted what waits, so the outcome is left alone; a delivery
        // the server confirmed is still sent again by the next start (at least once).
        guard !state.withLock({ $0.closeFinished }) else { return .failed }
        let failed = record(results, of: batch)

        let cachedIds = Set(claimed.map(\.id))
        var settlement = HitSettlement()
        var callbacks: [@Sendable () -> Void] = []
        let drop = state.withLock { state -> MemoryDrop in
            settlement.nextAttemptAt = state.retryAt?.unixMilliseconds
            var done = Set<String>()
            for result in results {
                for id in result.hitIds {
                    switch result.outcome {
                    case .delivered:
                        if let callback = state.activateCallbacks.removeValue(forKey: id) { callbacks.append(callback) }
                        done.insert(id)
                        if cachedIds.contains(id) { settlement.delivered.append(id) }
                    case .rejected:
                        state.activateCallbacks[id] = nil
                        done.insert(id)
                        if cachedIds.contains(id) { settlement.rejected.append(id) }
                    case .retryLater:
                        if cachedIds.contains(id) { settlement.failed.append(id) }
                    }
                }
            }
            state.unwritten.removeAll { done.contains($0.id) }
            state.unwrittenInFlight.subtract(fromMemory.map(\.id))
            // Hits back from a failed send count toward the memory limit again.
            return dropPastTheMemoryLimit(&state)
        }
        log(drop)
        do {
            try await onStore { [queue, settlement] in try queue.settle(settlement) }
        } catch {
            logger.error("The outcome of sending \(batch.count) hit(s) could not be recorded in the hit cache (\(error)): delivered ones may be sent again")
        }
        for callback in callbacks { callback() }
        // Periodic pool hits that failed are written now: the interval's write skipped them while
        // they were in flight, and they would otherwise wait unwritten for a second interval.
        if failed, !fromMemory.isEmpty, settings.strategy == .PERIODIC_CACHING {
            await onStore { [self] in writeUnwritten() }
        }
        if failed { return .failed }
        return batch.count >= limit ? .full : .partial
    }

    /// Logs and counts the outcomes, and moves the backoff: closed after a retryable failure,
    /// reset by a success. Returns whether a send failed.
    private func record(_ results: [SendResult], of batch: [OutgoingHit]) -> Bool {
        let types = Dictionary(batch.map { ($0.id, $0.type) }, uniquingKeysWith: { first, _ in first })
        var delivered = 0
        var failure: (reason: String, count: Int, retryAfter: TimeInterval?)?
        for result in results {
            switch result.outcome {
            case .delivered:
                delivered += result.hitIds.count
            case .rejected(let status):
                let kinds = Set(result.hitIds.compactMap { types[$0] }).sorted().joined(separator: ", ")
                logger.error("\(result.hitIds.count) \(kinds) hit(s) refused with status \(status)\(result.rejectionReason.map { " (\($0))" } ?? ""): dropped")
            case .retryLater(let reason):
                let retryAfter = max(failure?.retryAfter ?? 0, result.retryAfter ?? 0)
                failure = (reason, (failure?.count ?? 0) + result.hitIds.count, retryAfter > 0 ? retryAfter : nil)
            }
        }
        let rejected = results.reduce(0) { $0 + ($1.outcome.isRejection ? $1.hitIds.count : 0) }
        let now = clock.now()
        let unit = settings.jitter()
        let retry = state.withLock { state -> (delay: TimeInterval, attempt: Int)? in
            state.statistics.delivered += delivered
            state.statistics.rejected += rejected
            guard let failure else {
                if delivered > 0 {
                    state.backoff.reset()
                    state.retryAt = nil
                }
                return nil
            }
            state.statistics.failedRequests += 1
            let delay = state.backoff.nextDelay(retryAfter: failure.retryAfter, unit: unit)
            state.retryAt = now.addingTimeInterval(delay)
            return (delay, state.backoff.failures)
        }
        guard let failure, let retry else { return false }
        logger.warning("\(failure.count) hit(s) not sent (\(failure.reason)): kept, next try in \(retry.delay.millisecondsText) (failure \(retry.attempt) in a row)")
        scheduleWake(after: retry.delay)
        return true
    }

    /// Sends again once the backoff gate opens.
    private func scheduleWake(after delay: TimeInterval) {
        let deadline = clock.now().addingTimeInterval(delay)
        let wake = Task { [weak self, clock] in
            do {
                try await clock.sleep(until: deadline)
            } catch {
                return
            }
            self?.requestFlush()
        }
        let previous = state.withLock { state -> Task<Void, Never>? in
            defer { state.wake = wake }
            return state.wake
        }
        previous?.cancel()
        if state.withLock({ $0.closed }) { wake.cancel() }
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
        let (first, spacingSender) = state.withLock { state -> (Bool, Task<Void, Never>?) in
            defer { state.closed = true }
            return (!state.closed, state.spacing ? state.sender : nil)
        }
        // A sender waiting out the round spacing ends now: the last round below sends what waits.
        spacingSender?.cancel()
        guard first else {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state -> Bool in
                    if !state.closeFinished { state.closeWaiters.append(continuation) }
                    return state.closeFinished
                }
                if done { continuation.resume() }
            }
            return
        }
        let tasks = state.withLock { state in [state.timer, state.wake] }
        for task in tasks { task?.cancel() }
        // Sending ends a little before the deadline: the rest is left to record what is left.
        let sendsUntil = deadline.addingTimeInterval(-min(1, settings.closeDeadline / 5))
        // Every hit accepted before closing is written first (the store queue is serial). A store
        // that does not answer by the deadline holds everything after it: nothing else is tried.
        var storeAnswered = await queuedCall(on: storeQueue, until: deadline, clock: clock) { true } != nil
        if storeAnswered {
            await waitForSender(until: sendsUntil)
            state.withLock { $0.finalFlush = true }
            if settings.sends { await lastRound(until: sendsUntil) }
        }
        let counted = !storeAnswered ? nil : await queuedCall(on: storeQueue, until: deadline, clock: clock) { [self] () -> (Int, Int) in
            writeUnwritten()
            // Visitor documents a failed write put back get a last try.
            if visitorDocuments?.pending.isEmpty == false { drain() }
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
        let (unwritten, unconfirmed) = state.withLock { state -> (Int, Int) in
            state.finalFlush = false
            // Past the deadline with the store still busy: hits not yet in the cache are not
            // confirmed; they are written still if the store frees before the process ends.
            let unconfirmed = storeAnswered ? 0 : state.ingress.count + state.writing
            if let counted { state.statistics.waiting = counted.0 }
            state.statistics.lost += state.unwritten.count + (counted?.1 ?? 0) + unconfirmed
            return (state.unwritten.count, unconfirmed)
        }
        let waiting = counted?.0 ?? 0
        let stranded = counted?.1 ?? 0
        if let unsaved = visitorDocuments?.pending.count, unsaved > 0 {
            logger.error("\(unsaved) visitor document(s) are not in the visitor cache at close: the next start fetches those visitors' flags again")
        }
        if !storeAnswered {
            logger.error("Closed at its deadline (\(Self.describe(settings.closeDeadline))) with the hit cache still busy (locked by another process, or a custom cache that has not returned): \(unconfirmed + unwritten) accepted hit(s) not yet in it are counted as lost; hits already cached stay there for the next start")
        } else {
            if waiting > 0 { logger.info("\(waiting) unsent hit(s) stay in the hit cache: the next start sends them") }
            if unwritten > 0 { logger.error("\(unwritten) unsent hit(s) are lost: the hit cache could not take them") }
            if stranded > 0 {
                logger.error("\(stranded) unsent hit(s) are lost: they are in a hit cache no restart finds (in memory, or in a file deleted or replaced while the SDK ran)")
            }
        }
        await endSender(until: deadline)
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closeFinished = true
            defer { state.closeWaiters.removeAll() }
            return state.closeWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Ends the sender task: no signal comes any more, so it ends after its round; one still
    /// sending is cancelled (its request with it) and waited for until `deadline` at most.
    private func endSender(until deadline: Date) async {
        flushSignal.finish()
        guard let sender = state.withLock({ $0.sender }) else { return }
        if state.withLock({ $0.senderRunning }) { sender.cancel() }
        _ = await firstOf(deadline: deadline, clock: clock) { (finish: @escaping @Sendable (Bool) -> Void) in
            Task {
                await sender.value
                finish(true)
            }
        }
    }

    /// The last round of sends, which ignores the backoff gate, waited for until `deadline`: a
    /// send in flight then is abandoned (the runtime's transport shutdown cancels it).
    private func lastRound(until deadline: Date) async {
        let round = Task { [self] in await flushRound(until: deadline) }
        let finished = await firstOf(deadline: deadline, clock: clock) { (finish: @escaping @Sendable (Bool) -> Void) in
            Task {
                await round.value
                finish(true)
            }
        }
        // Past the deadline: the send under way is cancelled with its request.
        if finished == nil { round.cancel() }
    }

    /// Waits for the sender to finish its round, but not past `deadline`: a sender stuck behind
    /// a starved thread pool or a server that never answers must not hold `close()` (the claims
    /// keep the two apart anyway).
    private func waitForSender(until deadline: Date) async {
        _ = await firstOf(deadline: deadline, clock: clock) { (finish: @escaping @Sendable (Bool) -> Void) in
            let idle = state.withLock { state -> Bool in
                guard state.senderRunning else { return true }
                state.idleWaiters.append { finish(true) }
                return false
            }
            if idle { finish(true) }
        }
    }

    // MARK: For the SDK, the CLI and tests

    /// Returns once what was accepted is written, the start's replay ran, and no send is under
    /// way or due (sending stopped by the backoff counts as done).
    func waitUntilIdle() async {
        await onStore {}
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                guard state.senderRunning else { return true }
                state.idleWaiters.append { continuation.resume() }
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Returns once everything accepted before the call is written (the store queue is serial).
    func waitForWrites() async {
        await onStore {}
    }

    /// The counts so far; `waiting` counted now, or, once closed, as `close()` left it.
    func statistics() async -> TrackingStatistics {
        if state.withLock({ $0.closeFinished }) { return state.withLock { $0.statistics } }
        let waiting = await onStore { [queue] in (try? queue.count()) ?? 0 }
        return state.withLock { state in
            state.statistics.waiting = waiting + state.unwritten.count
            return state.statistics
        }
    }

    /// How many entries each in-memory structure holds now: what must stay flat however long
    /// the network fails (the hits themselves wait in the cache).
    func memoryFootprint() -> TrackingMemoryFootprint {
        state.withLock { state in
            TrackingMemoryFootprint(
                ingress: state.ingress.count, unwritten: state.unwritten.count,
                activateCallbacks: state.activateCallbacks.count,
                waiters: state.idleWaiters.count + state.closeWaiters.count, purging: state.purging.count)
        }
    }

    /// Runs blocking store work on the store queue, after everything queued before it.
    private func onStore<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            storeQueue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    private func onStore<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await queuedCall(on: storeQueue, work)
    }

    private static func describe(_ interval: TimeInterval) -> String {
        interval >= 3600 && interval.truncatingRemainder(dividingBy: 3600) == 0
            ? "\(Int(interval / 3600)) h" : "\(Int(interval)) s"
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

extension SendResult.Outcome {
    var isRejection: Bool {
        if case .rejected = self { return true }
        return false
    }
}
