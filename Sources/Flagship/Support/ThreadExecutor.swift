import FlagshipStore
import Foundation

/// A task executor with one thread of its own, for the synchronous forms of async calls.
///
/// A synchronous `close()` must wait, and when it is called from a task it waits on a thread of
/// Swift's cooperative pool; if the work it waits for needed that pool, a pool whose threads all
/// wait would never run it (four such calls on a 2-core machine used to hang). Run with this
/// executor as its preference, the work (and the default actors and continuations it meets)
/// runs on this thread instead, so it completes whatever the pool is doing.
///
/// FlagshipPostgres runs its queries' glue with one as their preference, for the same reason:
/// a store call waits on a dispatch queue of the SDK, and the pool may be busy with requests.
package final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    // `@unchecked`: `jobs` and `stopped` are only touched under `condition`'s lock.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    /// The thread the SDK's background tasks run on: the tracking manager's lifecycle (the
    /// sender's loop, the batch timer, the backoff wake-ups), the bucketing file's polls, the
    /// retention's prunes, and what waits for them at close. Their preference (structured
    /// children inherit it), so that they neither take a thread of the app's cooperative pool nor
    /// wait for one: a synchronous `close()` that holds the pool's every thread still ends, with
    /// its last round sent. One thread for every instance of the process; the blocking work these
    /// tasks start runs on the SDK's dispatch queues, and the network's on its client's threads.
    package static let background = ThreadExecutor(name: "io.flagship.background")

    package init(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread end once the jobs queued so far have run.
    package func shutdown() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// Runs `operation` to completion on a thread of its own and returns its result, blocking the
    /// caller (never the pool's other threads) until then.
    static func runBlocking<T: Sendable>(name: String, _ operation: @escaping @Sendable () async -> T) -> T {
        let executor = ThreadExecutor(name: name)
        defer { executor.shutdown() }
        let result = OneShot<T>()
        Task(executorPreference: executor) { result.fulfil(await operation()) }
        // No deadline: the operation bounds its own waits (a close, its deadline).
        guard let value = result.value(blockingUntil: .distantFuture) else {
            preconditionFailure("a wait with no deadline ended without its value")
        }
        return value
    }
}
