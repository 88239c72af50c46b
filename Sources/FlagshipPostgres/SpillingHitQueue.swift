#if Postgres
import Flagship
import FlagshipStore
import Foundation
import Logging

/// The fleet's hits and visitors with a local spill: they go to PostgreSQL; while it cannot be
/// reached they go to the instance's own SQLite file instead (committed there, so an
/// acknowledged hit still survives `kill -9`), and this instance sends those hits from there to
/// the events endpoint. Visitor documents kept locally go to PostgreSQL with the first write
/// once it is back (the newer document of a visitor wins), and leave the local file then.
///
/// After a failed call to PostgreSQL, the spill takes every write for `retryAfter` without
/// trying PostgreSQL first (a server that is away would make each write wait for the call's
/// timeout); then PostgreSQL is tried again. One warning when PostgreSQL goes away (any call that
/// fails), one when it is back: when hits are committed there again, whatever other calls
/// answered meanwhile.
final class SpillingHitQueue: VisitorKeepingHitQueue {
    struct State {
        /// PostgreSQL is not tried before this (unix ms).
        var primaryDownUntil: Int64 = 0
        /// The hits this instance claimed from the spill, to settle them there.
        var claimedFromSpill: Set<String> = []
        /// What became of hits claimed from PostgreSQL, not yet recorded there because it went
        /// away: recorded once it is back (else their leases lapse and they are sent again).
        var unrecorded: [HitSettlement] = []
        /// Whether the local file may hold visitor documents PostgreSQL has not got (true at
        /// start: an earlier run may have left some).
        var localVisitorsWaiting = true
        /// Visitors whose document PostgreSQL refused (`refusesRows`): kept in the local file,
        /// which lookups then read too, and not moved again in this run (at most
        /// `refusedVisitorsKept` remembered).
        var refusedVisitors: Set<String> = []
        /// Whether consent erasures PostgreSQL missed may wait in the local store (true at start:
        /// an earlier run may have left some).
        var erasuresWaiting = true
    }

    /// A consent erasure PostgreSQL could not take when consent was withdrawn, kept in the local
    /// store's `sdk_state` (so that a restart still carries it out) until PostgreSQL takes it.
    struct PendingErasure: Codable {
        /// When consent was withdrawn (unix ms): what was written after it is spared.
        var withdrawnAt: Int64
        /// Hits accepted after the withdrawal, spared too.
        var keeping: [String]

        static let keyPrefix = "postgres_erasure_pending."
    }

    /// Local documents moved to PostgreSQL with one write, at most.
    static let visitorsMovedPerWrite = 500
    /// Visitors PostgreSQL refused that are remembered, at most.
    static let refusedVisitorsKept = 10_000

    let primary: PostgresHitQueue
    let spill: LocalHitsAndVisitors
    let retryAfter: Int64
    let now: @Sendable () -> Int64
    let outage: OutageLog
    let logger: Logger
    let state = Locked(State())

    init(primary: PostgresHitQueue, spill: LocalHitsAndVisitors, retryAfter: TimeInterval, logger: Logger, now: @escaping @Sendable () -> Int64) {
        self.primary = primary
        self.spill = spill
        self.retryAfter = Int64(retryAfter * 1000)
        self.now = now
        self.logger = logger
        outage = OutageLog(logger: logger, now: { Date(timeIntervalSince1970: Double(now()) / 1000) })
    }

    var primaryIsUp: Bool {
        state.withLock { $0.primaryDownUntil } <= now()
    }

    /// A call that failed because its caller gave up (its task was cancelled: a visitor lookup
    /// past its deadline) says nothing about PostgreSQL, and does not count.
    func primaryFailed(_ error: any Error) {
        guard !Task.isCancelled else { return }
        let until = now() + retryAfter
        state.withLock { $0.primaryDownUntil = until }
        outage.failed(
            started: { _ in "The PostgreSQL store cannot be used (\(error)): hits are committed to this instance's local store and sent from there; said again once PostgreSQL is back" },
            retrying: { failures in "The PostgreSQL store still cannot be used (\(error)) (failure \(failures) in a row)" })
    }

