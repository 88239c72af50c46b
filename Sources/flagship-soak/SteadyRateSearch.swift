import Foundation

/// `--find-steady`: the highest rate the SDK sustains ("steady", `RunSummary`), by bisection
/// between a rate assumed low enough and one assumed too high, each trial a fresh SDK, store
/// and server.
struct SteadyRateSearch {
    struct Trial: Sendable {
        let rate: Double
        let run: SoakRun
        let summary: RunSummary
    }

    let low: Double
    let high: Double
    /// Stops when the bracket is narrower than this share of its top.
    let tolerance: Double
    let trialPlan: LoadPlan
    let fixture: SoakFixture

    func validated() throws(SoakError) -> SteadyRateSearch {
        guard low > 0, high > low else { throw .invalidOption("--find-steady needs 0 < --low < --high") }
        guard tolerance > 0, tolerance < 1 else { throw .invalidOption("the tolerance must be within 0...1, exclusive") }
        return self
    }

    /// Runs the trials; returns them in order and the highest steady one, if any.
    func run(onTrial: (Trial) -> Void) async throws(SoakError) -> (trials: [Trial], steadiest: Trial?) {
        var trials: [Trial] = []
        func trial(_ rate: Double) async throws(SoakError) -> Trial {
            var plan = trialPlan
            plan.rate = rate.rounded()
            let run = try await OpenLoop.run(plan, fixture: fixture) { _ in }
            let trial = Trial(rate: plan.rate, run: run, summary: RunSummary(run))
            trials.append(trial)
            onTrial(trial)
            return trial
        }
        var best = try await trial(low)
        guard best.summary.isSteady else { return (trials, nil) }
        var (steady, unsteady) = (low, high)
        // An interrupt ends the search with the trials run so far.
        while (unsteady - steady) / unsteady > tolerance, !Task.isCancelled {
            let middle = ((steady + unsteady) / 2).rounded()
            let result = try await trial(middle)
            if result.summary.isSteady {
                (steady, best) = (middle, result)
            } else {
                unsteady = middle
            }
        }
        // The top was assumed unsteady; converging on it asks whether it is.
        if unsteady == high, !Task.isCancelled {
            let top = try await trial(high)
            if top.summary.isSteady { best = top }
        }
        return (trials, best)
    }

    /// The trials' table columns: right-aligned to these widths, the verdict last.
    private static let widths = [8, 9, 10, 10, 9, 9, 8, 6]

    static let tableHeader = line(["rate", "achieved", "intake/s", "deliver/s", "backlog%", "MB/min", "evicted", "lost"], verdict: "verdict")

    /// One line of the trials' table: visitors/s offered and achieved, hits/s accepted (last
    /// half) and delivered (mean), the backlog's slope as % of the intake, the store's MB/min.
    static func row(_ trial: Trial) -> String {
        let summary = trial.summary
        let samples = trial.run.samples.dropFirst()
        let deliveredRate = samples.isEmpty ? 0 : samples.map(\.deliveredRate).reduce(0, +) / Double(samples.count)
        let verdict = summary.isSteady ? "steady" : "not steady (" + summary.unsteadyReasons.joined(separator: "; ") + ")"
        return line([
            String(format: "%.0f", trial.rate), String(format: "%.1f", summary.achievedRate), String(format: "%.1f", summary.intakeRate),
            String(format: "%.1f", deliveredRate), summary.backlogSlopeShare.map { String(format: "%+.2f", $0 * 100) } ?? "n/a",
            summary.storeSlope.map { String(format: "%+.3f", $0) } ?? "n/a", String(summary.evicted), String(summary.lost),
        ], verdict: verdict)
    }

    private static func line(_ cells: [String], verdict: String) -> String {
        zip(cells, widths).map { cell, width in String(repeating: " ", count: max(0, width - cell.count)) + cell }
            .joined(separator: " ") + "  " + verdict
    }
}
