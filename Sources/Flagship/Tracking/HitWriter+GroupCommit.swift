import FlagshipStore
import Foundation
import Logging

/// The group commit, a job of the tracking store: hits and visitor documents written in one transaction.
extension HitWriter {
    // MARK: Group commit (a job of the tracking store)

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
    /// is asked again as a job behind those asked for meanwhile (an interval's work, an erasure, a
    /// barrier), which a flow of hits that never stops would otherwise hold for as long as it
    /// lasts. Whatever must see every hit accepted before it written (a barrier, a consent
    /// erasure, `close()`) calls `drainAll()`, which is not spaced.
    ///
    /// `atMost`: hits to write before returning (a barrier's: those accepted before it), so that a
    /// flow that never stops does not hold the store's jobs either.
    func drain(yielding: Bool = false, atMost limit: Int = .max) async {
        // Documents whose write failed wait for the next interval, not for the next loop.
        var documentsFailed = false
        var left = limit
        while true {
            let batch = takeBatch(atMost: left)
            left -= batch.count
            let documents = documentsFailed ? [] : takeDocuments(besides: batch, yielding: yielding)
            guard !batch.isEmpty || !documents.isEmpty else {
                commitEnded(wrote: false)
                return
            }
            let written = await commit(batch, documents: documents)
            if !documents.isEmpty { documentsFailed = written.documentsFailed }
            // Ended before the callers hear of it: one that sends its next hit at once finds the
            // writer idle, and is not held for the spacing.
            commitEnded(wrote: true)
            if !batch.isEmpty {
                for accepted in batch { accepted.durable?(written.outcome) }
                let hits = batch.map(\.outgoing)
                ready(hits.count(where: { !$0.isActivate }), hits.contains(where: \.isActivate))
            }
            // What is left, or arrived meanwhile, has the group commit `commitEnded` queued.
            if yielding { return }
        }
    }

    /// Takes the next batch from the ingress (`ingressLimit` hits, `limit` at most), and tells the
    /// refusals since the cap was reached once there is room again.
    func takeBatch(atMost limit: Int) -> [Accepted] {
        let (batch, refused) = state.withLock { state -> ([Accepted], Int) in
            let batch = state.ingress.removeFirst(upTo: min(settings.ingressLimit, limit))
            state.writing = batch.count
            // Hits left beyond this batch are work the end of this commit queues a drain for.
            state.commit.writes(workLeft: state.ingress.count > 0)
            // Room again: the refusals since the cap was reached are told, once.
            let refused = state.ingress.count < settings.ingressCap ? state.refusedAtCap : 0
            if refused > 0 { state.refusedAtCap = 0 }
            return (batch, refused)
        }
        if refused > 0 {
            logger.error("Hits waiting for the hit cache are below \(settings.ingressCap) again: \(refused) hit(s) nobody awaited were dropped meanwhile (counted as lost)")
        }
        return batch
    }

    /// The visitor documents that go with `batch`. Set going by hits (`yielding`), a commit leaves
    /// the documents younger than the coalescing window to a later one: the exposures after a
    /// fetch join its document. Not those of the visitors whose activates it writes: the
    /// assignment history is never lost once a flag was exposed, so a visitor's document accepted
    /// before its activate is written with it or before it.
    func takeDocuments(besides batch: [Accepted], yielding: Bool) -> [PendingDocument] {
        guard let pending = visitorDocuments?.pending else { return [] }
        let coalescing = settings.documentCoalescing
        let cutoff = yielding && coalescing > 0 ? ContinuousClock.now - .milliseconds(Int64((coalescing * 1000).rounded())) : nil
        let exposed = cutoff == nil ? [] : Set(batch.lazy.filter(\.outgoing.isActivate).map(\.outgoing.visitorId))
        let take = pending.take(acceptedBy: cutoff, whateverTheAgeOf: exposed)
        if take.youngerLeft { scheduleDocumentDrain() }
        return take.taken
    }

