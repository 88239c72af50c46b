#if Metrics
import Flagship
import Metrics

/// The SDK's instrumentation reported through swift-metrics: give it to the configuration and
/// bootstrap a backend (swift-prometheus, swift-otel…) as for the rest of the app. Without a
/// bootstrapped backend every metric is a no-op.
///
/// ```swift
/// let config = FSConfigBuilder().Bucketing().withInstrumentation(FlagshipMetrics()).build()
/// ```
///
/// | metric | type | dimensions |
/// |---|---|---|
/// | `flagship_hits_total` | counter | `outcome`: accepted, committed, delivered, retried, rejected; `kind`: hit, activate |
/// | `flagship_hits_unsent_total` | counter | `reason`: expired, evicted, lost |
/// | `flagship_fetches_total` | counter | `outcome`: success, failure, panic; `source`: decision_api, bucketing |
/// | `flagship_fetch_duration_seconds` | timer | as `flagship_fetches_total` |
/// | `flagship_batches_total` | counter | `endpoint`: events, activate; `outcome`: delivered, failed, rejected |
/// | `flagship_batch_duration_seconds` | timer | as `flagship_batches_total` |
/// | `flagship_commit_duration_seconds` | timer | none |
/// | `flagship_committed_rows` | recorder | none: hits per group commit |
/// | `flagship_hits_waiting` | gauge | `where`: store, memory |
/// | `flagship_hits_backlog` | gauge | none: hits waiting for delivery, after each commit and batch |
/// | `flagship_hits_shed_total` | counter | `kind`: hit, activate: refused under backpressure |
/// | `flagship_hook_failures_total` | counter | `stage`: before, after, error: a `FlagshipHook` threw |
/// | `flagship_hits_deduplicated_total` | counter | `kind`: consent, segment, activate: not sent, the platform has them (`FSDeduplication`) |
///
/// Every metric is made once, at `init`: reporting is a lookup and an increment.
public struct FlagshipMetrics: FlagshipInstrumentation {
    private let hitCounters: [FSHitStage: [FSHitKind: Counter]]
    private let unsent: [FSUnsentReason: Counter]
    private let fetches: [FSFetchOutcome: [FSDecisionSource: (count: Counter, duration: Metrics.Timer)]]
    private let batches: [FSTrackingEndpoint: [FSBatchOutcome: (count: Counter, duration: Metrics.Timer)]]
    private let commitDuration: Metrics.Timer
    private let committedRows: Recorder
    private let waitingInStore: Gauge
    private let waitingInMemory: Gauge
    private let backlogGauge: Gauge
    private let shed: [FSHitKind: Counter]
    private let hookFailures: [FSHookStage: Counter]
    private let deduplicated: [FSDeduplicatedHit: Counter]

