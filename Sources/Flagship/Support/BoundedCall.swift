import Dispatch
import Foundation

/// Runs blocking work (a cache delegate's call) on `queue` and waits for it at most `timeout`
/// seconds. Returns `nil` when the time ran out: the work goes on, and its late answer is dropped.
func boundedCall<T: Sendable>(
    on queue: DispatchQueue,
    timeout: TimeInterval,
    _ work: @escaping @Sendable () -> T
) async -> T? {
    await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
        let once = ResumeOnce(continuation)
        queue.async { once.resume(work()) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { once.resume(nil) }
    }
}

/// Runs blocking work on `queue` and waits for it, without holding a cooperative thread.
func queuedCall<T: Sendable>(on queue: DispatchQueue, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        queue.async { continuation.resume(returning: work()) }
    }
}

/// A continuation resumed by whichever of two racers comes first; the second is ignored.
private final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T?, Never>?

    init(_ continuation: CheckedContinuation<T?, Never>) {
        self.continuation = continuation
    }

    func resume(_ value: T?) {
        lock.lock()
        let pending = continuation
        continuation = nil
        lock.unlock()
        pending?.resume(returning: value)
    }
}
