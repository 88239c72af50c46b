import Dispatch

/// Where SQLite's blocking work runs: serial dispatch queues, one for each connection (or each job
/// with a connection of its own), never a thread of Swift's cooperative pool, where a statement
/// waiting for another process's lock would hold a thread the app's tasks need.
///
/// - `io.flagship.store.database`: the store's own connection (`Database.queue`): its writes and
///   the reads that share it.
/// - `io.flagship.store.reader`: the read connection beside the writes (`Database.readerQueue`):
///   a fleet's visitor lookups in its local file.
/// - `io.flagship.store.checkpoint`: the checkpointing connection (`BackgroundCheckpointer`), one
///   checkpoint at a time.
/// - `io.flagship.store.check`: the full check of a big store after a crash (`DeferredCheck`).
/// - `io.flagship.store.read-ahead`: a prune's read ahead, a queue for each of its readers.
/// - `io.flagship.store.closing`: the store closed at the SDK's `close()`, which waits for the
///   write under way.
///
/// Each keeps libdispatch's default target, where a serial queue with work gets a thread at once
/// even while every thread of the global pool and of Swift's pool is busy. A concurrent queue's
/// blocks wait for a thread of the global pool instead: while CPU work held the pool, the one the
/// SDK had got no thread within 3 s (`SDKQueuesTests`). Their threads are bounded by their
/// number: a store's four connections, a prune's four readers, one close.
package enum StoreThreads {
    /// A serial queue for one connection's (or one job's) blocking work; `label` is one of those
    /// above.
    package static func queue(_ label: String) -> DispatchQueue {
        DispatchQueue(label: label)
    }
}

/// Runs blocking work on `queue` and waits for it, without holding a cooperative thread.
package func queuedCall<T: Sendable>(on queue: DispatchQueue, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        queue.async { continuation.resume(returning: work()) }
    }
}
