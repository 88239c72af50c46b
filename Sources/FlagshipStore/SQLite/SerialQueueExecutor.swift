import Dispatch

/// A serial dispatch queue as a task executor: a task that prefers it runs its jobs on that
/// queue, in order with the closures queued there, so that a loop that blocks on I/O (the SDK's
/// group commits, on the store's queue) is a child task like any other and still never holds a
/// thread of Swift's cooperative pool.
package final class SerialQueueExecutor: TaskExecutor {
    package let queue: DispatchQueue

    package init(_ queue: DispatchQueue) {
        self.queue = queue
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}
