/// What the SDK tells about its work as it goes: how many hits reached each stage, how fetches
/// and batches went and how long they took, how many hits wait. Give one with
/// `FSConfigBuilder.withInstrumentation`; the `FlagshipMetrics` product reports it all through
/// swift-metrics. The SDK itself depends on no metrics library.
///
/// Called on the SDK's own threads (the store's queue, the sender's task, the caller of a fetch):
/// return at once, never wait for I/O or for a lock held long. Every method has a default that
/// does nothing, so an implementation picks what it needs and later versions can add methods.
public protocol FlagshipInstrumentation: Sendable {
    /// `count` hits (or activates, by `kind`) reached `stage`.
    func hits(_ stage: FSHitStage, kind: FSHitKind, count: Int)
    /// `count` hits or activates left unsent for good, for `reason`. The cache deletes expired
    /// and evicted rows of both kinds in one statement, so these are not told apart by kind.
    func hitsGoneUnsent(_ reason: FSUnsentReason, count: Int)
    /// A `fetchFlags` ended: in Decision API mode after the request, in bucketing mode after the
    /// decision on this machine.
    func fetchEnded(_ outcome: FSFetchOutcome, source: FSDecisionSource, duration: Duration)
    /// A request carrying `hits` hits to the events endpoint, or activates to the activate endpoint, ended.
    func batchEnded(_ endpoint: FSTrackingEndpoint, outcome: FSBatchOutcome, hits: Int, duration: Duration)
    /// A group commit wrote `rows` hits to the hit cache in one transaction.
    func committed(rows: Int, duration: Duration)
    /// Hits waiting to be sent, as counted at each batch interval: in the hit cache, and in
    /// memory (accepted and not yet written, or kept there while the cache refuses writes).
    func waiting(inStore: Int, inMemory: Int)
    /// Hits waiting to be delivered, told after each group commit and each batch settled: the
    /// gauge that shows the SDK falling behind (backpressure starts at half the cache's cap).
    func backlog(hits: Int)
    /// `count` hits nobody awaited (`sendHitInBackground`, a flag read's activate) were refused
    /// under backpressure: delivery fell behind while the events endpoint answered.
    func hitsShed(kind: FSHitKind, count: Int)
    /// A `FlagshipHook` threw at `stage` of a flag evaluation (the read's value is unchanged).
    /// Called on the reading thread.
    func hookFailed(_ stage: FSHookStage)
    /// `count` hits of `kind` were not sent: the store records that the platform has them
    /// already (`FSDeduplication`). Called on the thread that would have sent them.
    func hitsDeduplicated(kind: FSDeduplicatedHit, count: Int)
}

// The defaults that let an implementation pick what it needs.
extension FlagshipInstrumentation {
    /// Ignores the hits reaching a stage.
    public func hits(_ stage: FSHitStage, kind: FSHitKind, count: Int) {}
    /// Ignores the hits left unsent.
    public func hitsGoneUnsent(_ reason: FSUnsentReason, count: Int) {}
    /// Ignores the fetch.
    public func fetchEnded(_ outcome: FSFetchOutcome, source: FSDecisionSource, duration: Duration) {}
    /// Ignores the batch.
    public func batchEnded(_ endpoint: FSTrackingEndpoint, outcome: FSBatchOutcome, hits: Int, duration: Duration) {}
    /// Ignores the commit.
    public func committed(rows: Int, duration: Duration) {}
    /// Ignores the count of waiting hits.
    public func waiting(inStore: Int, inMemory: Int) {}
    /// Ignores the backlog.
    public func backlog(hits: Int) {}
    /// Ignores the shed hits.
    public func hitsShed(kind: FSHitKind, count: Int) {}
    /// Ignores the hook's failure.
    public func hookFailed(_ stage: FSHookStage) {}
    /// Ignores the hits left unsent as the platform has them already.
    public func hitsDeduplicated(kind: FSDeduplicatedHit, count: Int) {}
}

/// A hit the SDK makes itself, left unsent when the platform has it already (`FSDeduplication`).
public enum FSDeduplicatedHit: String, Sendable, CaseIterable {
    /// The consent hit of a build or `setConsent(hasConsented: true)`: the consent is the one recorded.
    case consent
    /// The SEGMENT hit of a bucketing fetch: the context is the one last sent.
    case segment
    /// The activate of a flag read: the visitor's variation was reported within the exposure window.
    case activate
}

/// Where a hit is in its life.
public enum FSHitStage: String, Sendable, CaseIterable {
    /// Taken by `sendHit` or a flag read's exposure.
    case accepted
    /// Written to the hit cache (under periodic caching: when the interval writes the pool).
    case committed
    /// The server took it: it leaves the cache.
    case delivered
    /// Its request failed (network, timeout, 408, 429, 5xx): kept, sent again after a backoff.
    case retried
    /// The server refused it for good (another 4xx): dropped, with an error log.
    case rejected
}

/// Why hits were given up unsent.
public enum FSUnsentReason: String, Sendable, CaseIterable {
    /// Deleted: older than the hit lifetime.
    case expired
    /// Deleted: the oldest, past the hit cache's capacity.
    case evicted
    /// Lost: refused past the ingress cap (nobody awaited it), dropped from memory past its bound
    /// while the cache refused writes, or still unwritten, or only in memory, at close.
    case lost
}

/// A hit to the events endpoint, or an activate (an exposure) to the activate endpoint.
public enum FSHitKind: String, Sendable, CaseIterable {
    /// A hit (event, page, screen, transaction, item, consent...) to the events endpoint.
    case hit
    /// An activate, sent when a flag's exposure is reported.
    case activate
}

/// How a `fetchFlags` ended.
public enum FSFetchOutcome: String, Sendable, CaseIterable {
    /// Flags fetched (or decided).
    case success
    /// No flags: timed out, unreachable, refused, or a malformed answer (the previous flags are kept).
    case failure
    /// The Decision API answered panic mode: flags give their defaults.
    case panic
}

/// What decided a fetch's flags.
public enum FSDecisionSource: String, Sendable, CaseIterable {
    /// The Decision API (`DecisionApi()` mode).
    case decisionAPI = "decision_api"
    /// The bucketing file, on this machine (`Bucketing()` mode).
    case bucketing
}

/// The two endpoints the tracking manager sends to.
public enum FSTrackingEndpoint: String, Sendable, CaseIterable {
    /// Where hits go (`eventsBaseURL`).
    case events
    /// Where activates go: `activate` under the Decision API base (`decisionBaseURL`).
    case activate
}

/// How one request to a tracking endpoint ended.
public enum FSBatchOutcome: String, Sendable, CaseIterable {
    /// 2xx for every hit it carried.
    case delivered
    /// Failed, to be retried (network, timeout, 408, 429, 5xx).
    case failed
    /// Refused for good (another 4xx).
    case rejected
}
