import Foundation

/// When to try again after a failed send: exponential, capped, with jitter, so that many SDKs
/// cut off together do not come back together.
///
/// The `n`-th failure in a row waits between half and all of `min(cap, base · 2^(n-1))`; a
/// `Retry-After` from the server is a floor. A success resets it.
struct Backoff: Sendable, Equatable {
    var base: TimeInterval = 1
    var cap: TimeInterval = 300
    private(set) var failures = 0

    init(base: TimeInterval = 1, cap: TimeInterval = 300) {
        self.base = base
        self.cap = cap
    }

    /// The ceiling of the next wait, before jitter.
    var ceiling: TimeInterval {
        guard failures > 0 else { return 0 }
        return min(cap, base * pow(2, Double(min(failures - 1, 30))))
    }

    /// Counts one more failure and returns the seconds to wait; `unit` is a random number in
    /// 0..<1 (injected, so tests see exact delays).
    mutating func nextDelay(retryAfter: TimeInterval? = nil, unit: Double) -> TimeInterval {
        failures += 1
        let ceiling = ceiling
        let jittered = ceiling / 2 + ceiling / 2 * min(max(unit, 0), 1)
        guard let retryAfter, retryAfter.isFinite, retryAfter > 0 else { return jittered }
        // The server knows best, within reason: never more than a day.
        return max(jittered, min(retryAfter, 86_400))
    }

    mutating func reset() {
        failures = 0
    }
}
