import Foundation

/// How hits are cached while they wait to be sent.
public enum BatchCachingStrategy: String, Sendable {
    /// Each hit is written to the hit cache when it is accepted (hits arriving together share one
    /// transaction), and deleted once the batch carrying it was delivered. Nothing accepted is
    /// lost when the process dies.
    case CONTINUOUS_CACHING
    /// Hits wait in memory; at each batch interval the cache is made to mirror the pool (what was
    /// sent removed, what is pending written), so at most one interval of hits is at risk.
    case PERIODIC_CACHING
}

/// What `try await visitor.sendHit(_:until:)` waits for before it returns.
public enum FSHitAcknowledgement: Sendable, Equatable {
    /// What the caching strategy gives: committed to the hit cache under `CONTINUOUS_CACHING`,
    /// in the in-memory pool under `PERIODIC_CACHING` (written at the next interval or at close).
    case strategyDefault
    /// Committed to the hit cache under either strategy: the hit survives a crash of the
    /// process. Under `PERIODIC_CACHING` such a hit skips the pool and joins the next group commit.
    case committed
}

/// How the tracking manager batches, caches and keeps hits.
///
/// ```swift
/// let tracking = FSTrackingManagerConfig(poolMaxSize: 20, batchIntervalTimer: 10, strategy: .PERIODIC_CACHING)
/// ```
public struct FSTrackingManagerConfig: Sendable, Equatable {
    /// A batch is sent as soon as this many hits wait. Default 10.
    public let poolMaxSize: Int
    /// Seconds between two batches. Default 5.
    public let batchIntervalTimer: TimeInterval
    /// How hits are cached while they wait. Default `CONTINUOUS_CACHING`.
    public let strategy: BatchCachingStrategy
    /// Seconds a hit may wait unsent before it is deleted unsent (logged). Default 4 hours.
    public let hitLifetime: TimeInterval
    /// The most hits the hit cache keeps; past it the oldest are evicted (logged). Default 100,000.
    public let maxCachedHits: Int
    /// A request body to the events endpoint stays under this many bytes; larger batches are
    /// split. Default (and maximum) 2,500,000, the endpoint's limit.
    public let maxBatchBytes: Int

    /// A configuration with the given values; an out-of-range one is brought back in range, never
    /// refused: `poolMaxSize` and `maxCachedHits` at least 1, `maxBatchBytes` between 1,024 and
    /// 2,500,000, and a `batchIntervalTimer` or `hitLifetime` that is not a positive finite number
    /// of seconds takes its default.
    public init(
        poolMaxSize: Int = 10,
        batchIntervalTimer: TimeInterval = 5,
        strategy: BatchCachingStrategy = .CONTINUOUS_CACHING,
        hitLifetime: TimeInterval = 4 * 3600,
        maxCachedHits: Int = 100_000,
        maxBatchBytes: Int = 2_500_000
    ) {
        self.poolMaxSize = max(1, poolMaxSize)
        self.batchIntervalTimer = batchIntervalTimer.isFinite && batchIntervalTimer > 0 ? batchIntervalTimer : 5
        self.strategy = strategy
        self.hitLifetime = hitLifetime.isFinite && hitLifetime > 0 ? hitLifetime : 4 * 3600
        self.maxCachedHits = max(1, maxCachedHits)
        self.maxBatchBytes = min(max(1_024, maxBatchBytes), 2_500_000)
    }
}
