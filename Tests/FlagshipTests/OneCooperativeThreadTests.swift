#if os(Linux)
import COneCooperativeThread
import FlagshipStore
import Foundation
import Glibc
import XCTest

/// The suite's run with one cooperative thread (`FLAGSHIP_ONE_COOPERATIVE_THREAD=1`, a job of
/// `make test`) really has one: tasks that could run at once run on one thread, one after the
/// other, and sleeps still wake.
final class OneCooperativeThreadTests: XCTestCase {
    private func requireOneThread() throws {
        guard flagship_one_cooperative_thread_installed() == 1 else {
            throw XCTSkip("the global executor is the system's (FLAGSHIP_ONE_COOPERATIVE_THREAD=1 runs this)")
        }
    }

    func testTasksRunOnOneThreadOneAtATime() async throws {
        try requireOneThread()
        let seen = Locked<(threads: Set<UInt>, running: Int, most: Int)>(([], 0, 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    seen.withLock { state in
                        state.threads.insert(UInt(pthread_self()))
                        state.running += 1
                        state.most = max(state.most, state.running)
                    }
                    // Held without suspending: a second thread of the pool would run another task meanwhile.
                    usleep(2_000)
                    seen.withLock { $0.running -= 1 }
                }
            }
        }
        let result = seen.withLock { $0 }
        XCTAssertEqual(result.threads.count, 1, "every task on one thread")
        XCTAssertEqual(result.most, 1, "one task at a time")
    }

    func testSleepsWakeInDeadlineOrder() async throws {
        try requireOneThread()
        let order = Locked<[Int]>([])
        await withTaskGroup(of: Void.self) { group in
            for (index, milliseconds) in [30, 10, 20].enumerated() {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(milliseconds))
                    order.withLock { $0.append(index) }
                }
            }
        }
        XCTAssertEqual(order.withLock { $0 }, [1, 2, 0])
    }
}
#endif
