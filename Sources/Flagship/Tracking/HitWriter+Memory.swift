import FlagshipStore
import Foundation
import Logging

/// Hits accepted and not in the cache: the periodic pool, and what the cache refused.
extension HitWriter {
    // MARK: What waits in memory

    /// Hits the cache could not take: sent from memory, the oldest dropped past the limit (counted
    /// as lost). Logged when the cache starts failing and when dropping starts, not per hit: a
    /// full disk under a flood of hits must not flood the log too.
    func keepInMemory(_ hits: [OutgoingHit], notWritten: Int, becauseOf error: any Error) {
        let (firstFailure, drop) = state.withLock { state -> (Bool, MemoryDrop) in
            let firstFailure = state.set(.cacheWriteFailing, true)
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

    struct MemoryDrop {
        var ids: Set<String> = []
        var first = false
    }

    /// While the cache refuses writes, keeps the `memoryLimit` newest hits in memory by dropping
    /// the oldest (counted as lost). An old hit being sent is not dropped under the sender, nor
    /// a newer one in its place: if its send fails, it is dropped when it is back.
    func dropPastTheMemoryLimit(_ state: inout State) -> MemoryDrop {
        let excess = state.unwritten.count - settings.memoryLimit
        guard state.conditions.contains(.cacheWriteFailing), excess > 0 else { return MemoryDrop() }
        let dropped = Set(state.unwritten.prefix(excess).filter { !state.unwrittenInFlight.contains($0.id) }.map(\.id))
        guard !dropped.isEmpty else { return MemoryDrop() }
        state.unwritten.removeAll { dropped.contains($0.id) }
        let first = state.droppedWhileFailing == 0
        state.droppedWhileFailing += dropped.count
        state.counts.lost += dropped.count
        return MemoryDrop(ids: dropped, first: first)
    }

    /// Hits now in the cache, by kind.
    func reportCommitted(_ hits: [OutgoingHit], to instrumentation: any FlagshipInstrumentation) {
        let activates = hits.count(where: \.isActivate)
        if activates > 0 { instrumentation.hits(.committed, kind: .activate, count: activates) }
        if hits.count > activates { instrumentation.hits(.committed, kind: .hit, count: hits.count - activates) }
    }

    /// A drop's activates lose their exposure callbacks; the drop is logged once when it starts.
    func forget(_ drop: MemoryDrop) {
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
    func cacheWritable() -> Bool {
        guard let dropped = state.withLock({ state -> Int? in
            guard state.set(.cacheWriteFailing, false) else { return nil }
            defer { state.droppedWhileFailing = 0 }
            return state.droppedWhileFailing
        }) else { return false }
        logger.info("The hit cache can be written again\(dropped > 0 ? ": \(dropped) unsent hit(s) were dropped meanwhile" : "")")
        return true
    }

    /// The pool (and what the cache refused before) written to the cache, a job of the tracking store.
    func writeUnwritten() async {
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
            let evicted = try await store.hits.save(pending.map(CachedHit.init))
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

    /// Writes what waits in memory now (a periodic batch that failed to send), as a job of the tracking store.
    func writePool() async {
        await store.run { [self] in await writeUnwritten() }
    }
}
