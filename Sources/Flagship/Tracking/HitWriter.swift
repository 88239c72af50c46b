import FlagshipStore
import Foundation
import Logging

/// The writer: the one owner of what was accepted and is not yet in the cache.
///
/// Accepting never blocks on I/O: a hit joins an in-memory ingress under a lock. Under continuous
/// caching (and for hits awaited until `committed`), the store queue writes whatever has gathered,
/// with the default visitor cache's waiting documents, in one transaction (group commit), then
/// says so to whoever awaits durability; under periodic caching, hits wait in a bounded pool
/// written at each interval. What the cache cannot take waits in memory, the oldest dropped past
/// `memoryLimit`; the sender borrows from there too. The writer also expires old hits and erases
/// a visitor's when consent is withdrawn, on the same queue, so after every write before them.
final class HitWriter: Sendable {
    struct Accepted {
        let outgoing: OutgoingHit
        /// Its cache document, made on the caller's thread for a hit; `nil` for an activate, made
        /// by the writer: a flag read that reports an exposure does no more than it must.
        let document: String?
        let durable: (@Sendable (Result<Void, FlagshipError>) -> Void)?

        var hit: CachedHit {
            document.map { CachedHit(outgoing, document: $0) } ?? CachedHit(outgoing)
        }
    }

    /// What the writer counted, for the tracking statistics.
    struct Counts: Sendable, Equatable {
        var expired = 0
        var evicted = 0
        /// Refused past the ingress cap, or dropped past the memory bound.
        var lost = 0
        /// Consent withdrawals whose erasure failed when `erasuresWaitingLimit` already waited:
        /// not tried again.
        var erasuresAbandoned = 0
    }

    /// What was accepted and is not in the cache, when `close()` counts it.
    struct Unwritten: Sendable, Equatable {
        /// In the ingress, or in the group commit under way.
        var uncommitted = 0
        /// Held in memory: the periodic pool, or what the cache refused.
        var inMemory = 0
    }

    typealias PendingDocument = (record: VisitorRecord, version: Int)

    let settings: TrackingManager.Settings
    let store: TrackingStore
    let clock: any SDKClock
    let logger: Logger
    let callbacks: DeliveryCallbacks
    let state = Locked(State())
    /// Why a hit written to the cache is still not durable (the store fell back to memory, its
    /// file is read-only), as the store was at start.
    let inMemoryOnly: FSCacheError?
    /// The default visitor cache's documents waiting for the group commit, and its store.
    let visitorDocuments: (pending: PendingVisitorDocuments, store: FlagshipDatabase)?
    /// Where hits and visitor documents are written together: a shared store's queue, else the
    /// hit queue beside the default visitor cache's table.
    let keeper: any VisitorKeepingHitQueue
    /// Told of hits now waiting to be sent (committed, or pooled): how many hits, and whether
    /// there was an activate among them. The sender counts them toward its next batch.
    let ready: @Sendable (_ hits: Int, _ activate: Bool) -> Void
    /// Where committed hits wait for the sender, claimed, when the queue writes them claimed.
    let committedHits: CommittedHits?
    /// Told of the backlog after each group commit.
    let backpressure: Backpressure?
    /// The time hits are aged by for expiry: a step of the system clock forward does not age them.
    let agingTime: StepSafeTime
    /// The group commits asked for, each after a delay in seconds, run by `runCommits()`: one
    /// stream for hits' (set going by `scheduleDrain`), one for documents' (`scheduleDocumentDrain`).
    /// Bounded by the writer's state: at most one of each is asked for and not yet run.
    let hitCommits = AsyncStream.makeStream(of: TimeInterval.self)
    let documentCommits = AsyncStream.makeStream(of: TimeInterval.self)
    /// Set by `finishCommits()`: ends the loops' waits at once.
    let commitsStopped = OneShot<Void>()

    init(settings: TrackingManager.Settings, store: TrackingStore, clock: any SDKClock, logger: Logger,
         callbacks: DeliveryCallbacks, visitorDocuments: (pending: PendingVisitorDocuments, store: FlagshipDatabase)?,
         committedHits: CommittedHits? = nil, backpressure: Backpressure? = nil,
         ready: @escaping @Sendable (_ hits: Int, _ activate: Bool) -> Void) {
        self.committedHits = committedHits
        self.backpressure = backpressure
        self.settings = settings
        self.store = store
        self.clock = clock
        agingTime = StepSafeTime(clock: clock)
        self.logger = logger
        self.callbacks = callbacks
        self.visitorDocuments = visitorDocuments
        keeper = store.hits as? any VisitorKeepingHitQueue ?? LocalHitsAndVisitors(hits: store.hits, store: visitorDocuments?.store)
        self.ready = ready
        inMemoryOnly = store.hits.durability.notDurable
    }

    // MARK: Accepting

