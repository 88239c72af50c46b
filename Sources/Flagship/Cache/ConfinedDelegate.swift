import Dispatch
import FlagshipStore

/// An app's cache delegate, called only on one serial queue.
///
/// The reference's cache protocols ask nothing of thread safety (its own example is a plain
/// `public class`), so the SDK never calls one delegate from two threads at once: every call goes
/// through this queue, in order. That confinement is what lets the SDK's `Sendable` types hold it.
final class ConfinedDelegate<Delegate>: @unchecked Sendable {
    // `@unchecked`: `delegate` is only used on `queue`, a serial queue (see `async`, `run` and `onQueue`).
    private let delegate: Delegate
    let queue: DispatchQueue
    /// The queue as a task executor: for awaited work that starts and ends there (the
    /// synchronous `build()`'s lookup in a shared store), never on a thread of Swift's pool.
    let executor: SerialQueueExecutor

    init(_ delegate: Delegate, label: String) {
        self.delegate = delegate
        queue = DispatchQueue(label: label)
        executor = SerialQueueExecutor(queue)
    }

    /// Runs `body` with the delegate on the queue, after every call queued before it.
    func async(_ body: @escaping @Sendable (Delegate) -> Void) {
        queue.async { body(self.delegate) }
    }

    /// Runs `body` with the delegate on the queue, after every call queued before it, and awaits
    /// it: the caller's thread is not held meanwhile.
    func run<T: Sendable>(_ body: @escaping @Sendable (Delegate) -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body(self.delegate)) }
        }
    }

    /// Runs `body` with the delegate, from a block already running on the queue.
    func onQueue<T>(_ body: (Delegate) throws -> T) rethrows -> T {
        dispatchPrecondition(condition: .onQueue(queue))
        return try body(delegate)
    }

    /// Whether the delegate is of type `T` (no call is made to it).
    func holds<T>(_ type: T.Type) -> Bool {
        delegate is T
    }

    /// The delegate, when it is of type `T`: safe off the queue, `T` being `Sendable`.
    func delegate<T: Sendable>(as type: T.Type) -> T? {
        delegate as? T
    }
}