    /// One group commit's transaction: `batch` and `documents` written together, and what follows
    /// from it (committed hits handed to the sender, evictions counted, the memory written when
    /// the cache recovers, or the hits kept in memory when it refused them).
    func commit(_ batch: [Accepted], documents: [PendingDocument]) async -> (outcome: Result<Void, FlagshipError>, documentsFailed: Bool) {
        // Hits committed claimed go to the sender in memory: it sends them without a claim.
        var cached = batch.map(\.hit)
        let reserved = committedHits?.reserve(cached.count) == true ? cached.count : 0
        let claimedUntil = reserved > 0 ? store.ownTable.map { clock.now().unixMilliseconds + $0.leaseMilliseconds } : nil
        if let claimedUntil {
            for index in cached.indices { cached[index].claimedUntil = claimedUntil }
        }
        let started = ContinuousClock.now
        let written = await keeper.save(cached, visitors: documents.map(\.record))
        let took = ContinuousClock.now - started
        if !documents.isEmpty { settle(documents, error: written.documents) }
        guard !batch.isEmpty else { return (.success(()), written.documents != nil) }
        let hits = batch.map(\.outgoing)
        do {
            let evicted = try written.hits.get()
            if let committedHits, let claimedUntil, !committedHits.add(hits, claimedUntil: claimedUntil, reserved: reserved) {
                // The sender stopped taking them meanwhile: their claims end, a claim sends them.
                try? await store.hits.releaseClaims(hits.map(\.id))
            }
            reportBacklog()
            if let instrumentation = settings.instrumentation {
                instrumentation.committed(rows: hits.count, duration: took)
                reportCommitted(hits, to: instrumentation)
            }
            countEvicted(evicted + (store.ownTable?.takeEvicted() ?? 0))
            // What waited in memory for the cache goes in now, not at the next interval.
            if cacheWritable() { await writeUnwritten() }
            return (inMemoryOnly.map { .failure(.hitNotCached($0)) } ?? .success(()), written.documents != nil)
        } catch {
            if reserved > 0 { committedHits?.cancel(reserved: reserved) }
            keepInMemory(hits, notWritten: hits.count, becauseOf: error)
            return (.failure(.hitNotCached(FSCacheError(error))), written.documents != nil)
        }
    }

    /// A group commit's transaction is over: what arrived while it ran (or is left beyond its
    /// batch) gets the next, `commitSpacing` from now when it wrote something.
    func commitEnded(wrote: Bool) {
        let delay = state.withLock { state -> TimeInterval? in
            state.writing = 0
            guard state.commit.ended() else { return nil }
            return wrote ? max(0, settings.commitSpacing) : 0
        }
        if let delay { scheduleDrain(after: delay) }
    }

    /// Counts, tells and logs hits evicted past the cap.
    func countEvicted(_ evicted: Int) {
        guard evicted > 0 else { return }
        settings.instrumentation?.hitsGoneUnsent(.evicted, count: evicted)
        state.withLock { $0.counts.evicted += evicted }
        logger.warning("Hit cache full: evicted the \(evicted) oldest unsent hit(s)")
    }

    /// Evictions made when claims ended (the sender's failed sends, close), counted now.
    func collectEvictions() {
        countEvicted(store.ownTable?.takeEvicted() ?? 0)
    }

    /// Claims may have lapsed with time: the sender's next claims look for them.
    func claimsMayHaveLapsed() {
        store.ownTable?.claimsMayHaveLapsed()
    }

    /// Tells the backpressure how many hits wait: in the store (as of its last write or
    /// settlement) and for the next group commit (the one just written is in the store's count).
    func reportBacklog() {
        guard let backpressure else { return }
        let ingress = state.withLock { $0.ingress.count }
        backpressure.update(backlog: (store.ownTable?.lastKnownCount ?? 0) + ingress)
    }

