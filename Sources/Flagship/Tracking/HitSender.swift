import FlagshipStore
import Foundation
import Logging

/// The sender: the one owner of claim → send → settle → backoff.
///
/// It runs as one loop for the life of the tracking manager (`run()`, a child of the manager's
/// `run`, itself a child of the SDK instance's background task), woken by a signal: at start (replay), when the pool reaches `poolMaxSize`,
/// at once for an activate, at each interval, and when the backoff gate opens. A round claims the
/// oldest page of activates (100 at most per request), then of hits, sends it and records the
/// outcome in one transaction, and goes on while pages come full, so a restart replays everything
/// oldest first. A round asked for while one ran waits out `roundSpacing` first, so that what
/// keeps arriving under load gathers into fuller requests.
///
/// A retryable failure closes a gate for an exponential backoff with jitter (1 s doubling to
/// 5 min, `Retry-After` as a floor), reset by a success; nothing is sent before it opens, so there
/// is never a tight loop. Refused hits are dropped with an error log.
final class HitSender: Sendable {
    /// What the sender counted, for the tracking statistics.
    struct Counts: Sendable, Equatable {
        var delivered = 0
        var rejected = 0
        var failedRequests = 0
    }

    struct State {
        /// A round runs, or is about to (signalled).
        var running = false
        /// Asked again while a round ran: one more round after it.
        var flushRequested = false
        /// Ends the wait for the round spacing early (`close()`); set while that wait lasts.
        var endSpacing: (@Sendable (Bool) -> Void)?
        /// Hits ready to send since the last round started: the pool size that triggers a batch.
        var poolCount = 0
        /// Backoff: nothing is sent before this time (stored as the rows' `next_attempt_at`)...
        var retryAt: Date?
        /// ...which the gate reads on the monotonic clock (`SDKClock.uptime()`): a step of the
        /// wall clock back does not hold hits for as long as the step.
        var retryAtUptime: TimeInterval?
        var backoff: Backoff
        var closed = false
        /// Set while `close()`'s last round runs: it ignores the backoff gate, and ends by then.
        var finalDeadline: Date?
        /// `close()` has counted what is left: the outcome of a send still under way is not recorded.
        var abandoned = false
        /// Set while a round runs (or is about to), fulfilled when the sender stops: what
        /// `waitForIdle` awaits. One per busy spell.
        var idle: OneShot<Void>?
        /// The endpoints whose cached hits could not be claimed last time (logged once until they can).
        var cacheReadFailing: Set<HitEndpoint> = []
        var counts = Counts()

        /// A round is about to run: the spell begins, unless one goes on.
        mutating func becomesBusy() {
            running = true
            if idle == nil { idle = OneShot() }
        }

        /// The sender stopped (`running` is false): the spell's waiters, to tell.
        mutating func becameIdle() -> OneShot<Void>? {
            defer { idle = nil }
            return idle
        }
    }

    let settings: TrackingManager.Settings
    let store: TrackingStore
    let writer: HitWriter
    let events: EventsClient
    let clock: any SDKClock
    let logger: Logger
    /// One warning when deliveries start failing, one when they succeed again; retries at debug.
    let outage: OutageLog
    let callbacks: DeliveryCallbacks
    /// Hits committed claimed, waiting here to be sent without a claim (`nil`: every hit is claimed).
    let committedHits: CommittedHits?
    let backpressure: Backpressure?
    /// Each hit's queue time, on the monotonic clock for hits accepted here.
    let ages: HitAges?
    let state: Locked<State>
    /// Wakes the loop. At most one signal waits: a flush asked for while one is pending is the
    /// same flush (`requestFlush` signals only when it marks the sender running).
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation
    /// When the backoff gate opens next, on the monotonic clock (`SDKClock.uptime()`): the wake
    /// loop sleeps until then and asks for a round.
    private let wakes: AsyncStream<TimeInterval>
    let wake: AsyncStream<TimeInterval>.Continuation

