import FlagshipStore

/// The closed-loop rate: `visitors` journeys run as fast as `concurrency` tasks can take them,
/// each starting when the one before it on its task ends. What the SDK serves flat out, with the
/// sender delivering meanwhile; the open loop then says how much of that it sustains.
struct BurstResult: Sendable {
    let visitors: Int
    let seconds: Double
    let failed: Int
    let firstFailure: String?
    /// Hits and activates the server took during the burst.
    let deliveredDuringBurst: Int

    var rate: Double { Double(visitors - failed) / seconds }

    func report() -> String {
        var line = String(format: "burst     %d visitors in %.1f s: %.1f visitors/s (%d concurrent), %d hits delivered meanwhile",
                          visitors, seconds, rate, BurstRun.concurrency, deliveredDuringBurst)
        if failed > 0 { line += ", \(failed) failed (first: \(firstFailure ?? "?"))" }
        return line
    }
}

enum BurstRun {
    static let concurrency = 64

    static func run(visitors: Int, plan: LoadPlan, fixture: SoakFixture) async throws(SoakError) -> BurstResult {
        guard visitors > 0 else { throw .invalidOption("a burst needs at least one visitor") }
        let session = try await SoakSession.start(fixture: fixture)
        // The open loop's mix of new and returning visitors, drawn before the clock starts.
        var picker = VisitorPicker(newShare: plan.newVisitorShare, poolSize: plan.returningPool, seed: plan.seed)
        let indexes = (0..<visitors).map { _ in picker.next() }
        let counters = LoadCounters()
        let journey = VisitorJourney(flagship: session.flagship, latencies: LatencyLog())
        let next = Locked(0)
        let clock = ContinuousClock()
        let start = clock.now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    while true {
                        let position = next.withLock { value -> Int in
                            defer { value += 1 }
                            return value
                        }
                        guard position < indexes.count, !Task.isCancelled, counters.admit(limit: Int.max) else { return }
                        do {
                            try await journey.run(visitor: indexes[position])
                            counters.finish(failure: nil)
                        } catch {
                            counters.finish(failure: error)
                        }
                    }
                }
            }
        }
        let seconds = (clock.now - start).inSeconds
        let received = session.server.totals
        await SoakSession.closeEvenIfCancelled(session)
        let load = counters.snapshot
        return BurstResult(visitors: visitors, seconds: seconds, failed: load.failed, firstFailure: load.firstFailure,
                           deliveredDuringBurst: received.hits + received.activates)
    }
}
