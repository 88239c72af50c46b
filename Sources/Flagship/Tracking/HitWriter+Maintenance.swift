import FlagshipStore
import Foundation
import Logging

/// Jobs of the tracking store besides the group commit: each interval's, and consent withdrawals' erasures.
extension HitWriter {
    // MARK: Each interval, at start and at close (jobs of the tracking store)

    /// Each interval: the periodic pool written, visitor documents a failed write put back tried
    /// again, expired hits deleted.
    func tick() async {
        await store.run { [self] in
            await writeUnwritten()
            if state.withLock({ !$0.erasuresWaiting.isEmpty }) { await retryErasures() }
            if visitorDocuments?.pending.isEmpty == false { await drain(yielding: true) }
            _ = await deleteExpired()
            collectEvictions()
            await reportWaiting()
        }
    }

    /// At close, a job of the tracking store: the pool written, and a last try for visitor documents.
    func writeBeforeClosing() async {
        await writeUnwritten()
        if visitorDocuments?.pending.isEmpty == false { await drainAll() }
    }

    /// Deletes the hits past their lifetime, logging how many; returns how many (a job of the tracking store).
    /// Their age is measured on `agingTime`: after the system clock is set hours ahead, hits are
    /// not deleted as if those hours had passed (logged once a step).
    func deleteExpired() async -> Int {
        noteClockStep()
        let boundary = agingTime.now(clock).unixMilliseconds - Int64((settings.hitLifetime * 1000).rounded())
        var expired = 0
        do {
            expired = try await store.hits.deleteExpired(createdBefore: boundary)
            if state.withLock({ $0.set(.expiryFailing, false) }) {
                logger.info("Expired hits can be deleted again")
            }
        } catch {
            // Tried at every interval: a disk that stays full must not add a line each time.
            if state.withLock({ $0.set(.expiryFailing, true) }) {
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
    func noteClockStep() {
        let step = agingTime.step(clock)
        let ahead = step > StepSafeTime.tolerance
        let changed = state.withLock { $0.set(.clockSteppedAhead, ahead) }
        guard changed else { return }
        if ahead {
            logger.warning("The system clock is \(Int(step.rounded())) s ahead of the time measured since start (it was set forward): hits are aged by the measured time, none expires early")
        } else {
            logger.info("The system clock agrees with the time measured since start again")
        }
    }

    /// Tells the instrumentation how many hits wait, in the cache and in memory (a job of the tracking store).
    func reportWaiting() async {
        guard let instrumentation = settings.instrumentation else { return }
        // A cache that cannot be counted now is not reported as empty: the gauges keep their last values.
        guard let inStore = try? await store.hits.count() else { return }
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
            await drainAll()
            let spared = state.withLock { $0.purging[visitorId]?.acceptedSince ?? [] }
            do {
                let deleted = try await erase(visitorId: visitorId, keeping: spared)
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

    /// Each interval, a job of the tracking store: the erasures that could not run, tried again
    /// (oldest first). One that still fails waits for the next interval, logged at debug level.
    func retryErasures() async {
        let waiting = state.withLock { state in state.erasuresWaiting.sorted { $0.value < $1.value }.map(\.key) }
        for visitorId in waiting {
            let spared = state.withLock { $0.purging[visitorId]?.acceptedSince ?? [] }
            do {
                let deleted = try await erase(visitorId: visitorId, keeping: spared)
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
    /// tables of one store. A job of the tracking store, so after any group commit that took the
    /// visitor's last document.
    func erase(visitorId: String, keeping: Set<String>) async throws -> Int {
        try await keeper.erase(visitorId: visitorId, keeping: keeping)
    }
}
