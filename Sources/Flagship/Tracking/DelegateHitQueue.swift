import FlagshipStore
import Foundation
import Logging

/// A custom `FSHitCacheDelegate` as the tracking manager's queue, with the reference's semantics:
/// `cacheHits` when hits are accepted (or at each interval, periodic strategy), `flushHits` once
/// they were delivered or refused for good, `lookupHits` once at start to replay what an earlier
/// run left.
///
/// A delegate can only be read whole, so the hits waiting are mirrored in memory, bounded by the
/// cache cap: past it the oldest are evicted from the delegate too (logged).
final class DelegateHitQueue: HitQueue {
    private struct State {
        /// Oldest first.
        var waiting: [OutgoingHit] = []
        var claimed: Set<String> = []
    }

    /// The app's hit cache, called on its own serial queue only (a late `lookupHits` included,
    /// so it never overlaps a later call).
    private let delegate: ConfinedDelegate<any FSHitCacheDelegate>
    private let capacity: Int
    private let lookupTimeout: TimeInterval
    private let logger: Logger
    private let state = Locked(State())
    /// Set while a `lookupHits` the SDK gave up waiting for still runs: calls then queue behind it
    /// instead of holding the tracking manager's thread (the hits are mirrored in memory meanwhile).
    private let lookupOverran = Locked(false)

    init(delegate: ConfinedDelegate<any FSHitCacheDelegate>, capacity: Int, lookupTimeout: TimeInterval, logger: Logger) {
        self.delegate = delegate
        self.capacity = capacity
        self.lookupTimeout = lookupTimeout
        self.logger = logger
    }

    /// The delegate's `lookupHits`, waited for at most the lookup timeout (on the tracking
    /// manager's store queue, never on a task's thread); entries that are not hit documents are
    /// logged and left out. A late answer is dropped.
    func loadCached(now: Int64) {
        let delegate = delegate
        let logger = logger
        let answer = Locked<[String: HitCacheDocument]?>(nil)
        let answered = DispatchSemaphore(value: 0)
        let overran = lookupOverran
        delegate.async { delegate in
            var documents: [String: HitCacheDocument] = [:]
            for (id, dictionary) in delegate.lookupHits() {
                do {
                    documents[id] = try HitCacheDocument(dictionary: dictionary)
                } catch {
                    logger.error("A cached hit was ignored: \(error)", metadata: logger.logLevel <= .debug ? ["hit_id": .string(id)] : nil)
                }
            }
            answer.withLock { $0 = documents }
            overran.withLock { $0 = false }
            answered.signal()
        }
        guard answered.wait(timeout: .now() + lookupTimeout) == .success, let documents = answer.withLock({ $0 }) else {
            overran.withLock { $0 = answer.withLock { $0 } == nil }
            logger.warning("Hit cache lookup took longer than \(lookupTimeout.millisecondsText): going on without the hits it holds (the next start tries again)")
            return
        }
        load(documents)
    }

    /// Takes in what the delegate holds from earlier runs (its `lookupHits`, already read and
    /// checked by the caller within the lookup timeout).
    func load(_ documents: [String: HitCacheDocument]) {
        let hits = documents.map { OutgoingHit(id: $0.key, document: $0.value) }
        state.withLock { state in
            let known = Set(state.waiting.map(\.id))
            state.waiting = (state.waiting + hits.filter { !known.contains($0.id) })
                .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        }
    }

    func save(_ cached: [CachedHit]) throws -> Int {
        let hits = cached.map(\.hit)
        guard !hits.isEmpty else { return 0 }
        call { delegate in
            delegate.cacheHits(hits: Dictionary(hits.map { ($0.id, $0.cacheDocument.dictionary) }, uniquingKeysWith: { _, last in last }))
        }
        let evicted = state.withLock { state -> [String] in
            let saved = Set(hits.map(\.id))
            state.waiting.removeAll { saved.contains($0.id) }
            state.waiting += hits
            let excess = state.waiting.count - capacity
            guard excess > 0 else { return [] }
            let evicted = state.waiting.prefix(excess).map(\.id)
            state.waiting.removeFirst(excess)
            state.claimed.subtract(evicted)
            return evicted
        }
        if !evicted.isEmpty { call { $0.flushHits(hitIds: evicted) } }
        return evicted.count
    }

    func claim(_ endpoint: HitEndpoint, limit: Int, now: Int64) async throws -> [OutgoingHit] {
        state.withLock { state in
            state.waiting.lend(endpoint, limit: limit, marking: &state.claimed)
        }
    }

    /// The delegate's `flushHits` is awaited on its queue (queued without waiting while an
    /// overrun lookup still runs there).
    func settle(_ settlement: HitSettlement) async throws {
        let gone = Set(settlement.delivered + settlement.rejected)
        state.withLock { state in
            state.waiting.removeAll { gone.contains($0.id) }
            state.claimed.subtract(gone)
            state.claimed.subtract(settlement.failed)
            state.claimed.subtract(settlement.released)
        }
        guard !gone.isEmpty else { return }
        let flush: @Sendable (any FSHitCacheDelegate) -> Void = { $0.flushHits(hitIds: gone.sorted()) }
        if lookupOverran.withLock({ $0 }) {
            delegate.async(flush)
        } else {
            await delegate.run(flush)
        }
    }

    func deleteExpired(createdBefore boundary: Int64) throws -> Int {
        try remove { $0.createdAt < boundary }
    }

    func purge(visitorId: String, keeping: Set<String>) throws -> Int {
        try remove { $0.visitorId == visitorId && !$0.isConsentHit && !keeping.contains($0.id) }
    }

    func count() throws -> Int {
        state.withLock { $0.waiting.count }
    }

    func releaseClaims(_ ids: [String]?) throws {
        state.withLock { state in
            if let ids { state.claimed.subtract(ids) } else { state.claimed.removeAll() }
        }
    }

    /// Calls the delegate on its queue and waits, or, while an overrun lookup still runs there,
    /// queues the call behind it without waiting.
    private func call(_ body: @escaping @Sendable (any FSHitCacheDelegate) -> Void) {
        if lookupOverran.withLock({ $0 }) {
            delegate.async(body)
        } else {
            delegate.sync(body)
        }
    }

    private func remove(where matches: (OutgoingHit) -> Bool) throws -> Int {
        let removed = state.withLock { state -> [String] in
            let removed = state.waiting.filter(matches).map(\.id)
            state.waiting.removeAll(where: matches)
            state.claimed.subtract(removed)
            return removed
        }
        if !removed.isEmpty { call { $0.flushHits(hitIds: removed) } }
        return removed.count
    }
}
