import Dispatch
import FlagshipStore
import Foundation

/// Where the writer's side of the hit queue (and the default visitor cache's documents) is
/// written: the group commits, expiry, consent erasure and the count at close, as jobs that run
/// one at a time, each to its end, in the order they were asked for.
///
/// A job is `async`: it awaits the queue's writer calls, which for PostgreSQL wait on its
/// connection pool and for a custom cache on the queue that confines it, no thread waiting. One
/// job never runs in the middle of another, though it awaits: an erasure or a barrier queued
/// while a group commit awaits its write runs after that commit, as it must. The jobs run on the
/// store thread (`io.flagship.tracking.store`, a serial dispatch queue as their task executor),
/// where SQLite's calls block that thread only, never one of Swift's cooperative pool. The
/// sender's claims and settlements are not made here: it awaits them (`HitQueue.claim`,
/// `settle`), and a group commit, which callers of `try await sendHit` wait for, never queues
/// behind a claim.
///
/// One task runs the jobs, from the store's creation to its end: it waits on the jobs' stream
/// on the store thread, and a job asked for wakes it there, as a dispatch block would be; no task
/// is made per job. The jobs asked for are as many as the writer's own state allows (one group
/// commit queued at a time, one job per interval, per consent withdrawal, per barrier). The
/// store's end finishes the stream, and the task with it.
final class TrackingStore: Sendable {
    typealias Job = @Sendable () async -> Void

    let hits: any HitQueue
    /// The store thread as a task executor: the jobs run there, and so do the writer's group
    /// commit loops (`HitWriter.runCommits`), child tasks of the tracking manager's `run`.
    let executor: SerialQueueExecutor
    private let jobs: AsyncStream<Job>.Continuation

    init(hits: any HitQueue) {
        self.hits = hits
        executor = SerialQueueExecutor(DispatchQueue(label: "io.flagship.tracking.store"))
        let (stream, jobs) = AsyncStream.makeStream(of: Job.self)
        self.jobs = jobs
        // Holds the stream, not the store: the store's end finishes it.
        Task(executorPreference: executor) {
            for await job in stream { await job() }
        }
    }

    deinit {
        jobs.finish()
    }

    /// Sets `work` going once every job asked for before it has ended; returns at once.
    func async(_ work: @escaping Job) {
        jobs.yield(work)
    }

    /// Runs `work` once every job asked for before it has ended, and awaits it.
    func run<T: Sendable>(_ work: @escaping @Sendable () async -> T) async -> T {
        await withCheckedContinuation { continuation in
            async { continuation.resume(returning: await work()) }
        }
    }

    /// As `run`, awaited until `deadline` on `clock` at most: `nil` when the deadline came first
    /// (the work still runs, in its turn).
    func run<T: Sendable>(until deadline: Date, clock: any SDKClock, _ work: @escaping @Sendable () async -> T) async -> T? {
        await firstOf(deadline: deadline, clock: clock) { finish in
            async { finish(await work()) }
        }
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
