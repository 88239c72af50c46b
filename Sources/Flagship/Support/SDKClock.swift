import Foundation

/// The time the SDK reads and waits on: hit ages, expiry, batch intervals, backoff.
///
/// Tests give the SDK a clock they move by hand, so that a five-minute backoff takes no time and
/// a test never sleeps to see it.
package protocol SDKClock: Sendable {
    func now() -> Date
    /// Suspends until `now()` reaches `deadline`; throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: Date) async throws
}

/// The system's clock, or any `now` function, with real sleeping.
package struct SystemClock: SDKClock {
    private let read: @Sendable () -> Date

    package init(now: @escaping @Sendable () -> Date = Date.init) {
        read = now
    }

    package func now() -> Date { read() }

    package func sleep(until deadline: Date) async throws {
        let seconds = deadline.timeIntervalSince(now())
        guard seconds > 0 else {
            try Task.checkCancellation()
            return
        }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 86_400) * 1_000_000_000))
    }
}
