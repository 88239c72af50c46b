import FlagshipStore

/// The latencies of the visitors' awaited calls since the last sample, in milliseconds: each
/// visitor appends, the sampler takes them all at once.
final class LatencyLog: Sendable {
    struct Interval: Sendable {
        var fetchFlags: [Double] = []
        var sendHit: [Double] = []
    }

    private let current = Locked(Interval())

    func record(fetchFlags: Duration, sendHit: Duration) {
        current.withLock { interval in
            interval.fetchFlags.append(fetchFlags.inMilliseconds)
            interval.sendHit.append(sendHit.inMilliseconds)
        }
    }

    /// What was recorded since the last call; starts a new interval.
    func take() -> Interval {
        current.withLock { interval in
            defer { interval = Interval() }
            return interval
        }
    }
}

/// The median and 99th percentile of an interval's latencies, in milliseconds.
struct LatencyPercentiles: Sendable, Equatable {
    let p50: Double
    let p99: Double

    init(p50: Double, p99: Double) {
        self.p50 = p50
        self.p99 = p99
    }

    /// Nearest rank; `nil` for no values (no visitor finished in the interval).
    init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func rank(_ p: Double) -> Double {
            let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
            return sorted[min(max(rank, 1), sorted.count) - 1]
        }
        p50 = rank(50)
        p99 = rank(99)
    }
}