    /// Takes a hit, or refuses it (closed, or nobody awaits it past the ingress cap); returns at
    /// once. `durable` is told once the hit is committed (or pooled, under periodic caching).
    func accept(_ hit: OutgoingHit, durable: (@Sendable (Result<Void, FlagshipError>) -> Void)?, committed: Bool) -> Bool {
        enum Next { case refused, overCap(first: Bool), drain, pooled(overflow: Bool), none }
        // A hit to be committed at once goes through the group commit, as under continuous caching.
        let pooled = settings.strategy == .PERIODIC_CACHING && !committed
        // A hit's document is made here, on the caller's thread: the writer's one thread only
        // writes. An activate's, on the writer: it comes from a flag read, which must not wait.
        let document = pooled || hit.isActivate ? nil : hit.cacheDocumentText
        // Delivery keeps up no longer while the network answers: a hit nobody awaits is shed
        // (counted) rather than pushing the backlog toward the cap, where eviction would take
        // acknowledged hits. A consent hit is the visitor's record of its choice: never shed.
        if durable == nil, !hit.isConsentHit, let backpressure, !backpressure.admit(hit.kind) {
            return false
        }
        let next = state.withLock { state -> Next in
            guard !state.closed else { return .refused }
            // Nobody waits for this hit, and the disk is far behind: refused, never waited for.
            if durable == nil, !pooled, state.ingress.count >= settings.ingressCap {
                state.refusedAtCap += 1
                state.counts.lost += 1
                return .overCap(first: state.refusedAtCap == 1)
            }
            if !state.purging.isEmpty, state.purging[hit.visitorId] != nil {
                state.purging[hit.visitorId]?.acceptedSince.insert(hit.id)
            }
            guard pooled else {
                state.ingress.append(Accepted(outgoing: hit, document: document, durable: durable))
                return queueDrain(&state) ? .drain : .none
            }
            state.unwritten.append(hit)
            return .pooled(overflow: state.unwritten.count == settings.memoryLimit)
        }
        let instrumentation = settings.instrumentation
        switch next {
        case .refused:
            logger.error("\(hit.type) hit not sent: the SDK was closed")
            durable?(.failure(.closed))
            return false
        case .overCap(let first):
            instrumentation?.hitsGoneUnsent(.lost, count: 1)
            if first {
                logger.error("Hits arrive faster than the hit cache takes them (\(settings.ingressCap) wait for it): hits nobody awaits are dropped, counted as lost, until it catches up; `try await sendHit` waits instead")
            }
            return false
        case .drain:
            scheduleDrain(after: 0)
        case .pooled(let overflow):
            durable?(.success(()))
            // A pool that outgrows memory is written before the interval.
            if overflow { store.async { [self] in await writeUnwritten() } }
            ready(hit.isActivate ? 0 : 1, hit.isActivate)
        case .none:
            break
        }
        instrumentation?.hits(.accepted, kind: hit.kind, count: 1)
        return true
    }

    /// A visitor document joined the pending ones: the next group commit takes it, with the hits.
    func writeVisitorDocumentsSoon() {
        guard settings.documentCoalescing > 0 else {
            if state.withLock({ queueDrain(&$0) }) { scheduleDrain(after: 0) }
            return
        }
        scheduleDocumentDrain()
    }

    /// Queues one group commit for the documents `documentCoalescing` from now (none when one is
    /// queued already). Apart from `drainQueued`: hits arriving meanwhile are not held for it.
    func scheduleDocumentDrain() {
        guard state.withLock({ state -> Bool in
            defer { state.documentDrainQueued = true }
            return !state.documentDrainQueued
        }) else { return }
        documentCommits.continuation.yield(settings.documentCoalescing)
    }

    /// Work arrived: `true` when a group commit must be queued for it at once (the writer is
    /// idle); `false` when one is queued already, or one under way queues the next when it ends.
    func queueDrain(_ state: inout State) -> Bool {
        state.commit.workArrives()
    }

    /// Whether a group commit is writing now: for tests that make work arrive during one.
    var isCommitting: Bool {
        state.withLock { $0.commit.isWriting }
    }

    /// Queues a group commit on the store queue at once, or asks `runCommits()` for one after
    /// `delay` seconds.
    func scheduleDrain(after delay: TimeInterval) {
        guard delay > 0 else {
            store.async { [self] in await drainAsQueued() }
            return
        }
        hitCommits.continuation.yield(delay)
    }

    /// The group commit a `scheduleDrain` queued: what gathered since is its batch.
    func drainAsQueued() async {
        state.withLock { $0.commit.dequeued() }
        await drain(yielding: true)
    }

    /// No hit is taken any more; what was accepted is still written.
    func close() {
        state.withLock { $0.closed = true }
    }

    // MARK: Counting

    var counts: Counts {
        collectEvictions()
        return state.withLock { $0.counts }
    }

    /// What was accepted and is not in the cache; `lost` adds to the writer's lost count.
    func unwritten() -> Unwritten {
        state.withLock { Unwritten(uncommitted: $0.ingress.count + $0.writing, inMemory: $0.unwritten.count) }
    }

    /// At close: hits that will not reach the cache in this run, counted as lost.
    func countLost(_ count: Int) {
        guard count > 0 else { return }
        settings.instrumentation?.hitsGoneUnsent(.lost, count: count)
        state.withLock { $0.counts.lost += count }
    }

    /// Entries in the ingress, in memory, and consent withdrawals not yet run.
    var footprint: (ingress: Int, unwritten: Int, purging: Int) {
        state.withLock { ($0.ingress.count, $0.unwritten.count, $0.purging.count) }
    }

    /// Visitor documents still waiting for the visitor cache.
    var unsavedVisitorDocuments: Int {
        visitorDocuments?.pending.count ?? 0
    }
}