    /// Hits (or visitor documents) were committed to PostgreSQL: the one call that ends an
    /// outage. A read, a claim, a settlement or an erasure that worked does not: a server whose
    /// full disk refuses new rows still answers those, and the two lines would alternate with
    /// every retry.
    func hitsCommitted() {
        outage.succeeded { failures, seconds in
            "The PostgreSQL store is back, after \(failures) failed attempt(s) over \(seconds) s: hits are committed there again"
        }
    }

    /// `work` on PostgreSQL when it is up, else (or when it fails) `fallback`.
    func either<T>(_ work: () async throws -> T, else fallback: () async throws -> T) async throws -> T {
        guard primaryIsUp else { return try await fallback() }
        do {
            return try await work()
        } catch {
            primaryFailed(error)
            return try await fallback()
        }
    }

    func save(_ hits: [CachedHit]) async throws -> Int {
        try await save(hits, visitors: []).hits.get()
    }

    /// PostgreSQL, with the documents the local file kept meanwhile; else the local file.
    func save(_ hits: [CachedHit], visitors: [VisitorRecord]) async -> HitsAndVisitorsSaved {
        guard primaryIsUp else { return await saveLocally(hits, visitors: visitors) }
        let moving = visitorsToMove()
        let saved = await primary.save(hits, visitors: moving + visitors)
        if case .failure(let error) = saved.hits {
            if Self.refusesRows(error) { return await saveRowByRow(hits, visitors: visitors, moving: moving, refusal: error) }
            primaryFailed(error)
            return await saveLocally(hits, visitors: visitors)
        }
        // Erasures PostgreSQL missed are carried out by the sender's next claim (`recordUnrecorded`).
        hitsCommitted()
        guard !moving.isEmpty else { return saved }
        do {
            try spill.forget(moving)
            state.withLock { $0.localVisitorsWaiting = moving.count == Self.visitorsMovedPerWrite }
        } catch {
            // They are moved again with the next write: PostgreSQL keeps the newer of the two.
            logger.warning("Visitor documents moved to the PostgreSQL store could not be deleted from the local store: \(error)")
        }
        return saved
    }

    /// Whether PostgreSQL refused a statement for what its rows hold rather than for its own
    /// state (`FlagshipPostgresError.refusesRows`): PostgreSQL answers, so not an outage.
    static func refusesRows(_ error: any Error) -> Bool {
        (error as? FSCacheError)?.code == .refused
    }

    /// A group commit PostgreSQL refused for what a row holds: each hit written alone, then each
    /// visitor document alone. What PostgreSQL still refuses is committed to this instance's
    /// local store, and its hits sent from there (one warning per commit, naming why): never
    /// lost, and never holding the rest of the commit or the instance out of the shared store.
    /// A failure of another kind meanwhile is an outage, as for any write: what is left goes to
    /// the local store.
    func saveRowByRow(_ hits: [CachedHit], visitors: [VisitorRecord], moving: [VisitorRecord],
                      refusal: any Error) async -> HitsAndVisitorsSaved {
        var kept: [CachedHit] = []
        var evicted = 0
        var reasons: [String] = []
        var outage: (any Error)?
        for hit in hits {
            guard outage == nil else {
                kept.append(hit)
                continue
            }
            switch await primary.save([hit], visitors: []).hits {
            case .success(let count):
                evicted += count
            case .failure(let error) where Self.refusesRows(error):
                kept.append(hit)
                reasons.append("\(error)")
            case .failure(let error):
                outage = error
                kept.append(hit)
            }
        }
        var keptVisitors: [VisitorRecord] = []
        var moved: [VisitorRecord] = []
        let newVisitors = Set(visitors.map(\.visitorId))
        for visitor in moving + visitors {
            guard outage == nil else {
                if newVisitors.contains(visitor.visitorId) { keptVisitors.append(visitor) }
                continue
            }
            switch await primary.save([], visitors: [visitor]).hits {
            case .success:
                if !newVisitors.contains(visitor.visitorId) { moved.append(visitor) }
            case .failure(let error) where Self.refusesRows(error):
                // A moving one stays where it is, in the local file.
                if newVisitors.contains(visitor.visitorId) { keptVisitors.append(visitor) }
                reasons.append("\(error)")
                state.withLock { state in
                    if state.refusedVisitors.count < Self.refusedVisitorsKept { state.refusedVisitors.insert(visitor.visitorId) }
                }
            case .failure(let error):
                outage = error
                if newVisitors.contains(visitor.visitorId) { keptVisitors.append(visitor) }
            }
        }
        if !moved.isEmpty { try? spill.forget(moved) }
        if let outage {
            primaryFailed(outage)
        } else if kept.count < hits.count {
            hitsCommitted()
        }
        if !reasons.isEmpty {
            logger.warning("The PostgreSQL store refused \(kept.count) hit(s)\(keptVisitors.isEmpty ? "" : " and \(keptVisitors.count) visitor document(s)") of a commit (\(reasons.first ?? "\(refusal)")): kept in this instance's local store and sent from there; the rest of the commit is in PostgreSQL")
        }
        guard !kept.isEmpty || !keptVisitors.isEmpty else { return HitsAndVisitorsSaved(hits: .success(evicted), documents: nil) }
        var local = await saveLocally(kept, visitors: keptVisitors)
        if case .success(let count) = local.hits { local.hits = .success(count + evicted) }
        return local
    }

