import Flagship
import FlagshipLocalServer
import FlagshipStore

/// What a run measured: its samples, and the counts once the SDK was closed.
struct SoakRun: Sendable {
    let plan: LoadPlan
    let samples: [Sample]
    let load: LoadCounters.Snapshot
    /// Visitors still in flight when the drain grace ran out (cancelled).
    let abandoned: Int
    /// The SDK's counts once closed, `nil` if it had not started.
    let closing: TrackingStatistics?
    /// Hits and activates the server took, up to the SDK's close.
    let deliveredAtClose: Int
    /// Requests the server took, up to the SDK's close (each batch of hits is one).
    var requestsAtClose = 0
    /// Ended before its duration by an interrupt (Ctrl-C).
    var interrupted = false
    /// Visitors the store shows decided at two moments or more: returning visitors decided again
    /// without their history. `nil` when not counted (no decision provenance, store unreadable).
    var decidedAgain: Int?
    /// Visitors with a returning visit that began before an earlier visit of theirs was decided
    /// (`VisitOverlaps`): left out of `decidedAgain`.
    var overlappedVisits = 0
    var overlapsOverflowed = false
    /// The SDK's log lines of the prunes that deleted visitors during the run (the first few).
    var prunes: [String] = []
}

enum OpenLoop {
    /// Offers `plan.rate` visitors per second to a fresh session for `plan.duration`, samples it,
    /// lets the visitors in flight finish (within the grace), and closes it.
    static func run(_ plan: LoadPlan, fixture: SoakFixture, onSample: @escaping @Sendable (Sample) -> Void) async throws(SoakError) -> SoakRun {
        let session = try await SoakSession.start(fixture: fixture, retention: plan.retention, maxVisitors: plan.maxVisitors,
                                                  seedStore: plan.seedStore, provenance: plan.provenance)
        let counters = LoadCounters()
        let latencies = LatencyLog()
        let journey = VisitorJourney(flagship: session.flagship, latencies: latencies)
        let sampler = Sampler(session: session, counters: counters, latencies: latencies, trimMalloc: plan.trimMalloc)
        let overlaps = VisitOverlaps()
        let clock = ContinuousClock()
        let start = clock.now
        let end = start + plan.duration

        async let sampled = sampler.run(from: start, to: end, every: plan.sampleInterval, onSample: onSample)
        let abandoned = await withTaskGroup(of: ChildEnd.self) { group -> Int in
            await offer(plan, from: start, until: end, to: &group,
                        visits: Visits(journey: journey, counters: counters, overlaps: overlaps))
            return await drain(&group, counters: counters, grace: plan.drainGrace)
        }
        let samples = await sampled
        let interrupted = Task.isCancelled
        let overlapped = overlaps.overlapped
        let decidedAgain = await Self.decidedAgain(plan, in: session, excusing: overlapped.indexes)
        let closing = await SoakSession.closeEvenIfCancelled(session)
        let received = session.server.totals
        return SoakRun(plan: plan, samples: samples, load: counters.snapshot, abandoned: abandoned, closing: closing,
                       deliveredAtClose: received.hits + received.activates, requestsAtClose: received.requests, interrupted: interrupted, decidedAgain: decidedAgain,
                       overlappedVisits: overlapped.indexes.count, overlapsOverflowed: overlapped.overflowed,
                       prunes: session.prunes.lines)
    }

    /// Offers `plan.rate` visitors per second to `group` from `start` until `end` (or an
    /// interrupt), starting each one the counters admit and leaving the others not started.
    private static func offer(_ plan: LoadPlan, from start: ContinuousClock.Instant, until end: ContinuousClock.Instant,
                              to group: inout TaskGroup<ChildEnd>, visits: Visits) async {
        let clock = ContinuousClock()
        var picker = VisitorPicker(newShare: plan.newVisitorShare, poolSize: plan.returningPool, seed: plan.seed)
        // Visitor k is due at start + k / rate; the loop wakes for the next one due and starts
        // every one due by then (several per wake at high rates, where timers are coarser).
        let total = Int(plan.rate * plan.duration.inSeconds)
        var offered = 0
        // An interrupt (Ctrl-C) cancels the run: it ends early, and is still closed and summed up.
        while offered < total, clock.now < end, !Task.isCancelled {
            let due = min(total, Int((clock.now - start).inSeconds * plan.rate) + 1)
            while offered < due {
                offered += 1
                let index = picker.next()
                guard visits.counters.admit(limit: plan.maxInFlight) else { continue }
                visits.start(index, in: &group)
            }
            // Finished visitors' results, so that the group does not keep them all.
            for _ in 0..<visits.counters.takeUncollected() { _ = await group.next() }
            let nextDue = start + .seconds(Double(offered) / plan.rate)
            try? await clock.sleep(until: min(nextDue, end), tolerance: .microseconds(200))
        }
    }

    /// What each visitor of a run needs: the journey it makes, the load's counters, and the
    /// record of visits that overlap.
    private struct Visits: Sendable {
        let journey: VisitorJourney
        let counters: LoadCounters
        let overlaps: VisitOverlaps

        /// Starts visitor `index`'s visit in `group`; it counts as decided once, when its flags are
        /// or at the latest when it ends.
        func start(_ index: Int, in group: inout TaskGroup<ChildEnd>) {
            overlaps.begin(index)
            group.addTask {
                let decided = Locked(false)
                let decide: @Sendable () -> Void = {
                    if decided.setFirst() { overlaps.decided(index) }
                }
                do {
                    try await journey.run(visitor: index, decided: decide)
                    counters.finish(failure: nil)
                } catch {
                    counters.finish(failure: error)
                }
                decide()
                return .visitor
            }
        }
    }

    /// Returning visitors the store shows decided again, the overlapped visits' visitors left
    /// out; `nil` without decision provenance or when the store cannot be read.
    private static func decidedAgain(_ plan: LoadPlan, in session: SoakSession, excusing overlapped: Set<Int>) async -> Int? {
        guard plan.provenance, let visitors = await session.visitorsDecidedAgain() else { return nil }
        let excused = Set(overlapped.map(SoakFixture.visitorId))
        return visitors.filter { !excused.contains($0) }.count
    }

    enum ChildEnd: Sendable {
        case visitor
        case graceOver
    }

    /// Waits for the visitors in flight, cancelling those left after `grace`; returns how many.
    private static func drain(_ group: inout TaskGroup<ChildEnd>, counters: LoadCounters, grace: Duration) async -> Int {
        guard counters.snapshot.inFlight > 0 else { return 0 }
        group.addTask {
            try? await Task.sleep(for: grace)
            return .graceOver
        }
        var abandoned = 0
        while let ended = await group.next() {
            switch ended {
            case .visitor:
                // The last one: the timer is cancelled and ends at once.
                if counters.snapshot.inFlight == 0 { group.cancelAll() }
            case .graceOver:
                abandoned = counters.snapshot.inFlight
                group.cancelAll()
            }
        }
        return abandoned
    }
}
