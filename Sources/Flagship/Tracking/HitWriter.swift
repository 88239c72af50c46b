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

    private struct State {
        /// Accepted, waiting for the next group commit.
        var ingress = ChunkedQueue<Accepted>()
        /// Hits the group commit under way is writing: neither in the ingress nor yet in the cache.
        var writing = 0
        /// Hits refused since the ingress reached its cap (logged when it starts, told when it ends).
        var refusedAtCap = 0
        /// A group commit is queued on the store queue (at once, or after the spacing) and has
        /// not taken its batch yet: what is accepted meanwhile goes with it.
        var drainQueued = false
        /// A group commit for visitor documents is queued (`scheduleDocumentDrain`).
        var documentDrainQueued = false
        /// A group commit is writing: what is accepted meanwhile is queued by it once it ends,
        /// `commitSpacing` later.
        var committing = false
        /// Hits or visitor documents came since the last group commit took its batch.
        var workArrived = false
        /// Accepted but not in the cache: the periodic pool, or hits the cache failed to take.
        var unwritten: [OutgoingHit] = []
        /// Ids of unwritten hits being sent, or being written to the cache: taken by one, left by the other.
        var unwrittenInFlight: Set<String> = []
        /// The cache refused the last write: later refusals are not logged again until it recovers.
        var cacheWriteFailing = false
        /// Hits dropped from memory since the cache began refusing writes, told when it recovers.
        var droppedWhileFailing = 0
        /// Deleting expired hits failed last time (logged once until it works again).
        var expiryFailing = false
        /// The wall clock was last seen stepped ahead of the measured time (logged once a step).
        var clockSteppedAhead = false
        /// Writing visitor documents failed last time (logged once until it works again).
        var visitorWritesFailing = false
        /// Visitor documents went to a file deleted or replaced while open (logged once).
        var visitorFileGoneLogged = false
        /// Consent withdrawals whose deletion has not run yet, by visitor: how many, and the ids of
        /// the visitor's hits accepted since, which the deletion must spare.
        var purging: [String: (pending: Int, acceptedSince: Set<String>)] = [:]
        /// Erasures that failed (the file locked by another connection, say), to be tried again at
        /// each interval: by visitor, when first recorded (monotonic seconds). Their `purging`
        /// entries stay, so that hits accepted since are spared.
        var erasuresWaiting: [String: TimeInterval] = [:]
        var closed = false
        var counts = Counts()
    }

    private typealias PendingDocument = (record: VisitorRecord, version: Int)

    private let settings: TrackingManager.Settings
    private let store: TrackingStore
    private let clock: any SDKClock
    private let logger: Logger
    private let callbacks: DeliveryCallbacks
    private let state = Locked(State())
    /// Why a hit written to the cache is still not durable (the store fell back to memory, its
    /// file is read-only), as the store was at start.
    private let inMemoryOnly: FSCacheError?
    /// The default visitor cache's documents waiting for the group commit, and its store.
    private let visitorDocuments: (pending: PendingVisitorDocuments, store: FlagshipDatabase)?
    /// Where hits and visitor documents are written together: a shared store's queue, else the
    /// hit queue beside the default visitor cache's table.
    private let keeper: any VisitorKeepingHitQueue
    /// Told of hits now waiting to be sent (committed, or pooled): how many hits, and whether
    /// there was an activate among them. The sender counts them toward its next batch.
    private let ready: @Sendable (_ hits: Int, _ activate: Bool) -> Void
    /// Where committed hits wait for the sender, claimed, when the queue writes them claimed.
    private let committedHits: CommittedHits?
    /// Told of the backlog after each group commit.
    private let backpressure: Backpressure?
    /// The time hits are aged by for expiry: a step of the system clock forward does not age them.
    private let agingTime: StepSafeTime

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
        inMemoryOnly = store.hits.notDurable
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
            if overflow { store.async { [self] in writeUnwritten() } }
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
    private func scheduleDocumentDrain() {
        guard state.withLock({ state -> Bool in
            defer { state.documentDrainQueued = true }
            return !state.documentDrainQueued
        }) else { return }
        store.async(after: settings.documentCoalescing) { [weak self] in
            guard let self else { return }
            state.withLock { $0.documentDrainQueued = false }
            drain(yielding: true)
        }
    }

    /// Work arrived: `true` when a group commit must be queued for it at once (the writer is
    /// idle); `false` when one is queued already, or one under way queues the next when it ends.
    private func queueDrain(_ state: inout State) -> Bool {
        state.workArrived = true
        guard !state.drainQueued, !state.committing else { return false }
        state.drainQueued = true
        return true
    }

    /// Whether a group commit is writing now: for tests that make work arrive during one.
    var isCommitting: Bool {
        state.withLock { $0.committing }
    }

    /// Queues a group commit on the store queue, at once or after `delay` seconds.
    private func scheduleDrain(after delay: TimeInterval) {
        guard delay > 0 else {
            store.async { [self] in drainAsQueued() }
            return
        }
        // Weak: a writer closed meanwhile (everything written by its barrier) is not kept for it.
        store.async(after: delay) { [weak self] in self?.drainAsQueued() }
    }

    /// The group commit a `scheduleDrain` queued: what gathered since is its batch.
    private func drainAsQueued() {
        state.withLock { $0.drainQueued = false }
        drain(yielding: true)
    }

    /// No hit is taken any more; what was accepted is still written.
    func close() {
        state.withLock { $0.closed = true }
    }

    // MARK: Group commit (on the store queue)

    /// Group commit: writes what gathered in the ingress (`ingressLimit` hits at most) and the
    /// visitor documents waiting, in one transaction, until both stay empty.
    ///
    /// Commits are spaced: work that arrives while one is under way waits until `commitSpacing`
    /// after it ended, and goes with what gathers meanwhile. Work that finds the writer idle is
    /// committed at once, so a caller that awaits each hit before sending the next is never held.
    /// Under a flow of visitors, work arrives during every commit: the pages each commit rewrites
    /// (the tables' last pages, the indexes' hot pages, the row count) are written once for many
    /// visitors instead of once per visitor, and the bytes written to the write-ahead log are
    /// what a store runs out of first under load.
    ///
    /// `yielding` (a group commit set going by an accepted hit): after each transaction, the rest
    /// is queued again behind what the store queue took meanwhile, the sender's claims and
    /// settlements first. A flow of hits that never stops would otherwise keep the sender from the
    /// store, and the hits from the network, for as long as it lasts. Whatever must see every
    /// hit accepted before it written (a barrier, a consent erasure, `close()`) calls `drainAll()`,
    /// which is not spaced.
    ///
    /// `atMost`: hits to write before returning (a barrier's: those accepted before it), so that a
    /// flow that never stops does not hold the store queue either.
    private func drain(yielding: Bool = false, atMost limit: Int = .max) {
        // Documents whose write failed wait for the next interval, not for the next loop.
        var documentsFailed = false
        var left = limit
        while true {
            let (batch, refused) = state.withLock { state -> ([Accepted], Int) in
                let batch = state.ingress.removeFirst(upTo: min(settings.ingressLimit, left))
                state.writing = batch.count
                state.committing = true
                // Hits left beyond this batch are work the end of this commit queues a drain for.
                state.workArrived = state.ingress.count > 0
                // Room again: the refusals since the cap was reached are told, once.
                let refused = state.ingress.count < settings.ingressCap ? state.refusedAtCap : 0
                if refused > 0 { state.refusedAtCap = 0 }
                return (batch, refused)
            }
            if refused > 0 {
                logger.error("Hits waiting for the hit cache are below \(settings.ingressCap) again: \(refused) hit(s) nobody awaited were dropped meanwhile (counted as lost)")
            }
            left -= batch.count
            // Set going by hits, a commit leaves the documents younger than the coalescing
            // window to a later one: the exposures after a fetch join its document. Not those of
            // the visitors whose activates it writes: the assignment history is never lost once a
            // flag was exposed, so a visitor's document accepted before its activate is written
            // with it or before it.
            var documents: [PendingDocument] = []
            if !documentsFailed, let pending = visitorDocuments?.pending {
                let coalescing = settings.documentCoalescing
                let cutoff = yielding && coalescing > 0 ? ContinuousClock.now - .milliseconds(Int64((coalescing * 1000).rounded())) : nil
                let exposed = cutoff == nil ? [] : Set(batch.lazy.filter(\.outgoing.isActivate).map(\.outgoing.visitorId))
                let take = pending.take(acceptedBy: cutoff, whateverTheAgeOf: exposed)
                documents = take.taken
                if take.youngerLeft { scheduleDocumentDrain() }
            }
            guard !batch.isEmpty || !documents.isEmpty else {
                commitEnded(wrote: false)
                return
            }
            // Hits committed claimed go to the sender in memory: it sends them without a claim.
            var cached = batch.map(\.hit)
            let reserved = committedHits?.reserve(cached.count) == true ? cached.count : 0
            let claimedUntil = reserved > 0 ? clock.now().unixMilliseconds + store.hits.claimMilliseconds : nil
            if let claimedUntil {
                for index in cached.indices { cached[index].claimedUntil = claimedUntil }
            }
            let started = ContinuousClock.now
            let written = write(cached, documents: documents)
            let (saved, documentsError) = (written.hits, written.documents)
            let took = ContinuousClock.now - started
            if !documents.isEmpty {
                documentsFailed = documentsError != nil
                settle(documents, error: documentsError)
            }
            guard !batch.isEmpty else {
                commitEnded(wrote: true)
                if yielding { return }
                continue
            }
            let hits = batch.map(\.outgoing)
            var outcome: Result<Void, FlagshipError> = .success(())
            do {
                let evicted = try saved.get()
                if let committedHits, let claimedUntil, !committedHits.add(hits, claimedUntil: claimedUntil, reserved: reserved) {
                    // The sender stopped taking them meanwhile: their claims end, a claim sends them.
                    try? store.hits.settle(HitSettlement(released: hits.map(\.id)))
                }
                reportBacklog()
                if let instrumentation = settings.instrumentation {
                    instrumentation.committed(rows: hits.count, duration: took)
                    reportCommitted(hits, to: instrumentation)
                }
                countEvicted(evicted + store.hits.takeEvicted())
                if let inMemoryOnly { outcome = .failure(.hitNotCached(inMemoryOnly)) }
                // What waited in memory for the cache goes in now, not at the next interval.
                if cacheWritable() { writeUnwritten() }
            } catch {
                if reserved > 0 { committedHits?.cancel(reserved: reserved) }
                outcome = .failure(.hitNotCached(FSCacheError(error)))
                keepInMemory(hits, notWritten: hits.count, becauseOf: error)
            }
            // Ended before the callers hear of it: one that sends its next hit at once finds the
            // writer idle, and is not held for the spacing.
            commitEnded(wrote: true)
            for accepted in batch { accepted.durable?(outcome) }
            ready(hits.count(where: { !$0.isActivate }), hits.contains(where: \.isActivate))
            // What is left, or arrived meanwhile, has the group commit `commitEnded` queued.
            if yielding { return }
        }
    }

    /// A group commit's transaction is over: what arrived while it ran (or is left beyond its
    /// batch) gets the next, `commitSpacing` from now when it wrote something.
    private func commitEnded(wrote: Bool) {
        let delay = state.withLock { state -> TimeInterval? in
            state.writing = 0
            state.committing = false
            guard state.workArrived, !state.drainQueued else { return nil }
            state.drainQueued = true
            return wrote ? max(0, settings.commitSpacing) : 0
        }
        if let delay { scheduleDrain(after: delay) }
    }

    /// Counts, tells and logs hits evicted past the cap.
    private func countEvicted(_ evicted: Int) {
        guard evicted > 0 else { return }
        settings.instrumentation?.hitsGoneUnsent(.evicted, count: evicted)
        state.withLock { $0.counts.evicted += evicted }
        logger.warning("Hit cache full: evicted the \(evicted) oldest unsent hit(s)")
    }

    /// Evictions made when claims ended (the sender's failed sends, close), counted now.
    func collectEvictions() {
        countEvicted(store.hits.takeEvicted())
    }

    /// Claims may have lapsed with time: the sender's next claims look for them.
    func claimsMayHaveLapsed() {
        store.hits.claimsMayHaveLapsed()
    }

    /// Tells the backpressure how many hits wait: in the store (as of its last write or
    /// settlement) and for the next group commit (the one just written is in the store's count).
    func reportBacklog() {
        guard let backpressure else { return }
        let ingress = state.withLock { $0.ingress.count }
        backpressure.update(backlog: (store.hits.lastKnownCount ?? 0) + ingress)
    }

    /// Writes every hit accepted so far, and the visitor documents waiting, now (on the store
    /// queue): what a barrier needs. Hits accepted meanwhile are left to their group commit.
    func drainAll() {
        drain(atMost: state.withLock { $0.ingress.count })
    }

    /// Writes hits and visitor documents: in one transaction where the store allows it (the
    /// default caches' file, a fleet's shared store), else the documents first.
    private func write(_ hits: [CachedHit], documents: [PendingDocument]) -> HitsAndVisitorsSaved {
        keeper.save(hits, visitors: documents.map(\.record))
    }

    /// The outcome of writing visitor documents: committed ones leave the pending set, failed
    /// ones wait again (tried at each interval), logged when writes start and stop failing.
    private func settle(_ documents: [PendingDocument], error: (any Error)?) {
        guard let visitorDocuments else { return }
        guard let error else {
            visitorDocuments.pending.committed(documents)
            let (recovered, fileGone) = state.withLock { state -> (Bool, Bool) in
                defer { state.visitorWritesFailing = false }
                let fileGone = keeper is LocalHitsAndVisitors && !visitorDocuments.store.fileIsInPlace && !state.visitorFileGoneLogged
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

    // MARK: What waits in memory

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
        forget(drop)
    }

    private struct MemoryDrop {
        var ids: Set<String> = []
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
        let first = state.droppedWhileFailing == 0
        state.droppedWhileFailing += dropped.count
        state.counts.lost += dropped.count
        return MemoryDrop(ids: dropped, first: first)
    }

    /// Hits now in the cache, by kind.
    private func reportCommitted(_ hits: [OutgoingHit], to instrumentation: any FlagshipInstrumentation) {
        let activates = hits.count(where: \.isActivate)
        if activates > 0 { instrumentation.hits(.committed, kind: .activate, count: activates) }
        if hits.count > activates { instrumentation.hits(.committed, kind: .hit, count: hits.count - activates) }
    }

    /// A drop's activates lose their exposure callbacks; the drop is logged once when it starts.
    private func forget(_ drop: MemoryDrop) {
        guard !drop.ids.isEmpty else { return }
        settings.instrumentation?.hitsGoneUnsent(.lost, count: drop.ids.count)
        callbacks.forget(drop.ids)
        if drop.first {
            logger.error("The oldest hits kept in memory are being dropped: more than \(settings.memoryLimit) wait while the hit cache cannot be written")
        } else {
            logger.debug("\(drop.ids.count) more unsent hit(s) dropped from memory")
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

    /// The pool (and what the cache refused before) written to the cache, on the store queue.
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
            let started = ContinuousClock.now
            let evicted = try store.hits.save(pending.map(CachedHit.init))
            if let instrumentation = settings.instrumentation {
                instrumentation.committed(rows: pending.count, duration: ContinuousClock.now - started)
                reportCommitted(pending, to: instrumentation)
                if evicted > 0 { instrumentation.hitsGoneUnsent(.evicted, count: evicted) }
            }
            state.withLock { state in
                state.unwritten.removeAll { written.contains($0.id) }
                state.unwrittenInFlight.subtract(written)
                state.counts.evicted += evicted
            }
            if evicted > 0 { logger.warning("Hit cache full: evicted the \(evicted) oldest unsent hit(s)") }
            _ = cacheWritable()
        } catch {
            state.withLock { $0.unwrittenInFlight.subtract(written) }
            keepInMemory([], notWritten: pending.count, becauseOf: error)
        }
    }

    /// Up to `limit` hits for `endpoint` waiting in memory, lent to the sender: neither written
    /// nor lent again until `giveBack`.
    func borrow(_ endpoint: HitEndpoint, limit: Int) -> [OutgoingHit] {
        guard limit > 0 else { return [] }
        return state.withLock { state in
            state.unwritten.lend(endpoint, limit: limit, marking: &state.unwrittenInFlight)
        }
    }

    /// The sender's outcome for hits it sent: those `done` (delivered or refused) leave memory,
    /// the borrowed ones are back, and count toward the memory bound again.
    func giveBack(_ borrowed: [OutgoingHit], done: Set<String>) {
        let drop = state.withLock { state -> MemoryDrop in
            if !done.isEmpty { state.unwritten.removeAll { done.contains($0.id) } }
            state.unwrittenInFlight.subtract(borrowed.map(\.id))
            return dropPastTheMemoryLimit(&state)
        }
        forget(drop)
    }

    /// Writes what waits in memory now (a periodic batch that failed to send), on the store queue.
    func writePool() async {
        await store.run { [self] in writeUnwritten() }
    }

    // MARK: Each interval, at start and at close (on the store queue)

    /// Each interval: the periodic pool written, visitor documents a failed write put back tried
    /// again, expired hits deleted.
    func tick() async {
        await store.run { [self] in
            writeUnwritten()
            if state.withLock({ !$0.erasuresWaiting.isEmpty }) { retryErasures() }
            if visitorDocuments?.pending.isEmpty == false { drain(yielding: true) }
            _ = deleteExpired()
            collectEvictions()
            reportWaiting()
        }
    }

    /// At close, on the store queue: the pool written, and a last try for visitor documents.
    func writeBeforeClosing() {
        writeUnwritten()
        if visitorDocuments?.pending.isEmpty == false { drainAll() }
    }

    /// Deletes the hits past their lifetime, logging how many; returns how many (on the store queue).
    /// Their age is measured on `agingTime`: after the system clock is set hours ahead, hits are
    /// not deleted as if those hours had passed (logged once a step).
    func deleteExpired() -> Int {
        noteClockStep()
        let boundary = agingTime.now(clock).unixMilliseconds - Int64((settings.hitLifetime * 1000).rounded())
        var expired = 0
        do {
            expired = try store.hits.deleteExpired(createdBefore: boundary)
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
            settings.instrumentation?.hitsGoneUnsent(.expired, count: expired)
            state.withLock { $0.counts.expired += expired }
            logger.warning("Deleted \(expired) unsent hit(s) older than \(TrackingManager.describe(settings.hitLifetime))")
        }
        return expired
    }

    /// Logs once when the wall clock is found stepped ahead of the time measured since start (by
    /// more than `StepSafeTime.tolerance`), and once when they agree again.
    private func noteClockStep() {
        let step = agingTime.step(clock)
        let ahead = step > StepSafeTime.tolerance
        let changed = state.withLock { state -> Bool in
            defer { state.clockSteppedAhead = ahead }
            return state.clockSteppedAhead != ahead
        }
        guard changed else { return }
        if ahead {
            logger.warning("The system clock is \(Int(step.rounded())) s ahead of the time measured since start (it was set forward): hits are aged by the measured time, none expires early")
        } else {
            logger.info("The system clock agrees with the time measured since start again")
        }
    }

    /// Tells the instrumentation how many hits wait, in the cache and in memory (on the store queue).
    private func reportWaiting() {
        guard let instrumentation = settings.instrumentation else { return }
        // A cache that cannot be counted now is not reported as empty: the gauges keep their last values.
        guard let inStore = try? store.hits.count() else { return }
        let inMemory = state.withLock { $0.ingress.count + $0.writing + $0.unwritten.count }
        instrumentation.waiting(inStore: inStore, inMemory: inMemory)
    }

    // MARK: Consent withdrawn

    func purge(visitorId: String) {
        state.withLock { state in
            state.unwritten.removeAll { $0.visitorId == visitorId && !$0.isConsentHit && !state.unwrittenInFlight.contains($0.id) }
            state.purging[visitorId, default: (0, [])].pending += 1
        }
        // The deletion runs after the writes queued before it, but a group commit under way may
        // also write hits accepted after this call (consent given again at once): those are spared.
        store.async { [self] in
            // Every hit accepted before the withdrawal is in the cache first, so that it goes too.
            drainAll()
            let spared = state.withLock { $0.purging[visitorId]?.acceptedSince ?? [] }
            do {
                let deleted = try erase(visitorId: visitorId, keeping: spared)
                if deleted > 0 {
                    logger.info("Consent withdrawn: deleted \(deleted) unsent hit(s) of the visitor", metadata: logger.visitorMetadata(visitorId))
                }
                state.withLock { state in
                    state.purging[visitorId]?.pending -= 1
                    if state.purging[visitorId]?.pending == 0 { state.purging[visitorId] = nil }
                }
            } catch {
                // Recorded, and tried again at each interval until it runs: meanwhile no hit of
                // the visitor accepted before the withdrawal is sent (`erasurePending`).
                let recorded = state.withLock { state -> Bool in
                    state.purging[visitorId]?.pending -= 1
                    guard state.erasuresWaiting.count < settings.erasuresWaitingLimit || state.erasuresWaiting[visitorId] != nil else {
                        if state.purging[visitorId]?.pending == 0 { state.purging[visitorId] = nil }
                        state.counts.erasuresAbandoned += 1
                        return false
                    }
                    state.erasuresWaiting[visitorId] = clock.uptime()
                    return true
                }
                if recorded {
                    logger.error("A visitor's data could not be deleted after consent was withdrawn (\(error)): the erasure is tried again at each interval until it runs, and none of the visitor's hits is sent meanwhile",
                                 metadata: logger.visitorMetadata(visitorId))
                } else {
                    logger.error("A visitor's data could not be deleted after consent was withdrawn (\(error)), and \(settings.erasuresWaitingLimit) erasures already wait to be tried again: this one is not (counted in erasuresAbandoned)",
                                 metadata: logger.visitorMetadata(visitorId))
                }
            }
        }
    }

    /// Whether the visitor's erasure waits to be tried again: its hits accepted before the
    /// withdrawal must not be sent (they are deleted when it runs). Hits accepted since (consent
    /// given again) are not held.
    func erasurePending(for hit: OutgoingHit) -> Bool {
        state.withLock { state in
            guard !state.erasuresWaiting.isEmpty, state.erasuresWaiting[hit.visitorId] != nil else { return false }
            return !hit.isConsentHit && state.purging[hit.visitorId]?.acceptedSince.contains(hit.id) != true
        }
    }

    /// Each interval, on the store queue: the erasures that could not run, tried again (oldest
    /// first). One that still fails waits for the next interval, logged at debug level.
    private func retryErasures() {
        let waiting = state.withLock { state in state.erasuresWaiting.sorted { $0.value < $1.value }.map(\.key) }
        for visitorId in waiting {
            let spared = state.withLock { $0.purging[visitorId]?.acceptedSince ?? [] }
            do {
                let deleted = try erase(visitorId: visitorId, keeping: spared)
                let waited = state.withLock { state -> TimeInterval in
                    let since = state.erasuresWaiting.removeValue(forKey: visitorId) ?? clock.uptime()
                    if state.purging[visitorId]?.pending == 0 { state.purging[visitorId] = nil }
                    return clock.uptime() - since
                }
                logger.warning("A visitor's data was deleted after consent was withdrawn, \(Int(waited.rounded())) s late (\(deleted) unsent hit(s))",
                               metadata: logger.visitorMetadata(visitorId))
            } catch {
                logger.debug("A visitor's erasure still could not run: \(error)", metadata: logger.visitorMetadata(visitorId))
                return
            }
        }
    }

    /// Erasures waiting to be tried again.
    var erasuresWaiting: Int {
        state.withLock { $0.erasuresWaiting.count }
    }

    /// Consent withdrawn: the visitor's hits (but `keeping` and its consent hits) and, with the
    /// default visitor cache or a shared store, its document: one transaction where both are
    /// tables of one store. Runs on the store queue, so after any group commit that took the
    /// visitor's last document.
    private func erase(visitorId: String, keeping: Set<String>) throws -> Int {
        try keeper.erase(visitorId: visitorId, keeping: keeping)
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
