import FlagshipStore

/// The visitors of a run: offered by the schedule, started or turned away at the in-flight
/// cap, finished or failed. Shared by the scheduler, the visitors' tasks and the sampler.
final class LoadCounters: Sendable {
    struct Snapshot: Sendable, Equatable {
        /// Visitors the schedule called for.
        var offered = 0
        var started = 0
        /// Due while the in-flight cap was reached: the load the run could not offer.
        var notStarted = 0
        /// Finished their whole journey.
        var completed = 0
        /// Ended by an error (the first one is kept in `firstFailure`).
        var failed = 0
        var inFlight: Int { started - completed - failed }
        var firstFailure: String?
    }

    private struct State {
        var snapshot = Snapshot()
        /// Finished since the scheduler last collected their tasks' results.
        var uncollected = 0
    }

    private let state = Locked(State())

    var snapshot: Snapshot {
        state.withLock { $0.snapshot }
    }

    /// Counts a due visitor and says whether it may start (fewer than `limit` in flight).
    func admit(limit: Int) -> Bool {
        state.withLock { state in
            state.snapshot.offered += 1
            guard state.snapshot.inFlight < limit else {
                state.snapshot.notStarted += 1
                return false
            }
            state.snapshot.started += 1
            return true
        }
    }

    func finish(failure: (any Error)?) {
        state.withLock { state in
            if let failure {
                state.snapshot.failed += 1
                if state.snapshot.firstFailure == nil { state.snapshot.firstFailure = "\(failure)" }
            } else {
                state.snapshot.completed += 1
            }
            state.uncollected += 1
        }
    }

    /// How many visitors finished since the last call: as many task results the scheduler can
    /// collect from its group without waiting.
    func takeUncollected() -> Int {
        state.withLock { state in
            defer { state.uncollected = 0 }
            return state.uncollected
        }
    }
}
