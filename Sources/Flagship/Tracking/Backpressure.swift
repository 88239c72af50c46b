import FlagshipStore
import Foundation
import Logging

/// Backpressure: what the tracking manager does when hits arrive faster than it delivers them
/// while the network answers.
///
/// The hit cache's cap is for outages: past it, the oldest unsent hits are evicted, which is the
/// right trade when the events endpoint cannot be reached for hours. While it answers, a backlog
/// that grows means the SDK falls behind, and eviction would throw away hits that were
/// acknowledged for no reason. So, once the backlog reaches `highWater` with sends succeeding:
/// - `try await sendHit` waits for room, `maxWait` at most, then throws `FlagshipError.overloaded`
///   (the hit was not taken: nothing acknowledged is lost);
/// - hits nobody awaits (`sendHitInBackground`, a flag read's activate) are shed, counted, with
///   one log line when shedding starts and one when it ends;
/// until the backlog is back under `lowWater`, or sends fail (an outage: the cap takes over).
/// Before a first batch is accepted, whether the endpoint answers is not known: no backpressure.
final class Backpressure: Sendable {
    struct Settings: Sendable {
        /// Hits waiting (in the cache and for the group commit) at which backpressure starts.
        var highWater: Int
        /// Hits waiting under which it ends.
        var lowWater: Int
        /// How long `try await sendHit` waits for room at most.
        var maxWait: TimeInterval

        /// Half the cache's cap to start, a quarter to end: far from the cap, where eviction would
        /// begin, and far enough apart that the state does not flap with each commit.
        init(capacity: Int, maxWait: TimeInterval = 5) {
            highWater = max(1, capacity / 2)
            lowWater = max(0, capacity / 4)
            self.maxWait = maxWait
        }
    }

    private struct State {
        var backlog = 0
        var overloaded = false
        /// Until a batch is accepted, whether the events endpoint answers is not known: no
        /// backpressure before then (the cap's eviction is the outage rule).
        var sendsFailing = true
        /// Hits shed since this instance started, and since the current overload began.
        var shed = 0
        var shedInEpisode = 0
        var episodeStarted: ContinuousClock.Instant?
        /// Set while overloaded, fulfilled when the overload ends: what `waitForRoom` awaits.
        var episodeEnd: OneShot<Void>?
    }

    let settings: Settings
    private let state = Locked(State())
    private let logger: Logger
    private let instrumentation: (any FlagshipInstrumentation)?

    init(settings: Settings, logger: Logger, instrumentation: (any FlagshipInstrumentation)?) {
        self.settings = settings
        self.logger = logger
        self.instrumentation = instrumentation
    }

    // MARK: Told by the writer and the sender

    /// Hits now waiting: in the cache as of its last write or settlement, and for the group commit.
    func update(backlog: Int) {
        let change = state.withLock { state -> Change in
            state.backlog = max(0, backlog)
            return reevaluate(&state)
        }
        instrumentation?.backlog(hits: max(0, backlog))
        apply(change)
    }

    /// Sends fail (an outage: the cap and its eviction take over) or succeed again.
    func sendsFailing(_ failing: Bool) {
        let change = state.withLock { state -> Change in
            guard state.sendsFailing != failing else { return Change() }
            state.sendsFailing = failing
            return reevaluate(&state)
        }
        apply(change)
    }

    // MARK: Asked before a hit is taken

    /// For a hit nobody awaits: `false` when it is shed (counted).
    func admit(_ kind: FSHitKind) -> Bool {
        let shed = state.withLock { state -> Bool in
            guard state.overloaded else { return false }
            state.shed += 1
            state.shedInEpisode += 1
            return true
        }
        if shed { instrumentation?.hitsShed(kind: kind, count: 1) }
        return !shed
    }

    /// For an awaited hit: returns `true` at once without backpressure, else once the backlog is
    /// under `lowWater` (or sends fail); `false` after `maxWait` on `clock`.
    func waitForRoom(clock: any SDKClock) async -> Bool {
        guard let episodeEnd = state.withLock({ $0.overloaded ? $0.episodeEnd : nil }) else { return true }
        // Timed out, a waiter is forgotten at once: waiters stay bounded by those waiting now. Not
        // ended by the caller's cancellation: `overloaded` would say it waited `maxWait`.
        let deadline = clock.now().addingTimeInterval(settings.maxWait)
        return await episodeEnd.value(until: deadline, clock: clock, cancellable: false) != nil
    }

    // MARK: Read

    var isOverloaded: Bool {
        state.withLock { $0.overloaded }
    }

    /// Whether sends fail (or none was accepted yet): the cap's eviction is the rule then.
    var sendsAreFailing: Bool {
        state.withLock { $0.sendsFailing }
    }

    /// Hits waiting when last told.
    var backlog: Int {
        state.withLock { $0.backlog }
    }

    /// Hits shed since start.
    var shed: Int {
        state.withLock { $0.shed }
    }

    /// Callers waiting for room.
    var waiterCount: Int {
        state.withLock { $0.episodeEnd?.waiting ?? 0 }
    }

    // MARK: Transitions

    private struct Change {
        var started = false
        var ended: (shed: Int, lasted: Duration)?
        var released: OneShot<Void>?
    }

    private func reevaluate(_ state: inout State) -> Change {
        var change = Change()
        if !state.overloaded, !state.sendsFailing, state.backlog >= settings.highWater {
            state.overloaded = true
            state.shedInEpisode = 0
            state.episodeStarted = .now
            state.episodeEnd = OneShot()
            change.started = true
        } else if state.overloaded, state.sendsFailing || state.backlog <= settings.lowWater {
            state.overloaded = false
            change.ended = (state.shedInEpisode, state.episodeStarted.map { ContinuousClock.now - $0 } ?? .zero)
            change.released = state.episodeEnd
            state.episodeEnd = nil
        }
        return change
    }

    private func apply(_ change: Change) {
        if change.started {
            logger.warning("Hits arrive faster than they are delivered (\(settings.highWater) wait while the events endpoint answers): `try await sendHit` waits for room (\(settings.maxWait.millisecondsText) at most, then throws), hits nobody awaits are shed and counted, until \(settings.lowWater) or fewer wait; said again when it ends")
        }
        if let ended = change.ended {
            logger.warning("Backpressure ended after \(String(format: "%.1f", ended.lasted.inSeconds)) s: \(ended.shed) hit(s) nobody awaited were shed meanwhile")
        }
        change.released?.fulfil(())
    }
}
