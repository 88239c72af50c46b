import Dispatch
import FlagshipStore
import Foundation

/// Runs blocking work (a cache delegate's call) on `queue` and waits for it at most `timeout`
/// seconds. Returns `nil` when the time ran out: the work goes on, and its late answer is dropped.
func boundedCall<T: Sendable>(
    on queue: DispatchQueue,
    timeout: TimeInterval,
    _ work: @escaping @Sendable () -> T
) async -> T? {
    await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        // Whichever racer comes first resumes; the second finds nothing left to resume.
        let pending = Locked<CheckedContinuation<T?, Never>?>(continuation)
        let resume: @Sendable (T?) -> Void = { value in
            pending.withLock { taken in defer { taken = nil }; return taken }?.resume(returning: value)
        }
        let timer = DeadlineTimer.shared.schedule(at: .now() + timeout) { resume(nil) }
        queue.async {
            let value = work()
            DeadlineTimer.shared.cancel(timer)
            resume(value)
        }
    }
}

/// Waits for whatever `start` sets going to call its `finish`, until `deadline` on `clock` at
/// most: `nil` once the deadline passed first. What was set going is not stopped, only no longer
/// waited for; its late `finish` is dropped. The clock's wait ends with the first of the two.
package func firstOf<T: Sendable>(
    deadline: Date,
    clock: any SDKClock,
    _ start: (_ finish: @escaping @Sendable (T) -> Void) -> Void
) async -> T? {
    // Past the deadline already: set going, not waited for (no timer to schedule on a busy pool).
    guard clock.now() < deadline else {
        start { _ in }
        return nil
    }
    let timer = Locked<ScheduledAction?>(nil)
    let value = await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        // Whichever racer comes first resumes; the second finds nothing left to resume.
        let pending = Locked<CheckedContinuation<T?, Never>?>(continuation)
        let resume: @Sendable (T?) -> Void = { value in
            pending.withLock { taken in defer { taken = nil }; return taken }?.resume(returning: value)
        }
        timer.withLock { $0 = clock.schedule(at: deadline) { resume(nil) } }
        start { resume($0) }
    }
    timer.withLock { $0 }?.cancel()
    return value
}

/// Runs blocking work on `queue` (after everything queued before it) and waits for it until
/// `deadline` on `clock`: `nil` when the deadline came first (the work still runs).
func queuedCall<T: Sendable>(on queue: DispatchQueue, until deadline: Date, clock: any SDKClock,
                             _ work: @escaping @Sendable () -> T) async -> T? {
    await firstOf(deadline: deadline, clock: clock) { finish in
        queue.async { finish(work()) }
    }
}
