import Dispatch
import FlagshipStore
import Foundation

/// The one serial queue on which the writer's side of the hit queue (and the default visitor
/// cache's documents) is written: the group commits, expiry, consent erasure and the count at
/// close, in the order they were asked for. Those calls block on I/O, so none runs on a thread of
/// Swift's cooperative pool. The sender's claims and settlements are not made here: it awaits
/// them (`HitQueue.claim`, `settle`), and a group commit, which callers of `try await sendHit`
/// wait for, never queues behind a claim.
final class TrackingStore: Sendable {
    let hits: any HitQueue
    private let queue: DispatchQueue
    /// The store queue as a task executor: the writer's group commits run there, as a loop
    /// (`HitWriter.runCommits`) that is a child task of the tracking manager's `run`.
    let executor: SerialQueueExecutor

    init(hits: any HitQueue) {
        self.hits = hits
        queue = DispatchQueue(label: "io.flagship.tracking.store")
        executor = SerialQueueExecutor(queue)
    }

    /// Sets `work` going after everything queued before it; returns at once.
    func async(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Runs `work` after everything queued before it, and waits for it.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await queuedCall(on: queue, work)
    }

    /// Runs `work` after everything queued before it, waiting until `deadline` on `clock` at most:
    /// `nil` when the deadline came first (the work still runs, once the queue reaches it).
    func run<T: Sendable>(until deadline: Date, clock: any SDKClock, _ work: @escaping @Sendable () -> T) async -> T? {
        await queuedCall(on: queue, until: deadline, clock: clock, work)
    }
}

/// The `onVisitorExposed` callbacks of activates not yet delivered, by hit id: registered when a
/// flag read's activate is accepted, called by the sender once the server took it, forgotten with
/// an activate dropped or refused. Bounded: past `limit`, a new callback is not kept.
final class DeliveryCallbacks: Sendable {
    private let limit: Int
    private let callbacks = Locked<[String: @Sendable () -> Void]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Keeps `callback` for the activate `id`; `false` when `limit` callbacks already wait.
    func register(_ callback: @escaping @Sendable () -> Void, for id: String) -> Bool {
        callbacks.withLock { callbacks in
            guard callbacks.count < limit else { return false }
            callbacks[id] = callback
            return true
        }
    }

    /// The callbacks of the delivered `ids` that have one, removed.
    func take(_ ids: [String]) -> [@Sendable () -> Void] {
        callbacks.withLock { callbacks in ids.compactMap { callbacks.removeValue(forKey: $0) } }
    }

    func forget<S: Sequence<String>>(_ ids: S) {
        callbacks.withLock { callbacks in
            for id in ids { callbacks[id] = nil }
        }
    }

    var count: Int {
        callbacks.withLock { $0.count }
    }
}
