import Dispatch
import FlagshipStore
import Foundation

/// Runs blocking work (a cache delegate's call) on `queue` and waits for it at most `timeout`
/// seconds. Returns `nil` when the time ran out: the work goes on, and its late answer is dropped.
func boundedCall<T: Sendable>(
    on queue: DispatchQueue,
    timeout: TimeInterval,
    _ work: @escaping @Sendable () -> T
) async -> T? {
    await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        // Whichever racer comes first resumes; the second finds nothing left to resume.
        let pending = Locked<CheckedContinuation<T?, Never>?>(continuation)
        let resume: @Sendable (T?) -> Void = { value in
            pending.withLock { taken in defer { taken = nil }; return taken }?.resume(returning: value)
        }
        queue.async { resume(work()) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { resume(nil) }
    }
}

/// Runs blocking work on `queue` and waits for it, without holding a cooperative thread.
func queuedCall<T: Sendable>(on queue: DispatchQueue, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        queue.async { continuation.resume(returning: work()) }
    }
}