    init(settings: TrackingManager.Settings, store: TrackingStore, writer: HitWriter, events: EventsClient,
         clock: any SDKClock, logger: Logger, callbacks: DeliveryCallbacks,
         committedHits: CommittedHits? = nil, backpressure: Backpressure? = nil, ages: HitAges? = nil) {
        self.settings = settings
        self.ages = ages
        self.committedHits = committedHits
        self.backpressure = backpressure
        self.store = store
        self.writer = writer
        self.events = events
        self.clock = clock
        self.logger = logger
        // An outage's length on the monotonic clock: a step of the wall clock during it is not time.
        outage = OutageLog(logger: logger, now: { [clock] in Date(timeIntervalSinceReferenceDate: clock.uptime()) })
        self.callbacks = callbacks
        state = Locked(State(backoff: Backoff(base: settings.backoffBase, cap: settings.backoffCap)))
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        (wakes, wake) = AsyncStream.makeStream(of: TimeInterval.self, bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: Asked to send

    /// Hits now waiting to be sent: a batch starts when `poolMaxSize` of them gathered, at once
    /// for an activate.
    func noteReady(hits: Int, activate: Bool) {
        let full = state.withLock { state -> Bool in
            state.poolCount += hits
            return activate || state.poolCount >= settings.poolMaxSize
        }
        if full { requestFlush() }
    }

    /// Starts a round unless one runs (then it goes round once more) or the backoff gate is closed.
    func requestFlush() {
        guard settings.sends else { return }
        let start = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            if state.running {
                state.flushRequested = true
                return false
            }
            if !gateOpen(state.retryAtUptime) { return false }
            state.becomesBusy()
            state.flushRequested = false
            return true
        }
        guard start else { return }
        signal.yield()
    }

    // MARK: The loops (children of the tracking manager's `run`)

    /// Runs rounds as signals come, until `finish()` (or `close()` cancels the manager's `run`).
    func run() async {
        for await _ in signals {
            await rounds()
        }
        // Ended, or cancelled by `close()` at its deadline: a round signalled and never started is
        // not waited for.
        state.withLock { state in
            state.running = false
            return state.becameIdle()
        }?.fulfil(())
    }

    /// Asks for a round each time the backoff gate opens, until the lifecycle cancels it.
    ///
    /// The gate's time is kept on the monotonic clock and made a wall-clock deadline only here,
    /// as the wait is armed (the clock's waits last what they were armed for): a step of the
    /// system clock between the failure and this loop taking it up is not waited for too. A wait
    /// that ends before the gate opens on the monotonic clock (two clocks' rounding) waits out the
    /// rest: `requestFlush` would find the gate still closed, and nothing would wake it again.
    func runWakes() async {
        for await opensAt in wakes {
            do {
                while !gateOpen(opensAt) {
                    try await clock.sleep(until: clock.now().addingTimeInterval(opensAt - clock.uptime()))
                }
            } catch {
                return
            }
            requestFlush()
        }
    }

    private func rounds() async {
        while true {
            let started = clock.now()
            await flushRound(until: state.withLock { $0.finalDeadline })
            let again = state.withLock { state -> Bool in
                if state.flushRequested && gateOpen(state.retryAtUptime) && !state.closed {
                    state.flushRequested = false
                    return true
                }
                state.running = false
                state.flushRequested = false
                return false
            }
            if !again { break }
            // Asked again while this round ran: the next one waits out the spacing, so that what
            // keeps arriving gathers into it.
            if await !waitOutSpacing(since: started) {
                state.withLock { $0.running = false }
                break
            }
        }
        // A round signalled meanwhile keeps the spell going: its waiters wait for that round too.
        state.withLock { $0.running ? nil : $0.becameIdle() }?.fulfil(())
    }

    /// Waits until `roundSpacing` has passed since `started` on the SDK's clock; `false` when the
    /// sender must stop instead: `close()` ends the wait at once, and its last round sends what waits.
    private func waitOutSpacing(since started: Date) async -> Bool {
        let next = started.addingTimeInterval(settings.roundSpacing)
        guard settings.roundSpacing > 0, clock.now() < next else { return true }
        let ended = await firstOf(deadline: next, clock: clock) { (end: @escaping @Sendable (Bool) -> Void) in
            let closed = state.withLock { state -> Bool in
                if !state.closed { state.endSpacing = end }
                return state.closed
            }
            if closed { end(true) }
        }
        return state.withLock { state in
            state.endSpacing = nil
            // The round about to start takes what a flush asked meanwhile wanted sent.
            state.flushRequested = false
            return ended == nil && !state.closed
        }
    }

    // MARK: A round

    /// Sends pages, activates first, until both run dry, a send fails, or `deadline` passes.
    private func flushRound(until deadline: Date?) async {
        state.withLock { $0.poolCount = 0 }
        var pending: PendingSettlement?
        await sendPages(until: deadline, settling: &pending)
        await recordSettlement(pending)
    }

    private func sendPages(until deadline: Date?, settling pending: inout PendingSettlement?) async {
        while true {
            if let deadline, clock.now() >= deadline { return }
            let activates = await sendPage(.activate, settling: &pending)
            if activates == .failed { return }
            if let deadline, clock.now() >= deadline { return }
            let hits = await sendPage(.events, settling: &pending)
            if hits == .failed { return }
            if activates != .full && hits != .full { return }
        }
    }

    // MARK: Closing

    /// No round starts any more but `finalRound`'s; a wait for the round spacing ends now, and
    /// no backoff wake comes.
    func close() {
        let endSpacing = state.withLock { state -> (@Sendable (Bool) -> Void)? in
            state.closed = true
            defer { state.endSpacing = nil }
            return state.endSpacing
        }
        endSpacing?(true)
        wake.finish()
    }

    /// Waits until no round runs, but not past `deadline` (or the caller's cancellation); `true`
    /// once idle.
    @discardableResult
    func waitForIdle(until deadline: Date? = nil) async -> Bool {
        guard let idle = state.withLock({ $0.running ? $0.idle : nil }) else { return true }
        guard let deadline else { return await idle.value() != nil }
        return await idle.value(until: deadline, clock: clock) != nil
    }

    /// `close()`'s last round, which ignores the backoff gate, run by the loop and waited for
    /// until `deadline`. Returns `false` when it did not end by then (or could not start, the
    /// round before it still running): its send is then abandoned.
    func finalRound(until deadline: Date) async -> Bool {
        guard settings.sends else { return true }
        let start = state.withLock { state -> Bool in
            guard !state.running else { return false }
            state.becomesBusy()
            state.finalDeadline = deadline
            return true
        }
        guard start else { return false }
        signal.yield()
        let ended = await waitForIdle(until: deadline)
        state.withLock { $0.finalDeadline = nil }
        return ended
    }

    /// Whether the last send failed and the backoff holds the next one.
    var sendsFailing: Bool {
        state.withLock { $0.retryAt != nil }
    }

    /// Whether a round runs now.
    var isRunning: Bool {
        state.withLock { $0.running }
    }

    /// Whether the backoff gate that opens at `opensAt` on the monotonic clock is open (`nil`: no
    /// backoff). Within a microsecond counts as open: a wait armed for it ends there whatever the
    /// rounding of the clocks that measured it, and the wake's round is not refused.
    private func gateOpen(_ opensAt: TimeInterval?) -> Bool {
        guard let opensAt else { return true }
        return clock.uptime() >= opensAt - 0.000_001
    }

    /// No signal comes any more: the loop ends after its round.
    func finish() {
        signal.finish()
        wake.finish()
    }

    /// `close()` counted what is left: a send still under way records nothing.
    func abandon() {
        state.withLock { $0.abandoned = true }
    }

    var counts: Counts {
        state.withLock { $0.counts }
    }

    var idleWaiterCount: Int {
        state.withLock { $0.idle?.waiting ?? 0 }
    }
}

extension SendResult.Outcome {
    var isRejection: Bool {
        if case .rejected = self { return true }
        return false
    }
}
