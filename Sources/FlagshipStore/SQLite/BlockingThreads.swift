import Dispatch

/// The threads where the SDK's blocking work runs: one concurrent dispatch queue, and serial lanes
/// on it for the work that must run in order. These are the only dispatch queues the SDK creates.
///
/// Blocking work is SQLite's (a statement may wait for another process's lock, a commit for the
/// disk) and the app's own code that the SDK calls and that may block: its callbacks and a custom
/// cache's delegate. None of it runs on a thread of Swift's cooperative pool, where it would hold a
/// thread the app's tasks need.
///
/// - The pool (`io.flagship.blocking`) runs what has a connection or a read transaction of its
///   own: a visitor lookup on the read connection, a WAL checkpoint (`BackgroundCheckpointer`),
///   the full check of a big store after a crash (`DeferredCheck`), a prune's read ahead. The
///   owners that need their work in order (one checkpoint at a time) keep that order themselves,
///   and wait for it with a `DispatchGroup` when they close.
/// - A lane (`lane(_:)`) is a serial queue whose blocks run on the pool's threads, one at a time
///   and in order: each store's connection (`Database.queue`, `io.flagship.store.database`), the
///   app's callbacks (`io.flagship.callbacks`), and each cache delegate (`ConfinedDelegate`).
///   A lane adds an order, not a thread: what waits on one holds no thread, and the pool grows
///   and shrinks its threads with the work as any dispatch queue does.
package enum BlockingThreads {
    package static let pool = DispatchQueue(label: "io.flagship.blocking", attributes: .concurrent)

    /// A serial lane on the pool's threads, labelled `label` for debuggers and crash reports.
    package static func lane(_ label: String) -> DispatchQueue {
        DispatchQueue(label: label, target: pool)
    }
}

/// Runs blocking work on `queue` and waits for it, without holding a cooperative thread.
package func queuedCall<T: Sendable>(on queue: DispatchQueue, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        queue.async { continuation.resume(returning: work()) }
    }
}