    /// - Parameter factory: where the metrics go; by default the one `MetricsSystem.bootstrap` set.
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        hitCounters = Dictionary(uniqueKeysWithValues: FSHitStage.allCases.map { stage in
            (stage, Dictionary(uniqueKeysWithValues: FSHitKind.allCases.map { kind in
                (kind, Counter(label: "flagship_hits_total", dimensions: [("outcome", stage.rawValue), ("kind", kind.rawValue)],
                               factory: factory))
            }))
        })
        unsent = Dictionary(uniqueKeysWithValues: FSUnsentReason.allCases.map { reason in
            (reason, Counter(label: "flagship_hits_unsent_total", dimensions: [("reason", reason.rawValue)], factory: factory))
        })
        fetches = Dictionary(uniqueKeysWithValues: FSFetchOutcome.allCases.map { outcome in
            (outcome, Dictionary(uniqueKeysWithValues: FSDecisionSource.allCases.map { source in
                let dimensions = [("outcome", outcome.rawValue), ("source", source.rawValue)]
                return (source, (Counter(label: "flagship_fetches_total", dimensions: dimensions, factory: factory),
                                 Metrics.Timer(label: "flagship_fetch_duration_seconds", dimensions: dimensions,
                                               preferredDisplayUnit: .seconds, factory: factory)))
            }))
        })
        batches = Dictionary(uniqueKeysWithValues: FSTrackingEndpoint.allCases.map { endpoint in
            (endpoint, Dictionary(uniqueKeysWithValues: FSBatchOutcome.allCases.map { outcome in
                let dimensions = [("endpoint", endpoint.rawValue), ("outcome", outcome.rawValue)]
                return (outcome, (Counter(label: "flagship_batches_total", dimensions: dimensions, factory: factory),
                                  Metrics.Timer(label: "flagship_batch_duration_seconds", dimensions: dimensions,
                                                preferredDisplayUnit: .seconds, factory: factory)))
            }))
        })
        commitDuration = Metrics.Timer(label: "flagship_commit_duration_seconds", preferredDisplayUnit: .seconds, factory: factory)
        committedRows = Recorder(label: "flagship_committed_rows", factory: factory)
        waitingInStore = Gauge(label: "flagship_hits_waiting", dimensions: [("where", "store")], factory: factory)
        waitingInMemory = Gauge(label: "flagship_hits_waiting", dimensions: [("where", "memory")], factory: factory)
        backlogGauge = Gauge(label: "flagship_hits_backlog", factory: factory)
        shed = Dictionary(uniqueKeysWithValues: FSHitKind.allCases.map { kind in
            (kind, Counter(label: "flagship_hits_shed_total", dimensions: [("kind", kind.rawValue)], factory: factory))
        })
        hookFailures = Dictionary(uniqueKeysWithValues: FSHookStage.allCases.map { stage in
            (stage, Counter(label: "flagship_hook_failures_total", dimensions: [("stage", stage.rawValue)], factory: factory))
        })
        deduplicated = Dictionary(uniqueKeysWithValues: FSDeduplicatedHit.allCases.map { kind in
            (kind, Counter(label: "flagship_hits_deduplicated_total", dimensions: [("kind", kind.rawValue)], factory: factory))
        })
    }

    /// Adds `count` to `flagship_hits_total` for the stage (`outcome`) and the kind.
    public func hits(_ stage: FSHitStage, kind: FSHitKind, count: Int) {
        hitCounters[stage]?[kind]?.increment(by: count)
    }

    /// Adds `count` to `flagship_hits_unsent_total` for the reason.
    public func hitsGoneUnsent(_ reason: FSUnsentReason, count: Int) {
        unsent[reason]?.increment(by: count)
    }

    /// Counts the fetch in `flagship_fetches_total` and records its duration in
    /// `flagship_fetch_duration_seconds`, both by outcome and source.
    public func fetchEnded(_ outcome: FSFetchOutcome, source: FSDecisionSource, duration: Duration) {
        guard let metrics = fetches[outcome]?[source] else { return }
        metrics.count.increment()
        metrics.duration.record(duration: duration)
    }

    /// Counts the request in `flagship_batches_total` and records its duration in
    /// `flagship_batch_duration_seconds`, both by endpoint and outcome (the hits it carried are
    /// counted by `hits(_:kind:count:)`).
    public func batchEnded(_ endpoint: FSTrackingEndpoint, outcome: FSBatchOutcome, hits: Int, duration: Duration) {
        guard let metrics = batches[endpoint]?[outcome] else { return }
        metrics.count.increment()
        metrics.duration.record(duration: duration)
    }

    /// Records the commit's duration in `flagship_commit_duration_seconds` and its rows in
    /// `flagship_committed_rows`.
    public func committed(rows: Int, duration: Duration) {
        commitDuration.record(duration: duration)
        committedRows.record(rows)
    }

    /// Sets the `flagship_hits_waiting` gauges, `where` `store` and `memory`.
    public func waiting(inStore: Int, inMemory: Int) {
        waitingInStore.record(inStore)
        waitingInMemory.record(inMemory)
    }

    /// Sets the `flagship_hits_backlog` gauge.
    public func backlog(hits: Int) {
        backlogGauge.record(hits)
    }

    /// Adds `count` to `flagship_hits_shed_total` for the kind.
    public func hitsShed(kind: FSHitKind, count: Int) {
        shed[kind]?.increment(by: count)
    }

    /// Adds one to `flagship_hook_failures_total` for the stage.
    public func hookFailed(_ stage: FSHookStage) {
        hookFailures[stage]?.increment()
    }

    /// Adds `count` to `flagship_hits_deduplicated_total` for the kind.
    public func hitsDeduplicated(kind: FSDeduplicatedHit, count: Int) {
        deduplicated[kind]?.increment(by: count)
    }
}
#endif