    func saveLocally(_ hits: [CachedHit], visitors: [VisitorRecord]) async -> HitsAndVisitorsSaved {
        if !visitors.isEmpty { state.withLock { $0.localVisitorsWaiting = true } }
        return await spill.save(hits, visitors: visitors)
    }

    /// The documents the local file kept while PostgreSQL was away, the newest first: past the
    /// batch, the next write takes the rest.
    func visitorsToMove() -> [VisitorRecord] {
        guard state.withLock({ $0.localVisitorsWaiting }) else { return [] }
        do {
            let refused = state.withLock { $0.refusedVisitors }
            let kept = try spill.keptVisitors(limit: Self.visitorsMovedPerWrite).filter { !refused.contains($0.visitorId) }
            if kept.isEmpty { state.withLock { $0.localVisitorsWaiting = false } }
            return kept
        } catch {
            logger.warning("Visitor documents kept locally could not be read to be moved to PostgreSQL: \(error)")
            return []
        }
    }

    /// The newer of PostgreSQL's document and one the local file kept meanwhile.
    func lookUpVisitor(id visitorId: String) async throws -> VisitorRecord? {
        let local = readsLocally ? try await spill.lookUpVisitor(id: visitorId) : nil
        guard primaryIsUp else { return local }
        do {
            let shared = try await primary.lookUpVisitor(id: visitorId)
            return Self.newer(local, shared)
        } catch {
            primaryFailed(error)
            return local
        }
    }

    /// Whether a lookup reads the local file too: it may hold a newer document.
    var readsLocally: Bool {
        state.withLock { $0.localVisitorsWaiting || !$0.refusedVisitors.isEmpty } || !primaryIsUp
    }

    static func newer(_ local: VisitorRecord?, _ shared: VisitorRecord?) -> VisitorRecord? {
        guard let shared else { return local }
        guard let local else { return shared }
        return local.updatedAt > shared.updatedAt ? local : shared
    }

    /// The spill's hits first (only this instance can send them), then PostgreSQL's.
    /// Each round's claims first record what PostgreSQL missed (outcomes, erasures) once it answers.
    func claim(_ endpoint: HitEndpoint, limit: Int, now: Int64) async throws -> [OutgoingHit] {
        await recordUnrecorded()
        let local = try await spill.claim(endpoint, limit: limit, now: now)
        if !local.isEmpty {
            state.withLock { $0.claimedFromSpill.formUnion(local.map(\.id)) }
        }
        guard local.count < limit, primaryIsUp else { return local }
        do {
            return local + (try await primary.claim(endpoint, limit: limit - local.count, now: now))
        } catch {
            primaryFailed(error)
            return local
        }
    }

