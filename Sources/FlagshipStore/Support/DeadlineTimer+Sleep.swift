import Dispatch

extension DeadlineTimer {
    /// Suspends until `deadline` (the monotonic clock); throws `CancellationError` as soon as the
    /// task is cancelled, as `Task.sleep` does.
    ///
    /// Woken by this timer, not by Swift's global executor: `Task.sleep` hands its wake-up to
    /// that executor, whose threads on Linux are the global pool's, so while the app's work held
    /// the pool a 50 ms sleep of a task running on a thread of its own (the SDK's background
    /// tasks, `ThreadExecutor.background`) lasted 5 s, and the batch timer and the sender's
    /// backoff stood still with it. Here the timer resumes the task, which goes on on its own
    /// executor.
    package func sleep(until deadline: DispatchTime) async throws {
        try Task.checkCancellation()
        let sleep = Sleep()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard sleep.begin(continuation) else { return }
                sleep.armed(schedule(at: deadline) { sleep.end(cancelled: false) }, on: self)
            }
        } onCancel: {
            sleep.end(cancelled: true, timer: self)
        }
    }

    /// `sleep(until:)`, for `duration` from now: a negative duration does not wait, and one
    /// longer than a day waits a day, then returns.
    package func sleep(for duration: Duration) async throws {
        try await sleep(until: .now() + min(max(duration.inSeconds, 0), 86_400))
    }
}

/// One sleep: its task resumed once, by the timer or by the task's cancellation, whichever comes
/// first; the timer's action is cancelled when cancellation wins.
private final class Sleep: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var token: DeadlineTimer.Token?
        var over = false
    }

    private let state = Locked(State())

    /// Keeps `continuation` for the timer; `false` when the task was cancelled first (it is
    /// resumed with `CancellationError` at once).
    func begin(_ continuation: CheckedContinuation<Void, any Error>) -> Bool {
        let over = state.withLock { state -> Bool in
            if !state.over { state.continuation = continuation }
            return state.over
        }
        if over { continuation.resume(throwing: CancellationError()) }
        return !over
    }

    /// Notes the timer's action, or cancels it when the sleep already ended.
    func armed(_ token: DeadlineTimer.Token, on timer: DeadlineTimer) {
        let over = state.withLock { state -> Bool in
            if !state.over { state.token = token }
            return state.over
        }
        if over { timer.cancel(token) }
    }

    /// Ends the sleep: the deadline came, or (`cancelled`) the task was cancelled.
    func end(cancelled: Bool, timer: DeadlineTimer? = nil) {
        let (continuation, token) = state.withLock { state in
            defer { state = State(over: true) }
            return state.over ? (nil, nil) : (state.continuation, state.token)
        }
        if let token { timer?.cancel(token) }
        if cancelled {
            continuation?.resume(throwing: CancellationError())
        } else {
            continuation?.resume()
        }
    }
}
