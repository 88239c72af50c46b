import FlagshipStore
import Foundation

/// How long a hit has waited, for the queue time it is sent with (`qt`, which the collector
/// subtracts from the time it receives the hit to date it).
///
/// A hit accepted in this process is aged on the monotonic clock from its acceptance: a step of
/// the system clock meanwhile (NTP correcting it, a hand-set date) changes nothing, so a hit that
/// waited 11 s says 11 s after the clock jumped 5 h ahead, or a day back. A hit this process does
/// not know the acceptance of (one an earlier process left in the store, a row an app's
/// transaction committed, or one past `limit`) is aged from its stored creation time on the
/// timeline the process started on (`StepSafeTime`): a step since the start is not counted, one
/// made while no process ran cannot be told apart from time that passed. A fleet's rows are aged
/// on the database's clock instead (their times are moved into this instance's clock as read).
///
/// Bounded: at most `limit` acceptances are kept, the oldest forgotten first (aged then as a hit
/// of no known acceptance); an entry goes when its hit is delivered or refused for good.
final class HitAges: Sendable {
    private struct State {
        var accepted: [String: TimeInterval] = [:]
        /// The ids in the order they were noted, a ring of `limit` slots: the one overwritten is
        /// forgotten, if still kept.
        var order: [String] = []
        var next = 0
    }

    private let state = Locked(State())
    private let clock: any SDKClock
    private let timeline: StepSafeTime
    /// Whether rows not accepted here are aged on the start's timeline: their creation times are
    /// stored as written (a local file). A fleet's store moves each time into this instance's
    /// clock as it is now when reading it, so its rows are aged on the wall clock.
    private let storedOnStartTimeline: Bool
    let limit: Int

    init(clock: any SDKClock, limit: Int, storedOnStartTimeline: Bool = true) {
        self.clock = clock
        self.limit = max(1, limit)
        self.storedOnStartTimeline = storedOnStartTimeline
        timeline = StepSafeTime(clock: clock)
    }

    /// A hit accepted now.
    func noteAccepted(_ id: String) {
        let uptime = clock.uptime()
        state.withLock { state in
            if state.order.count < limit {
                state.order.append(id)
            } else {
                state.accepted.removeValue(forKey: state.order[state.next])
                state.order[state.next] = id
                state.next = (state.next + 1) % limit
            }
            state.accepted[id] = uptime
        }
    }

    /// Hits delivered, or refused for good: their acceptance is not needed again.
    func forget(_ ids: some Sequence<String>) {
        state.withLock { state in
            for id in ids { state.accepted.removeValue(forKey: id) }
        }
    }

    /// Acceptances kept now.
    var count: Int {
        state.withLock { $0.accepted.count }
    }

    /// The queue times of `hits`, in milliseconds, never negative: by id.
    func queueTimes(of hits: [OutgoingHit]) -> [String: Int64] {
        let uptime = clock.uptime()
        let started = (storedOnStartTimeline ? timeline.measuredNow(clock) : clock.now()).unixMilliseconds
        let accepted = state.withLock { state in hits.map { state.accepted[$0.id] } }
        var times: [String: Int64] = [:]
        times.reserveCapacity(hits.count)
        for (hit, acceptedAt) in zip(hits, accepted) {
            if let acceptedAt {
                times[hit.id] = Int64((max(0, uptime - acceptedAt) * 1000).rounded())
            } else {
                times[hit.id] = EventsClient.queueTime(now: started, createdAt: hit.createdAt)
            }
        }
        return times
    }
}
