#if os(Linux)
import Foundation
import Glibc

/// Swift concurrency's global executor as one thread, for `FLAGSHIP_ONE_COOPERATIVE_THREAD=1`
/// (issue 46): every job of the global executor, and every sleep's wake-up, runs on this thread,
/// one at a time, in the order enqueued (timers by deadline). Code that blocks a thread of the
/// cooperative pool while it waits for other async work then hangs here, where a pool of several
/// threads would hide it.
///
/// Installed through the runtime's hooks (`swift_task_enqueueGlobal_hook`, and the delay and
/// deadline hooks), by `COneCooperativeThread`'s load-time constructor. On Linux,
/// `LIBDISPATCH_COOPERATIVE_POOL_STRICT` does not narrow the pool, and the pool's width follows
/// the machine's processors, not the process's affinity, so neither can stand in for this.
final class OneCooperativeThread: SerialExecutor, @unchecked Sendable {
    // `@unchecked`: `ready`, `readyHead` and `timers` are only touched under `condition`'s lock.
    static let shared = OneCooperativeThread()

    private struct Timer {
        /// CLOCK_MONOTONIC, nanoseconds.
        let deadline: UInt64
        let sequence: UInt64
        let job: UnownedJob
    }

    private let condition = NSCondition()
    private var ready: [UnownedJob] = []
    private var readyHead = 0
    /// Ordered by deadline, then by the order they came in.
    private var timers: [Timer] = []
    private var sequence: UInt64 = 0

    private init() {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            Unmanaged<OneCooperativeThread>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        precondition(created == 0, "the one cooperative thread could not be created")
        pthread_detach(thread)
    }

    static func monotonicNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        enqueue(UnownedJob(job))
    }

    func enqueue(_ job: UnownedJob) {
        condition.lock()
        ready.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Runs `job` once `delay` nanoseconds have passed.
    func enqueue(_ job: UnownedJob, afterNanoseconds delay: UInt64) {
        let deadline = Self.monotonicNow() &+ delay
        condition.lock()
        sequence += 1
        let timer = Timer(deadline: deadline, sequence: sequence, job: job)
        let index = timers.firstIndex { ($0.deadline, $0.sequence) > (timer.deadline, timer.sequence) } ?? timers.endIndex
        timers.insert(timer, at: index)
        condition.signal()
        condition.unlock()
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    private func run() {
        while true {
            condition.lock()
            let job = next()
            condition.unlock()
            job.runSynchronously(on: asUnownedSerialExecutor())
        }
    }

    /// The next job to run, waiting for one (under the lock): due timers join the ready jobs first.
    private func next() -> UnownedJob {
        while true {
            let now = Self.monotonicNow()
            while let first = timers.first, first.deadline <= now {
                ready.append(timers.removeFirst().job)
            }
            if readyHead < ready.count {
                let job = ready[readyHead]
                readyHead += 1
                if readyHead == ready.count {
                    ready.removeAll(keepingCapacity: true)
                    readyHead = 0
                }
                return job
            }
            if let first = timers.first {
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(first.deadline - now) / 1e9))
            } else {
                condition.wait()
            }
        }
    }
}

/// The runtime's clock reading, for a deadline given on one of its clocks.
@_silgen_name("swift_get_time")
private func swiftGetTime(_ seconds: UnsafeMutablePointer<Int64>, _ nanoseconds: UnsafeMutablePointer<Int64>, _ clock: CInt)

private typealias EnqueueOriginal = @convention(thin) (UnownedJob) -> Void
private typealias EnqueueHook = @convention(thin) (UnownedJob, EnqueueOriginal) -> Void
private typealias DelayOriginal = @convention(thin) (UInt64, UnownedJob) -> Void
private typealias DelayHook = @convention(thin) (UInt64, UnownedJob, DelayOriginal) -> Void
private typealias DeadlineOriginal = @convention(thin) (Int64, Int64, Int64, Int64, CInt, UnownedJob) -> Void
private typealias DeadlineHook = @convention(thin) (Int64, Int64, Int64, Int64, CInt, UnownedJob, DeadlineOriginal) -> Void

/// Installs `OneCooperativeThread` as the global executor; returns 1 once done, 0 when a hook is
/// missing from the runtime. Called by `COneCooperativeThread` at load time.
@_cdecl("flagship_tests_install_one_cooperative_thread")
func installOneCooperativeThread() -> CInt {
    guard let process = dlopen(nil, RTLD_NOW),
          let enqueue = dlsym(process, "swift_task_enqueueGlobal_hook"),
          let delay = dlsym(process, "swift_task_enqueueGlobalWithDelay_hook"),
          let deadline = dlsym(process, "swift_task_enqueueGlobalWithDeadline_hook") else { return 0 }
    _ = OneCooperativeThread.shared
    enqueue.assumingMemoryBound(to: EnqueueHook.self).pointee = { job, _ in
        OneCooperativeThread.shared.enqueue(job)
    }
    delay.assumingMemoryBound(to: DelayHook.self).pointee = { nanoseconds, job, _ in
        OneCooperativeThread.shared.enqueue(job, afterNanoseconds: nanoseconds)
    }
    deadline.assumingMemoryBound(to: DeadlineHook.self).pointee = { seconds, nanoseconds, _, _, clock, job, _ in
        var nowSeconds: Int64 = 0
        var nowNanoseconds: Int64 = 0
        swiftGetTime(&nowSeconds, &nowNanoseconds, clock)
        let left = (seconds - nowSeconds) * 1_000_000_000 + (nanoseconds - nowNanoseconds)
        OneCooperativeThread.shared.enqueue(job, afterNanoseconds: UInt64(max(0, left)))
    }
    return 1
}
#endif
