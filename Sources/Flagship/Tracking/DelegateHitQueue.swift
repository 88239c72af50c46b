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
    /// Set while the start's `lookupHits` runs: calls then queue behind it instead of holding the
    /// tracking manager's thread (the hits are mirrored in memory meanwhile).
    private let lookupOverran = Locked(false)

    init(delegate: ConfinedDelegate<any FSHitCacheDelegate>, capacity: Int, lookupTimeout: TimeInterval, logger: Logger) {
        self.delegate = delegate
        self.capacity = capacity
        self.lookupTimeout = lookupTimeout
        self.logger = logger
    }

    /// The delegate's `lookupHits`, set going on its queue and not waited for: nothing waits
    /// meanwhile (the store queue commits hits from the start). Its answer, within the lookup
    /// timeout, is handed to `found`, whose caller takes it in; entries that are not hit documents
    /// are logged and left out. Past the timeout a warning says so, and the late answer is dropped
    /// (meanwhile, calls to the delegate queue behind the lookup without waiting for it).
    func loadCached(now: Int64, found: @escaping @Sendable (_ takeIn: @escaping @Sendable () -> Int) -> Void) {
        let (logger, lookupTimeout) = (logger, lookupTimeout)
        // Whichever comes first, the answer or the timeout, decides; the other finds it decided.
        let decided = Locked(false)
        let decide: @Sendable () -> Bool = { decided.setFirst() }
        let overran = lookupOverran
        overran.withLock { $0 = true }
        let timer = DeadlineTimer.shared.schedule(at: .now() + lookupTimeout) {
            guard decide() else { return }
            logger.warning("Hit cache lookup took longer than \(lookupTimeout.millisecondsText): going on without the hits it holds (the next start tries again)")
        }
        delegate.async { [self] delegate in
            var documents: [String: HitCacheDocument] = [:]
            for (id, dictionary) in delegate.lookupHits() {
                do {
                    documents[id] = try HitCacheDocument(dictionary: dictionary)
                } catch {
                    logger.error("A cached hit was ignored: \(error)", metadata: logger.logLevel <= .debug ? ["hit_id": .string(id)] : nil)
                }
            }
            overran.withLock { $0 = false }
            guard decide() else { return }
            DeadlineTimer.shared.cancel(timer)
            let answer = documents
            found { [self] in
                load(answer)
                return answer.count
            }
        }
    }

    /// Whether the start's `lookupHits` still runs on the delegate's queue: calls made meanwhile
    /// are queued behind it, not awaited. For tests that need a hit in the cache once committed.
    var lookupRunning: Bool {
        lookupOverran.withLock { $0 }
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

    func save(_ cached: [CachedHit]) async throws -> Int {
        let hits = cached.map(\.hit)
        guard !hits.isEmpty else { return 0 }
        await call { delegate in
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
        if !evicted.isEmpty { await call { $0.flushHits(hitIds: evicted) } }
        return evicted.count
    }

    func claim(_ endpoint: HitEndpoint, limit: Int, now: Int64) async throws -> [OutgoingHit] {
        state.withLock { state in
            state.waiting.lend(endpoint, limit: limit, marking: &state.claimed)
        }
    }

    /// The delegate's `flushHits` is awaited on its queue (`call`).
    func settle(_ settlement: HitSettlement) async throws {
        let gone = Set(settlement.delivered + settlement.rejected)
        state.withLock { state in
            state.waiting.removeAll { gone.contains($0.id) }
            state.claimed.subtract(gone)
            state.claimed.subtract(settlement.failed)
            state.claimed.subtract(settlement.released)
        }
        guard !gone.isEmpty else { return }
        await call { $0.flushHits(hitIds: gone.sorted()) }
    }

    func deleteExpired(createdBefore boundary: Int64) async throws -> Int {
        await remove { $0.createdAt < boundary }
    }

    func purge(visitorId: String, keeping: Set<String>) async throws -> Int {
        await remove { $0.visitorId == visitorId && !$0.isConsentHit && !keeping.contains($0.id) }
    }

    func count() async throws -> Int {
        state.withLock { $0.waiting.count }
    }

    func releaseClaims(_ ids: [String]?) async throws {
        state.withLock { state in
            if let ids { state.claimed.subtract(ids) } else { state.claimed.removeAll() }
        }
    }

    /// The app keeps its hits where it chooses: the SDK takes its word for it.
    var durability: HitDurability { .durable }

    /// Claims are in this memory, and a claim walks no index: every claim looks.
    var ownTable: OwnHitTable? { nil }

    /// Calls the delegate on its queue and awaits the call (no thread waits for it), or, while an
    /// overrun lookup still runs there, queues the call behind it without waiting.
    private func call(_ body: @escaping @Sendable (any FSHitCacheDelegate) -> Void) async {
        if lookupOverran.withLock({ $0 }) {
            delegate.async(body)
        } else {
            await delegate.run(body)
        }
    }

    private func remove(where matches: (OutgoingHit) -> Bool) async -> Int {
        let removed = state.withLock { state -> [String] in
            let removed = state.waiting.filter(matches).map(\.id)
            state.waiting.removeAll(where: matches)
            state.claimed.subtract(removed)
            return removed
        }
        if !removed.isEmpty { await call { $0.flushHits(hitIds: removed) } }
        return removed.count
    }
}
