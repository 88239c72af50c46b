import Foundation

/// The lines the tool prints while it runs, and the words it titles its chart with.
enum SoakConsole {
    /// Writes a line to stdout at once: a soak lasts minutes, and `print` through a pipe waits
    /// for its buffer to fill.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func fail(_ error: SoakError) {
        FileHandle.standardError.write(Data("flagship-soak: \(error)\n".utf8))
    }

    /// One sample on one line: what moved in the interval.
    static func line(_ sample: Sample) -> String {
        func latency(_ percentiles: LatencyPercentiles?) -> String {
            percentiles.map { String(format: "%.1f/%.1f ms", $0.p50, $0.p99) } ?? "-"
        }
        return String(format: "%6.1fs  offered %7.1f/s  achieved %7.1f/s  delivered %8.1f hits/s  backlog %7d  store %7.2f MB  rss %6.1f MB",
                      sample.elapsed, sample.offeredRate, sample.achievedRate, sample.deliveredRate, sample.backlog,
                      Double(sample.storeBytes) / 1e6, Double(sample.rssBytes ?? 0) / 1e6)
            + "  fetch p50/p99 \(latency(sample.fetchFlags))  sendHit p50/p99 \(latency(sample.sendHit))"
    }

    static func title(_ run: SoakRun) -> String {
        "flagship-soak: \(Int(run.plan.rate)) visitors/s offered for \(SoakCommand.seconds(run.plan.duration)) s"
    }

    /// The chart's subtitle: what the run achieved, then its verdict.
    static func verdict(_ summary: RunSummary) -> [String] {
        let achieved = String(format: "achieved %.1f visitors/s", summary.achievedRate)
        let slope = summary.backlogSlopeShare.map { String(format: ", backlog slope %+.2f%% of the intake", $0 * 100) } ?? ""
        return [
            "\(achieved), delivered \(summary.deliveredAtClose) hits, evicted \(summary.evicted), lost \(summary.lost)\(slope)",
            summary.isSteady ? "verdict: steady" : "verdict: not steady: " + summary.unsteadyReasons.joined(separator: "; "),
        ]
    }
}
