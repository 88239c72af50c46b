import Dispatch

/// A serial dispatch queue as a task executor: a task that prefers it runs its jobs on that
/// queue, in order with the closures queued there, so that a loop that blocks on I/O (the SDK's
/// group commits, on the store's queue) is a child task like any other and still never holds a
/// thread of Swift's cooperative pool.
package final class SerialQueueExecutor: TaskExecutor {
    package let queue: DispatchQueue
    private let submissions = Locked(0)

    package init(_ queue: DispatchQueue) {
        self.queue = queue
    }

    /// Closures and jobs submitted to the queue so far. Background work in batches (a prune)
    /// reads it at the start and the end of a batch that runs on the queue: a change means work
    /// of others (a group commit, the sender's claim) waited behind the batch.
    package var submitted: Int {
        submissions.withLock { $0 }
    }

    /// Runs `block` on the queue, after what was submitted before it, counted in `submitted`.
    package func async(_ block: @escaping @Sendable () -> Void) {
        submissions.withLock { $0 += 1 }
        queue.async(execute: block)
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        async { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}
