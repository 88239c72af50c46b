import FlagshipStore
import Foundation

/// Where a visitor's hits and activates go: one per SDK instance, not one per visitor.
///
/// The seam between visitors and the tracking manager: visitors only ever call these.
protocol HitTracking: Sendable {
    /// Accepts a hit or an activate and returns at once. `durable` is told once the hit is in the
    /// cache (continuous caching, or `committed`) or in the pool (periodic caching), or why it
    /// was not; `onDelivered` (activates) runs once the server accepted it.
    func track(_ hit: OutgoingHit, onDelivered: (@Sendable () -> Void)?,
               durable: (@Sendable (Result<Void, FlagshipError>) -> Void)?, committed: Bool)
    /// Consent withdrawn: the visitor's waiting hits are deleted, consent hits excepted, after
    /// every hit accepted before this call.
    func purge(visitorId: String)
    /// Stops the timers, sends what it can within a deadline, leaves the rest in the cache.
    /// Returns only then; safe to call twice.
    func close() async
}

extension HitTracking {
    func track(_ hit: OutgoingHit) {
        track(hit, onDelivered: nil, durable: nil, committed: false)
    }

    func track(_ hit: OutgoingHit, onDelivered: (@Sendable () -> Void)?) {
        track(hit, onDelivered: onDelivered, durable: nil, committed: false)
    }

    /// Accepts a hit and returns once it is committed to the cache (continuous caching, or
    /// `committed`: the next group commit, whatever the strategy) or in the pool (periodic caching).
    func trackAwaitingCommit(_ hit: OutgoingHit, committed: Bool = false) async throws(FlagshipError) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, FlagshipError>, Never>) in
            track(hit, onDelivered: nil, durable: { continuation.resume(returning: $0) }, committed: committed)
        }
        try result.get()
    }
}
