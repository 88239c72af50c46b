import Dispatch
import FlagshipStore
import Foundation

/// A value that comes once, and any number of waiters for it: tasks that suspend (each may stop
/// waiting, cancelled or at a deadline of its own, without disturbing the others) and, for the
/// reference's synchronous calls, threads that block until a deadline. The first `fulfil` wins;
/// later ones are ignored. A waiter that stops waiting is forgotten at once, so a value that never
/// comes holds no more waiters than are waiting now.
///
/// The one waiter list of the SDK's one-off events: a start's outcome (`FlagshipService`), the
/// end of the bucketing poller's first attempt, the end of an overload (`Backpressure`), the
/// sender's idle moment, the synchronous calls' answers (`build()`'s lookup, `close()`), and
/// FlagshipTesting's next request. A value that comes again is a new `OneShot` each time.
package final class OneShot<Value: Sendable>: @unchecked Sendable {
    // `@unchecked`: `value`, `waiters` and `nextWaiter` are read and written under `condition` only.
    private let condition = NSCondition()
    private var value: Value?
    private var waiters: [Int: CheckedContinuation<Value?, Never>] = [:]
    private var nextWaiter = 0

    package init() {}

    /// Sets the value and resumes every waiter with it; `false` (and nothing done) when it was
    /// set already.
    @discardableResult
    package func fulfil(_ value: Value) -> Bool {
        condition.lock()
        guard self.value == nil else {
            condition.unlock()
            return false
        }
        self.value = value
        let waiting = waiters
        waiters = [:]
        condition.broadcast()
        condition.unlock()
        for waiter in waiting.values { waiter.resume(returning: value) }
        return true
    }

    /// The value if it came, without waiting.
    package var current: Value? {
        condition.withLock { value }
    }

    /// The number of tasks suspended for the value now.
    package var waiting: Int {
        condition.withLock { waiters.count }
    }

    /// Suspends until the value comes: `nil` when the task is cancelled first.
    package func value() async -> Value? {
        await value(until: nil)
    }

    /// Suspends until the value comes, or until `deadline` (the monotonic clock) at most: `nil`
    /// when the deadline or the task's cancellation comes first.
    package func value(until deadline: DispatchTime?) async -> Value? {
        guard let deadline else { return await value(arming: nil) }
        return await value { stop in
            let token = DeadlineTimer.shared.schedule(at: deadline, stop)
            return ScheduledAction { DeadlineTimer.shared.cancel(token) }
        }
    }

    /// Suspends until the value comes, or until `deadline` on `clock` at most (a test's clock
    /// moved by hand, or the system's): `nil` when the deadline or the task's cancellation comes
    /// first. Past the deadline already: the value if it came, without waiting. `cancellable`
    /// `false`: the task's cancellation does not end the wait (a wait whose caller has no
    /// error to say it with).
    package func value(until deadline: Date, clock: any SDKClock, cancellable: Bool = true) async -> Value? {
        guard clock.now() < deadline else { return current }
        return await value(cancellable: cancellable) { stop in clock.schedule(at: deadline, stop) }
    }

    /// The wait; `arming` (when there is a deadline) schedules the action that stops it, and
    /// returns how to cancel that action once the wait is over.
    private func value(cancellable: Bool = true,
                       arming: ((@escaping @Sendable () -> Void) -> ScheduledAction)?) async -> Value? {
        let id = condition.withLock { () -> Int in
            defer { nextWaiter += 1 }
            return nextWaiter
        }
        let timer = Locked<ScheduledAction?>(nil)
        let value = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                wait(continuation, id: id, cancellable: cancellable, arming: arming, timer: timer)
            }
        } onCancel: {
            if cancellable { stopWaiting(id) }
        }
        timer.withLock { $0 }?.cancel()
        return value
    }

    /// Answers `continuation` now (the value already set, or the task already cancelled), or
    /// keeps it for `fulfil`, with its deadline armed.
    private func wait(_ continuation: CheckedContinuation<Value?, Never>, id: Int, cancellable: Bool,
                      arming: ((@escaping @Sendable () -> Void) -> ScheduledAction)?, timer: Locked<ScheduledAction?>) {
        let answer = condition.withLock { () -> Value?? in
            if let value { return .some(value) }
            if cancellable, Task.isCancelled { return .some(nil) }
            waiters[id] = continuation
            return nil
        }
        if let answer {
            continuation.resume(returning: answer)
        } else if let arming {
            let scheduled = arming { [self] in stopWaiting(id) }
            timer.withLock { $0 = scheduled }
        }
    }

    /// Blocks the calling thread until the value comes, or until `deadline` at most: `nil` then.
    /// For the reference's synchronous calls only (`FSVisitorBuilder.build()`'s lookup, the
    /// synchronous `close()`), whose callers chose to wait.
    package func value(blockingUntil deadline: DispatchTime) -> Value? {
        condition.lock()
        defer { condition.unlock() }
        while value == nil {
            let now = DispatchTime.now()
            guard now < deadline else { return nil }
            let seconds = Double(deadline.uptimeNanoseconds - now.uptimeNanoseconds) / 1e9
            _ = condition.wait(until: Date(timeIntervalSinceNow: min(seconds, 86_400)))
        }
        return value
    }

    private func stopWaiting(_ id: Int) {
        condition.withLock { waiters.removeValue(forKey: id) }?.resume(returning: nil)
    }
}
