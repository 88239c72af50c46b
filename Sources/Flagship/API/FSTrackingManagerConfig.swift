import Foundation

/// How hits are cached while they wait to be sent.
public enum BatchCachingStrategy: String, Sendable {
    /// Each hit is written to the hit cache when it is created, and deleted once sent.
    case CONTINUOUS_CACHING
    /// Hits wait in memory; at each batch interval the cache is made to mirror the pool.
    case PERIODIC_CACHING
}

/// How the tracking manager batches hits.
public struct FSTrackingManagerConfig: Sendable, Equatable {
    /// The most hits waiting in the pool before a batch is sent. Default 10.
    public let poolMaxSize: Int
    /// Seconds between two batches. Default 5.
    public let batchIntervalTimer: TimeInterval
    public let strategy: BatchCachingStrategy

    public init(poolMaxSize: Int = 10, batchIntervalTimer: TimeInterval = 5, strategy: BatchCachingStrategy = .CONTINUOUS_CACHING) {
        self.poolMaxSize = max(1, poolMaxSize)
        self.batchIntervalTimer = batchIntervalTimer.isFinite && batchIntervalTimer > 0 ? batchIntervalTimer : 5
        self.strategy = strategy
    }
}