    func settle(_ settlement: HitSettlement) async throws {
        let fromSpill = state.withLock { state -> Set<String> in
            let ids = Set(settlement.delivered + settlement.rejected + settlement.failed)
            let mine = state.claimedFromSpill.intersection(ids)
            state.claimedFromSpill.subtract(mine)
            return mine
        }
        func part(_ inSpill: Bool) -> HitSettlement {
            HitSettlement(delivered: settlement.delivered.filter { fromSpill.contains($0) == inSpill },
                          rejected: settlement.rejected.filter { fromSpill.contains($0) == inSpill },
                          failed: settlement.failed.filter { fromSpill.contains($0) == inSpill },
                          nextAttemptAt: settlement.nextAttemptAt)
        }
        try await spill.settle(part(true))
        let shared = part(false)
        if !shared.isEmpty { state.withLock { $0.unrecorded.append(shared) } }
        await recordUnrecorded()
    }

    /// Records in PostgreSQL the outcomes it missed, when it is up. Until then they wait in
    /// memory: a process that ends first leaves those leases to lapse, and their hits are sent
    /// again (the duplicates a crash may cause, never a loss).
    func recordUnrecorded() async {
        guard primaryIsUp else { return }
        await carryOutErasures()
        let waiting = state.withLock { state -> [HitSettlement] in
            defer { state.unrecorded = [] }
            return state.unrecorded
        }
        guard !waiting.isEmpty else { return }
        let merged = HitSettlement(delivered: waiting.flatMap(\.delivered), rejected: waiting.flatMap(\.rejected), failed: [],
                                   nextAttemptAt: nil)
        // Failed attempts keep their own retry times: one settle each.
        let failures = waiting.filter { !$0.failed.isEmpty }.map { HitSettlement(failed: $0.failed, nextAttemptAt: $0.nextAttemptAt) }
        var left: [HitSettlement] = []
        for settlement in [merged] + failures where !settlement.isEmpty {
            do {
                try await primary.settle(settlement)
            } catch {
                primaryFailed(error)
                left.append(settlement)
            }
        }
        if !left.isEmpty { state.withLock { $0.unrecorded = left + $0.unrecorded } }
    }

    func deleteExpired(createdBefore boundary: Int64) async throws -> Int {
        let local = try await spill.deleteExpired(createdBefore: boundary)
        let shared = (try? await either({ try await primary.deleteExpired(createdBefore: boundary) }, else: { 0 })) ?? 0
        return local + shared
    }

    /// Consent withdrawn: both stores. PostgreSQL away, its rows of the visitor stay until the
    /// next erasure reaches it; the error says so to the caller.
    func purge(visitorId: String, keeping: Set<String>) async throws -> Int {
        let local = try await spill.purge(visitorId: visitorId, keeping: keeping)
        return local + (try await primary.purge(visitorId: visitorId, keeping: keeping))
    }

    func count() async throws -> Int {
        let local = try await spill.count()
        return local + ((try? await either({ try await primary.count() }, else: { 0 })) ?? 0)
    }

    func releaseClaims(_ ids: [String]?) async throws {
        try await spill.releaseClaims(ids)
        state.withLock { state in
            if let ids { state.claimedFromSpill.subtract(ids) } else { state.claimedFromSpill.removeAll() }
        }
        try? await primary.releaseClaims(ids)
    }

    func loadCached(now: Int64, found: @escaping @Sendable (_ takeIn: @escaping @Sendable () -> Int) -> Void) {
        spill.loadCached(now: now, found: found)
        primary.loadCached(now: now, found: found)
    }

    /// What PostgreSQL takes survives; what the spill takes survives as the local store does.
    var durability: HitDurability {
        let spilled = spill.durability
        return HitDurability(notDurable: primaryIsUp ? nil : spilled.notDurable, waitingHitsSurvive: spilled.waitingHitsSurvive)
    }

    /// PostgreSQL is shared by the fleet, and the spill's rows go to it: every claim looks.
    var ownTable: OwnHitTable? { nil }
}
#endif