    /// Writes every hit accepted so far, and the visitor documents waiting, now (a job of the
    /// tracking store): what a barrier needs. Hits accepted meanwhile are left to their group commit.
    func drainAll() async {
        await drain(atMost: state.withLock { $0.ingress.count })
    }

    /// The outcome of writing visitor documents: committed ones leave the pending set, failed
    /// ones wait again (tried at each interval), logged when writes start and stop failing.
    func settle(_ documents: [PendingDocument], error: (any Error)?) {
        guard let visitorDocuments else { return }
        guard let error else {
            visitorDocuments.pending.committed(documents)
            let (recovered, fileGone) = state.withLock { state -> (Bool, Bool) in
                let fileGone = keeper is LocalHitsAndVisitors && !visitorDocuments.store.fileIsInPlace && state.set(.visitorFileGone, true)
                return (state.set(.visitorWritesFailing, false), fileGone)
            }
            if recovered { logger.info("Visitor documents can be written to the visitor cache again") }
            if fileGone {
                logger.error("Visitors cached from now on go to a database file that no longer exists (\(visitorDocuments.store.database.path) was deleted or moved while open): they will not survive a restart, which creates a new file")
            }
            return
        }
        visitorDocuments.pending.putBack(documents)
        if state.withLock({ $0.set(.visitorWritesFailing, true) }) {
            logger.error("\(documents.count) visitor document(s) could not be written to the visitor cache (\(error)): the newest of each visitor waits in memory, read by lookups, and is tried again at each interval")
        } else {
            logger.debug("Visitor documents still could not be written: \(error)")
        }
    }
}

/// The group commits' loops: a child task of the tracking manager's `run`, on the tracking store's executor.
extension HitWriter {
    /// Runs the spaced group commits (a flow's, `commitSpacing` after the one before, and the
    /// documents', after their coalescing window), each once its wait on the monotonic clock is
    /// over, until `finishCommits()` or cancellation, which also end a wait under way. The loops
    /// wait on the tracking store's executor (the SQLite store's queue, when there is one); each
    /// commit is a job of the store (`TrackingStore.run`), so that it never runs in the middle of
    /// another job that awaits. A
    /// commit for a writer found idle is asked of the store at once instead (`scheduleDrain(after:
    /// 0)`): through the loop, one caller's awaited hit waited for one more wake-up of the loop
    /// before its commit (the Tracking suite's latency benchmark shows it). A close writes what
    /// was accepted itself (`drainAll()`), so a commit asked for and not run when this ends is
    /// not missed.
    func runCommits() async {
        let (executor, stopped, store) = (store.executor, commitsStopped, store)
        await withDiscardingTaskGroup { group in
            group.addTask(executorPreference: executor) { [self] in
                await Self.commitLoop(hitCommits.stream, stopped: stopped) { [self] in
                    await store.run { [self] in await drainAsQueued() }
                }
            }
            group.addTask(executorPreference: executor) { [self] in
                await Self.commitLoop(documentCommits.stream, stopped: stopped) { [self] in
                    await store.run { [self] in
                        state.withLock { $0.documentDrainQueued = false }
                        await drain(yielding: true)
                    }
                }
            }
        }
    }

    /// Ends `runCommits()` now: a wait under way (a document's window lasts as long as it is set
    /// to) ends with it, its commit not run.
    func finishCommits() {
        commitsStopped.fulfil(())
        hitCommits.continuation.finish()
        documentCommits.continuation.finish()
    }

    private static func commitLoop(_ requests: AsyncStream<TimeInterval>, stopped: OneShot<Void>,
                                   _ commit: @Sendable () async -> Void) async {
        for await delay in requests {
            // The wait ends at its deadline (the commit then queued behind the jobs asked for
            // meanwhile), or at once when the loop is stopped or cancelled.
            if await stopped.value(until: .now() + delay) != nil || Task.isCancelled { return }
            await commit()
        }
    }
}
