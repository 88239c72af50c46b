import Dispatch

/// Where SQLite's blocking work runs when it need not wait for the store's other calls: one
/// concurrent dispatch queue, the second of the two places the SDK blocks on SQLite (the first is
/// each store's own serial queue, `Database.queue`, for the calls that share its connection).
///
/// What runs here has a connection of its own, or a read transaction of its own: a visitor
/// lookup on the read connection, a WAL checkpoint (`BackgroundCheckpointer`), the full check of a
/// big store after a crash (`DeferredCheck`). None of it runs on a thread of Swift's cooperative
/// pool, where a statement waiting for another process's lock would hold a thread the app's tasks
/// need; the owners that need their work in order (one checkpoint at a time) keep that order
/// themselves, and wait for it with a `DispatchGroup` when they close.
package enum StoreThreads {
    package static let concurrent = DispatchQueue(label: "io.flagship.store.concurrent", attributes: .concurrent)
}

/// Runs blocking work on `queue` and waits for it, without holding a cooperative thread.
package func queuedCall<T: Sendable>(on queue: DispatchQueue, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        queue.async { continuation.resume(returning: work()) }
    }
}
