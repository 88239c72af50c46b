import Foundation

/// What the tracking manager did since it started: for `flagship replay`, tests and logs.
package struct TrackingStatistics: Sendable, Equatable {
    /// Hits found in the cache at start (after expiry): what earlier runs left to replay.
    package var cachedAtStart = 0
    /// Hits deleted unsent because they outlived the hit lifetime.
    package var expired = 0
    /// Hits and activates the server accepted.
    package var delivered = 0
    /// Hits and activates refused for good (and dropped).
    package var rejected = 0
    /// Hits evicted, oldest first, to stay within the cache cap.
    package var evicted = 0
    /// Requests that failed and will be retried.
    package var failedRequests = 0
    /// Hits waiting, in the cache (and, before close, in memory), when last counted.
    package var waiting = 0
    /// Hits nobody awaited refused under backpressure (delivery behind while the network answered).
    package var shed = 0
    /// Awaited hits refused under backpressure after waiting for room (`FlagshipError.overloaded`).
    package var refusedOverloaded = 0
    /// Hits lost: the cache could not take them and they were still unsent at close, they waited
    /// in a cache no restart finds, they were dropped past the memory bound, or, nobody awaiting
    /// them, refused past the ingress cap; and, when close's deadline found the store busy, the
    /// accepted hits not yet in it.
    package var lost = 0
    /// Consent withdrawals whose erasure failed and waits to be tried again, now.
    package var erasuresWaiting = 0
    /// Consent withdrawals whose erasure failed when `erasuresWaitingLimit` already waited: not
    /// tried again (each logged as an error).
    package var erasuresAbandoned = 0
}

/// The tracking manager's in-memory structures, by entries: for tests that check memory stays
/// bounded while the network fails.
struct TrackingMemoryFootprint: Sendable, Equatable {
    /// Accepted, waiting for the next group commit.
    var ingress = 0
    /// Held in memory unwritten: the periodic pool, or what the cache could not take.
    var unwritten = 0
    /// `onVisitorExposed` callbacks of activates not yet delivered.
    var activateCallbacks = 0
    /// Callers waiting for the sender to go idle or for `close()` to end.
    var waiters = 0
    /// Consent withdrawals whose deletion has not run yet.
    var purging = 0
}
