import Foundation

@testable import Flagship

/// A clock that moves only when the test says: batch intervals and backoff waits resume when
/// `advance(by:)` passes their deadline, so a five-minute backoff takes no time. `step(by:)` moves
/// the wall clock alone, as setting the system's date does: waits, like the system clock's, last
/// what they were armed for.
final class ManualClock: SDKClock, @unchecked Sendable {
    // `@unchecked`: every stored property is read and written under `lock`.
    private let lock = NSLock()
    private var current: Date
    private var monotonic: TimeInterval = 1_000
    /// Each wait: the wall time it was armed until, and when it ends on the monotonic clock.
    private var sleepers: [UInt64: (deadline: Date, ends: TimeInterval, continuation: CheckedContinuation<Void, any Error>)] = [:]
    private var nextId: UInt64 = 0
    /// A wait ends when the clock is within this of its end: a deadline computed on one clock
    /// (the wall's, a `Date` near 10⁹ s) and measured on the other carries rounding of a tenth of
    /// a microsecond, which must not keep it from ending at the advance that reaches it.
    private static let tolerance: TimeInterval = 0.000_001

    init(_ start: Date = Date(timeIntervalSince1970: 1_763_700_000)) {
        current = start
    }

    func now() -> Date {
        lock.withLock { current }
    }

    func uptime() -> TimeInterval {
        lock.withLock { monotonic }
    }

    /// How many waits are pending (a test waits for the SDK to arm its timers before advancing).
    var pendingSleepers: Int {
        lock.withLock { sleepers.count }
    }

    /// Whether a wait is pending until `deadline` exactly (a test waits for one deadline among others).
    func hasSleeper(until deadline: Date) -> Bool {
        lock.withLock { sleepers.values.contains { $0.deadline == deadline } }
    }

    func sleep(until deadline: Date) async throws {
        let id = lock.withLock { () -> UInt64 in
            nextId += 1
            return nextId
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let due = lock.withLock { () -> Bool in
                    if deadline.timeIntervalSince(current) <= Self.tolerance || Task.isCancelled { return true }
                    sleepers[id] = (deadline, monotonic + deadline.timeIntervalSince(current), continuation)
                    return false
                }
                if due {
                    if Task.isCancelled { continuation.resume(throwing: CancellationError()) } else { continuation.resume() }
                }
            }
        } onCancel: {
            lock.withLock { sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    func advance(by interval: TimeInterval) {
        let due = lock.withLock { () -> [CheckedContinuation<Void, any Error>] in
            current += interval
            monotonic += interval
            let due = sleepers.filter { $0.value.ends <= monotonic + Self.tolerance }
            for id in due.keys { sleepers[id] = nil }
            return due.values.sorted { $0.ends < $1.ends }.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Sets the wall clock `interval` ahead (or back, when negative) with no time passing.
    func step(by interval: TimeInterval) {
        lock.withLock { current += interval }
    }
}
