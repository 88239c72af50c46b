import Flagship
import FlagshipLocalServer

/// Takes a `Sample` of a session every interval, from the SDK's counts, the server's totals,
/// the store's file and the process, until the run's end.
struct Sampler: Sendable {
    let session: SoakSession
    let counters: LoadCounters
    let latencies: LatencyLog
    /// `LoadPlan.trimMalloc`.
    var trimMalloc = false

    /// Samples at the start, then every `interval` and at `end` (a shorter last interval when
    /// the duration is not a multiple of it). `onSample` sees each as it is taken.
    func run(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant, every interval: Duration,
             onSample: @Sendable (Sample) -> Void) async -> [Sample] {
        let clock = ContinuousClock()
        var samples: [Sample] = []
        var previous: Sample?
        var tick = 0
        while true {
            let due = min(start + interval * tick, end)
            try? await clock.sleep(until: due)
            let sample = await take(at: clock.now - start, after: previous)
            if trimMalloc { HeapUsage.trim() }
            samples.append(sample)
            onSample(sample)
            previous = sample
            if due >= end || Task.isCancelled { return samples }
            tick += 1
        }
    }

    private func take(at elapsed: Duration, after previous: Sample?) async -> Sample {
        let load = counters.snapshot
        let interval = latencies.take()
        let statistics = await session.flagship.trackingStatistics()
        let received = session.server.totals
        let (storeBytes, visitorRows, memory) = await session.inspect()
        let seconds = elapsed.inSeconds
        var sample = Sample(
            elapsed: seconds, offered: load.offered, completed: load.completed, offeredRate: 0, achievedRate: 0, notStarted: load.notStarted, failedVisitors: load.failed,
            inFlight: load.inFlight, accepted: statistics.map(Self.accepted) ?? 0, acceptedRate: 0,
            deliveredBySDK: statistics?.delivered ?? 0, delivered: received.hits + received.activates, deliveredRate: 0,
            backlog: statistics?.waiting ?? 0, evicted: statistics?.evicted ?? 0, shed: statistics?.shed ?? 0,
            refusedOverloaded: statistics?.refusedOverloaded ?? 0,
            lost: statistics?.lost ?? 0, rejected: statistics?.rejected ?? 0, failedRequests: statistics?.failedRequests ?? 0,
            storeBytes: storeBytes, visitorRows: visitorRows, rssBytes: memory?.residentBytes,
            rssAnonymousBytes: memory?.anonymousBytes, heap: HeapUsage.current(), io: ProcessIO.current(),
            fetchFlags: LatencyPercentiles(interval.fetchFlags), sendHit: LatencyPercentiles(interval.sendHit)
        )
        // The first sample, at the start, has no interval: its rates stay 0.
        if let previous, seconds > previous.elapsed {
            let span = seconds - previous.elapsed
            sample.offeredRate = Double(sample.offered - previous.offered) / span
            sample.achievedRate = Double(sample.completed - previous.completed) / span
            sample.acceptedRate = Double(sample.accepted - previous.accepted) / span
            sample.deliveredRate = Double(sample.delivered - previous.delivered) / span
        }
        return sample
    }

    /// Every hit the SDK took this run, by where it is now: the hits found at start are not this
    /// run's intake (a fresh store has none).
    static func accepted(_ statistics: TrackingStatistics) -> Int {
        statistics.delivered + statistics.waiting + statistics.evicted + statistics.expired + statistics.rejected
            + statistics.lost - statistics.cachedAtStart
    }
}
