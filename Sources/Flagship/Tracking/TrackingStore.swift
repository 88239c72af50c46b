import FlagshipStore
import Foundation

/// Where the writer's side of the hit queue (and the default visitor cache's documents) is
/// written: the group commits, expiry, consent erasure and the count at close, as jobs that run
/// one at a time, each to its end, in the order they were asked for.
///
/// A job is `async`: it awaits the queue's writer calls, which for PostgreSQL wait on its
/// connection pool and for a custom cache on the queue that confines it, no thread waiting. One
/// job never runs in the middle of another, though it awaits: an erasure or a barrier queued
/// while a group commit awaits its write runs after that commit, as it must.
///
/// Where the jobs run: on the queue of the SQLite store they write (`FlagshipDatabase.executor`,
/// `io.flagship.store.database`), as their task executor, when there is one: SQLite's calls then
/// block that store's own thread, never one of Swift's cooperative pool, in order with the
/// store's other async calls (the sender's claims and settlements, retention's batches), which
/// a write would wait for anyway on the store's one write connection. With no SQLite store to
/// write (PostgreSQL without its local spill, a custom hit cache, memory), the jobs only await,
/// and run on Swift's global executor. The sender's claims and settlements are not jobs: it awaits
/// them (`HitQueue.claim`, `settle`), each one transaction on the same queue, so a group commit
/// (which callers of `try await sendHit` wait for) waits for the transactions queued before it,
/// as it waited for the write lock they held when it ran on a thread of its own.
///
/// One task runs the jobs, from the store's creation to its end: it waits on the jobs' stream,
/// and a job asked for wakes it, as a dispatch block would be; no task is made per job. The jobs
/// asked for are as many as the writer's own state allows (one group commit queued at a time,
/// one job per interval, per consent withdrawal, per barrier). The store's end finishes the
/// stream, and the task with it.
final class TrackingStore: Sendable {
    typealias Job = @Sendable () async -> Void

    let hits: any HitQueue
    /// The table the queue is, if this instance writes it (`HitQueue.ownTable`), asked once.
    let ownTable: OwnHitTable?
    /// The SQLite store's queue the jobs run on (`nil`: Swift's global executor), and so do the
    /// writer's group commit loops (`HitWriter.runCommits`), child tasks of the tracking manager's `run`.
    let executor: SerialQueueExecutor?
    private let jobs: AsyncStream<Job>.Continuation

    /// - Parameter executor: the queue of the SQLite store the jobs write, if any.
    init(hits: any HitQueue, executor: SerialQueueExecutor?) {
        self.hits = hits
        ownTable = hits.ownTable
        self.executor = executor
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
