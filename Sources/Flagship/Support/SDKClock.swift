import FlagshipStore
import Foundation

/// The time the SDK reads and waits on: hit ages, expiry, batch intervals, backoff.
///
/// Tests give the SDK a clock they move by hand, so that a five-minute backoff takes no time and
/// a test never sleeps to see it.
///
/// Two times: the wall clock (`now()`, what is stored and shown) and a monotonic one (`uptime()`,
/// which a step of the system clock does not move: NTP correcting a wrong clock, a hand-set date).
/// What waits (the backoff gate) and what ages hits into expiry go by the monotonic one, so that a
/// step in either direction neither stalls nor deletes hits (`StepSafeTime`).
package protocol SDKClock: Sendable {
    func now() -> Date
    /// Seconds on a monotonic clock from an arbitrary origin: only differences mean anything.
    func uptime() -> TimeInterval
    /// Suspends for as long as `deadline` is from `now()` when called (a step of the wall clock
    /// meanwhile neither shortens nor lengthens it); throws `CancellationError` when the task is
    /// cancelled.
    func sleep(until deadline: Date) async throws
    /// Calls `action` once `deadline` comes (as `sleep(until:)` measures it), unless the returned
    /// cancellation ran first: a bounded wait's timer. The default sleeps in a task of its own;
    /// `SystemClock`'s needs no task, so that a wait the SDK bounds ends on time even while every
    /// thread of the cooperative pool is held.
    func schedule(at deadline: Date, _ action: @escaping @Sendable () -> Void) -> ScheduledAction
}

/// Cancels an action a clock scheduled; calling it after the action ran does nothing.
package struct ScheduledAction: Sendable {
    package let cancel: @Sendable () -> Void

    package init(cancel: @escaping @Sendable () -> Void) {
        self.cancel = cancel
    }
}

extension SDKClock {
    package func schedule(at deadline: Date, _ action: @escaping @Sendable () -> Void) -> ScheduledAction {
        let task = Task {
            guard (try? await sleep(until: deadline)) != nil else { return }
            action()
        }
        return ScheduledAction { task.cancel() }
    }
}

/// The wall clock's time for ageing stored rows, held back to what the monotonic clock says has
/// passed since `anchor`: after a step forward of the system clock (say 5 h), hits and visitors
/// are aged by the time that really passed, so none expires early. After a step back, the wall
/// clock is behind and is used as it is: rows are kept longer, never deleted early. A step made
/// while the process was not running cannot be told from time that passed; it is not corrected.
package struct StepSafeTime: Sendable {
    private let wall: Date
    private let uptime: TimeInterval

    /// How far apart the two may drift before a step is said: more than scheduling and the
    /// clocks' own slewing move them.
    package static let tolerance: TimeInterval = 2

    package init(clock: any SDKClock) {
        wall = clock.now()
        uptime = clock.uptime()
    }

    /// The earlier of the wall clock and the anchor's wall time plus the monotonic time since.
    package func now(_ clock: any SDKClock) -> Date {
        min(clock.now(), measured(clock))
    }

    /// How far the wall clock is ahead of the time measured since the anchor (negative: behind):
    /// about zero unless the system clock was stepped.
    package func step(_ clock: any SDKClock) -> TimeInterval {
        clock.now().timeIntervalSince(measured(clock))
    }

    /// The time on the timeline the anchor was taken on: its wall time plus the monotonic time
    /// since, whatever the wall clock did meanwhile.
    package func measuredNow(_ clock: any SDKClock) -> Date {
        measured(clock)
    }

    private func measured(_ clock: any SDKClock) -> Date {
        wall.addingTimeInterval(clock.uptime() - uptime)
    }
}

/// The system's clock, or any `now` function, with real sleeping.
package struct SystemClock: SDKClock {
    private let read: @Sendable () -> Date

    package init(now: @escaping @Sendable () -> Date = Date.init) {
        read = now
    }

    package func now() -> Date { read() }

    package func uptime() -> TimeInterval {
        (ContinuousClock.now - Self.origin).inSeconds
    }

    /// The monotonic clock's origin for `uptime()`: the first read in this process.
    private static let origin = ContinuousClock.now

    package func sleep(until deadline: Date) async throws {
        let seconds = deadline.timeIntervalSince(now())
        guard seconds > 0 else {
            try Task.checkCancellation()
            return
        }
        // On the SDK's timer, not `Task.sleep`: a background task wakes on its own thread even
        // while the app's work holds the global pool (`DeadlineTimer.sleep`).
        try await DeadlineTimer.shared.sleep(until: .now() + min(seconds, 86_400))
    }

    /// On the SDK's one dispatch timer (`DeadlineTimer`), by the monotonic clock, as `sleep`.
    package func schedule(at deadline: Date, _ action: @escaping @Sendable () -> Void) -> ScheduledAction {
        let seconds = max(0, min(deadline.timeIntervalSince(now()), 86_400))
        let token = DeadlineTimer.shared.schedule(at: .now() + seconds, action)
        return ScheduledAction { DeadlineTimer.shared.cancel(token) }
    }
}
