import FlagshipStore
import Foundation
import Logging

/// The sender: the one owner of claim → send → settle → backoff.
///
/// It runs as one loop for the life of the tracking manager (`run()`, a child of the manager's
/// lifecycle task), woken by a signal: at start (replay), when the pool reaches `poolMaxSize`,
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

    private enum PageOutcome {
        case empty, partial, full, failed
    }

    private struct State {
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
        /// Told when the sender stops; each is safe to call more than once.
        var idleWaiters: [@Sendable () -> Void] = []
        /// The endpoints whose cached hits could not be claimed last time (logged once until they can).
        var cacheReadFailing: Set<HitEndpoint> = []
        var counts = Counts()
    }

    private let settings: TrackingManager.Settings
    private let store: TrackingStore
    private let writer: HitWriter
    private let events: EventsClient
    private let clock: any SDKClock
    private let logger: Logger
    /// One warning when deliveries start failing, one when they succeed again; retries at debug.
    private let outage: OutageLog
    private let callbacks: DeliveryCallbacks
    /// Hits committed claimed, waiting here to be sent without a claim (`nil`: every hit is claimed).
    private let committedHits: CommittedHits?
    private let backpressure: Backpressure?
    /// Each hit's queue time, on the monotonic clock for hits accepted here.
    private let ages: HitAges?
    private let state: Locked<State>
    /// Wakes the loop. At most one signal waits: a flush asked for while one is pending is the
    /// same flush (`requestFlush` signals only when it marks the sender running).
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation
    /// When the backoff gate opens next: the wake loop sleeps until then and asks for a round.
    private let wakes: AsyncStream<Date>
    private let wake: AsyncStream<Date>.Continuation

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
        (wakes, wake) = AsyncStream.makeStream(of: Date.self, bufferingPolicy: .bufferingNewest(1))
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
            if let retryAt = state.retryAtUptime, clock.uptime() < retryAt { return false }
            state.running = true
            state.flushRequested = false
            return true
        }
        guard start else { return }
        signal.yield()
    }

    // MARK: The loops (children of the tracking manager's lifecycle task)

    /// Runs rounds as signals come, until `finish()` (or the lifecycle task is cancelled).
    func run() async {
        for await _ in signals {
            await rounds()
        }
        // Ended, or cancelled by `close()` at its deadline: a round signalled and never started is
        // not waited for.
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            state.running = false
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        for waiter in waiters { waiter() }
    }

    /// Asks for a round each time the backoff gate opens, until the lifecycle cancels it.
    func runWakes() async {
        for await date in wakes {
            do {
                try await clock.sleep(until: date)
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
                let gateOpen = state.retryAtUptime.map { clock.uptime() >= $0 } ?? true
                if state.flushRequested && gateOpen && !state.closed {
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
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        for waiter in waiters { waiter() }
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

    /// The outcome of a page sent, not yet recorded: the next page's claim records it in the same
    /// visit to the store queue (under load, each visit waits for a group commit), or the round's
    /// end does.
    private struct PendingSettlement {
        let settlement: HitSettlement
        let count: Int
        /// `onVisitorExposed` callbacks of the delivered activates: called once it is recorded.
        let exposed: [@Sendable () -> Void]
    }

    /// Sends pages, activates first, until both run dry, a send fails, or `deadline` passes.
    private func flushRound(until deadline: Date?) async {
        state.withLock { $0.poolCount = 0 }
        var pending: PendingSettlement?
        await sendPages(until: deadline, settling: &pending)
        // Settlements recorded beside the sends are all in the store before the round ends.
        if committedHits != nil { await store.runSending {} }
        guard let pending else { return }
        let error = await store.runSending { [queue = store.hits] () -> (any Error)? in
            do {
                try queue.settle(pending.settlement)
                return nil
            } catch {
                return error
            }
        }
        recorded(pending, error: error)
        writer.reportBacklog()
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

    /// A page's outcome is in the store (or could not be written): its exposure callbacks run.
    private func recorded(_ pending: PendingSettlement, error: (any Error)?) {
        if let error {
            logger.error("The outcome of sending \(pending.count) hit(s) could not be recorded in the hit cache (\(error)): delivered ones may be sent again")
        }
        for callback in pending.exposed { callback() }
    }

    private func sendPage(_ endpoint: HitEndpoint, settling pending: inout PendingSettlement?) async -> PageOutcome {
        let stop = state.withLock { $0.closed && $0.finalDeadline == nil }
        guard !stop else { return .failed }
        // Activates are claimed in pages as large as hits' and sent 100 per request (the events
        // client splits them): a page of 100 cost a visit to the store per 100 activates, too
        // many visits to keep up with three activates per visitor when claims are needed.
        let limit = settings.pageSize
        let claimedAt = clock.now().unixMilliseconds
        var claimed: [OutgoingHit] = []
        // The page before is recorded in the same visit to the store as this claim; with nothing
        // to claim, beside this page's send (below).
        let previous = pending
        pending = nil
        // Rows nobody holds are older than the hits committed to this sender's memory: they go
        // first. Once a claim comes back short, none is tried until a row is written or released
        // unclaimed, or a claim may have lapsed.
        let claims = store.hits.mayHaveClaimable(endpoint)
        if !claims, let previous, committedHits != nil {
            // Nothing to claim: the page before is recorded beside this page's send, not before
            // it (in order, on the sending queue; the round's end waits for it).
            store.sendingAsync { [self] in
                var settleError: (any Error)?
                do { try store.hits.settle(previous.settlement) } catch { settleError = error }
                recorded(previous, error: settleError)
                writer.reportBacklog()
            }
        } else if claims || previous != nil {
            let (settleError, claim) = await store.runSending { [queue = store.hits] () -> ((any Error)?, Result<[OutgoingHit], any Error>) in
                var settleError: (any Error)?
                if let previous {
                    do { try queue.settle(previous.settlement) } catch { settleError = error }
                }
                return (settleError, claims ? Result { try queue.claim(endpoint, limit: limit, now: claimedAt) } : .success([]))
            }
            if let previous {
                recorded(previous, error: settleError)
                writer.reportBacklog()
            }
            do {
                claimed = try claim.get()
                if state.withLock({ $0.cacheReadFailing.remove(endpoint) != nil }) {
                    logger.info("Cached hits can be read for sending again")
                }
            } catch {
                // Hits waiting in memory still go: a disk that fails must not hold them back too.
                if state.withLock({ $0.cacheReadFailing.insert(endpoint).inserted }) {
                    logger.error("Cached hits could not be read for sending (\(error)): only hits waiting in memory are sent until they can")
                }
            }
        }
        // Committed hits whose claim would lapse during the send go back to the store's claims.
        var handed: [OutgoingHit] = []
        if let committedHits, claimed.count < limit {
            let holdsUntil = clock.now().unixMilliseconds + store.hits.claimMilliseconds / 2
            let taken = committedHits.take(endpoint, limit: limit - claimed.count, holdsUntil: holdsUntil)
            handed = taken.hits
            if taken.lapsed > 0 { store.hits.claimsMayHaveLapsed() }
        }
        let fromMemory = writer.borrow(endpoint, limit: limit - claimed.count - handed.count)
        var batch = claimed + handed + fromMemory
        // A visitor whose erasure waits to be tried again (consent withdrawn while the file was
        // locked): its hits from before the withdrawal are not sent. Their rows stay claimed
        // until the erasure deletes them (or the claim lapses, and they are held again).
        let held = batch.filter { writer.erasurePending(for: $0) }
        if !held.isEmpty {
            let heldIds = Set(held.map(\.id))
            batch.removeAll { heldIds.contains($0.id) }
            writer.giveBack(fromMemory.filter { heldIds.contains($0.id) }, done: [])
            logger.debug("\(held.count) hit(s) of visitors whose erasure waits are not sent")
        }
        guard !batch.isEmpty else { return .empty }

        let sentAt = clock.now().unixMilliseconds
        let sendStarted = ContinuousClock.now
        let events = events
        let results = await traced(settings.tracer, "flagship.batch",
                                   attributes: ["flagship.endpoint": endpoint == .activate ? "activate" : "events",
                                                "flagship.hits": String(batch.count)]) { span in
            let queueTimes = ages?.queueTimes(of: batch) ?? [:]
            let results = endpoint == .activate
                ? await events.sendActivates(batch, now: sentAt, queueTimes: queueTimes)
                : await events.sendHits(batch, now: sentAt, queueTimes: queueTimes)
            span?.setAttribute("flagship.outcome", Self.outcome(of: results).rawValue)
            return results
        }
        let sendTook = ContinuousClock.now - sendStarted
        // A send that outlived `close()` (its deadline passed, the transport was shut down): close
        // released the claims and counted what waits, so the outcome is left alone; a delivery
        // the server confirmed is still sent again by the next start (at least once).
        guard !state.withLock({ $0.abandoned }) else { return .failed }
        let failed = record(results, of: batch)
        if let instrumentation = settings.instrumentation {
            report(results, endpoint: endpoint, hits: batch.count, duration: sendTook, to: instrumentation)
        }

        // Rows of the store, claimed by this instance: the claimed page and the committed hits.
        let cachedIds = Set(claimed.map(\.id)).union(handed.map(\.id))
        var settlement = HitSettlement()
        settlement.nextAttemptAt = state.withLock { $0.retryAt?.unixMilliseconds }
        if failed {
            // Sends fail: the committed hits waiting here wait in the store instead, claimable
            // once the backoff ends; hits are committed unclaimed until sends succeed again.
            settlement.released = committedHits?.close().map(\.id) ?? []
            backpressure?.sendsFailing(true)
        } else {
            committedHits?.reopen()
            backpressure?.sendsFailing(false)
        }
        var done = Set<String>()
        var delivered: [String] = []
        for result in results {
            for id in result.hitIds {
                switch result.outcome {
                case .delivered:
                    delivered.append(id)
                    done.insert(id)
                    if cachedIds.contains(id) { settlement.delivered.append(id) }
                case .rejected:
                    done.insert(id)
                    if cachedIds.contains(id) { settlement.rejected.append(id) }
                case .retryLater:
                    if cachedIds.contains(id) { settlement.failed.append(id) }
                }
            }
        }
        ages?.forget(done)
        let exposed = callbacks.take(delivered)
        callbacks.forget(done.subtracting(delivered))
        // Hits back from a failed send count toward the memory limit again.
        writer.giveBack(fromMemory, done: done)
        pending = PendingSettlement(settlement: settlement, count: batch.count, exposed: exposed)
        // Periodic pool hits that failed are written now: the interval's write skipped them while
        // they were in flight, and they would otherwise wait unwritten for a second interval.
        if failed, !fromMemory.isEmpty, settings.strategy == .PERIODIC_CACHING {
            await writer.writePool()
        }
        if failed { return .failed }
        return batch.count >= limit ? .full : .partial
    }

    /// A page's outcomes, by hit, and the page as a batch (failed if any of its requests must be
    /// retried, rejected if all that did not succeed were refused).
    private func report(_ results: [SendResult], endpoint: HitEndpoint, hits: Int, duration: Duration,
                        to instrumentation: any FlagshipInstrumentation) {
        let kind: FSHitKind = endpoint == .activate ? .activate : .hit
        var delivered = 0
        var rejected = 0
        var retried = 0
        for result in results {
            switch result.outcome {
            case .delivered: delivered += result.hitIds.count
            case .rejected: rejected += result.hitIds.count
            case .retryLater: retried += result.hitIds.count
            }
        }
        if delivered > 0 { instrumentation.hits(.delivered, kind: kind, count: delivered) }
        if rejected > 0 { instrumentation.hits(.rejected, kind: kind, count: rejected) }
        if retried > 0 { instrumentation.hits(.retried, kind: kind, count: retried) }
        instrumentation.batchEnded(endpoint == .activate ? .activate : .events, outcome: Self.outcome(of: results), hits: hits,
                                   duration: duration)
    }

    /// A page's outcome: failed if any of its requests must be retried, rejected if all that did
    /// not succeed were refused and none succeeded, else delivered.
    static func outcome(of results: [SendResult]) -> FSBatchOutcome {
        var delivered = false
        var rejected = false
        for result in results {
            switch result.outcome {
            case .retryLater: return .failed
            case .rejected: rejected = true
            case .delivered: delivered = true
            }
        }
        return rejected && !delivered ? .rejected : .delivered
    }

    /// Logs and counts the outcomes, and moves the backoff: closed after a retryable failure,
    /// reset by a success. Returns whether a send failed.
    private func record(_ results: [SendResult], of batch: [OutgoingHit]) -> Bool {
        let types = Dictionary(batch.map { ($0.id, $0.type) }, uniquingKeysWith: { first, _ in first })
        var delivered = 0
        var failure: (reason: String, count: Int, retryAfter: TimeInterval?)?
        for result in results {
            switch result.outcome {
            case .delivered:
                delivered += result.hitIds.count
            case .rejected(let status):
                let kinds = Set(result.hitIds.compactMap { types[$0] }).sorted().joined(separator: ", ")
                logger.error("\(result.hitIds.count) \(kinds) hit(s) refused with status \(status)\(result.rejectionReason.map { " (\($0))" } ?? ""): dropped")
            case .retryLater(let reason):
                let retryAfter = max(failure?.retryAfter ?? 0, result.retryAfter ?? 0)
                failure = (reason, (failure?.count ?? 0) + result.hitIds.count, retryAfter > 0 ? retryAfter : nil)
            }
        }
        let rejected = results.reduce(0) { $0 + ($1.outcome.isRejection ? $1.hitIds.count : 0) }
        let now = clock.now()
        let uptime = clock.uptime()
        let unit = settings.jitter()
        let retry = state.withLock { state -> (delay: TimeInterval, attempt: Int)? in
            state.counts.delivered += delivered
            state.counts.rejected += rejected
            guard let failure else {
                if delivered > 0 {
                    state.backoff.reset()
                    state.retryAt = nil
                    state.retryAtUptime = nil
                }
                return nil
            }
            state.counts.failedRequests += 1
            let delay = state.backoff.nextDelay(retryAfter: failure.retryAfter, unit: unit)
            state.retryAt = now.addingTimeInterval(delay)
            state.retryAtUptime = uptime + delay
            return (delay, state.backoff.failures)
        }
        if delivered > 0 {
            logger.debug("\(delivered) hit(s) delivered in \(results.count) request(s)")
        }
        guard let failure, let retry else {
            if delivered > 0 {
                outage.succeeded { failures, seconds in
                    "Hits are delivered again, after \(failures) failed attempt(s) over \(seconds) s"
                }
            }
            return false
        }
        let next = "next try in \(retry.delay.millisecondsText) (failure \(retry.attempt) in a row)"
        outage.failed(
            started: { _ in "Hits cannot be delivered (\(failure.reason)): \(failure.count) kept in the cache and retried with backoff, \(next); said again once they are delivered" },
            retrying: { _ in "\(failure.count) hit(s) not sent (\(failure.reason)): kept, \(next)" })
        wake.yield(now.addingTimeInterval(retry.delay))
        return true
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

    /// Waits until no round runs, but not past `deadline`; `true` once idle.
    @discardableResult
    func waitForIdle(until deadline: Date? = nil) async -> Bool {
        let wait: (@escaping @Sendable (Bool) -> Void) -> Void = { [state] finish in
            let idle = state.withLock { state -> Bool in
                guard state.running else { return true }
                state.idleWaiters.append { finish(true) }
                return false
            }
            if idle { finish(true) }
        }
        guard let deadline else {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                wait { _ in continuation.resume() }
            }
            return true
        }
        return await firstOf(deadline: deadline, clock: clock, wait) != nil
    }

    /// `close()`'s last round, which ignores the backoff gate, run by the loop and waited for
    /// until `deadline`. Returns `false` when it did not end by then (or could not start, the
    /// round before it still running): its send is then abandoned.
    func finalRound(until deadline: Date) async -> Bool {
        guard settings.sends else { return true }
        let start = state.withLock { state -> Bool in
            guard !state.running else { return false }
            state.running = true
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
        state.withLock { $0.idleWaiters.count }
    }
}

extension SendResult.Outcome {
    var isRejection: Bool {
        if case .rejected = self { return true }
        return false
    }
}
