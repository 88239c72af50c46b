import Dispatch
import XCTest
@testable import Flagship
import FlagshipStore

/// The SDK's one timer: the deadlines of visitor lookups and HTTP exchanges, and the sleeps of its
/// background tasks.
final class DeadlineTimerTests: XCTestCase {
    func testActionsRunInDeadlineOrderEvenWhenAnEarlierOneIsScheduledLater() {
        let timer = DeadlineTimer()
        let order = Locked<[String]>([])
        let late = expectation(description: "late")
        let early = expectation(description: "early")
        timer.schedule(at: .now() + .milliseconds(300)) { order.withLock { $0.append("late") }; late.fulfill() }
        // Armed for 300 ms: the earlier deadline must re-arm the timer, not wait behind it.
        let start = DispatchTime.now()
        timer.schedule(at: .now() + .milliseconds(20)) { order.withLock { $0.append("early") }; early.fulfill() }
        wait(for: [early], timeout: 5)
        XCTAssertLessThan(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6, 250,
                          "the early action waited for the late deadline")
        wait(for: [late], timeout: 5)
        XCTAssertEqual(order.withLock { $0 }, ["early", "late"])
        XCTAssertEqual(timer.pendingCount, 0)
    }

    func testACancelledActionNeverRunsAndLeavesNothingBehind() {
        let timer = DeadlineTimer()
        let ran = Locked(0)
        // Deadlines far enough ahead that scheduling and cancelling all of them ends first,
        // even under the thread sanitizer on a busy machine (30 ms was once too short there).
        let deadline = DispatchTime.now() + .milliseconds(400)
        let tokens = (0..<1_000).map { _ in timer.schedule(at: deadline) { ran.withLock { $0 += 1 } } }
        XCTAssertEqual(timer.pendingCount, 1_000)
        tokens.forEach(timer.cancel)
        XCTAssertEqual(timer.pendingCount, 0)
        XCTAssertLessThan(DispatchTime.now(), deadline, "cancelling took longer than the deadlines' lead: the test proves nothing")
        // A later action proves the timer went past the cancelled deadlines.
        let after = expectation(description: "after")
        timer.schedule(at: deadline + .milliseconds(50)) { after.fulfill() }
        wait(for: [after], timeout: 5)
        XCTAssertEqual(ran.withLock { $0 }, 0)
    }

    func testADeadlineAlreadyPastRunsAtOnce() {
        let timer = DeadlineTimer()
        let ran = expectation(description: "ran")
        timer.schedule(at: .now() - .seconds(1)) { ran.fulfill() }
        wait(for: [ran], timeout: 5)
    }

    // MARK: Sleeping

    /// A sleep of a task that runs on a thread of its own ends on time while long work holds
    /// every thread of the global pool: `Task.sleep`'s wake-up went through that pool, and such
    /// a 50 ms sleep lasted 5 s.
    func testASleepOnAThreadOfItsOwnEndsOnTimeWhileLongWorkHoldsTheGlobalPool() throws {
        let executor = ThreadExecutor(name: "io.flagship.test.sleeping")
        defer { executor.shutdown() }
        let release = holdTheGlobalPool()
        defer { release() }
        let timer = DeadlineTimer()
        let slept = OneShot<Double>()
        Task(executorPreference: executor) {
            let asked = DispatchTime.now()
            try await timer.sleep(for: .milliseconds(50))
            slept.fulfil(Double(DispatchTime.now().uptimeNanoseconds - asked.uptimeNanoseconds) / 1e9)
        }
        let seconds = try XCTUnwrap(slept.value(blockingUntil: .now() + 2), "the sleep did not end within 2 s while the pool was held")
        XCTAssertGreaterThanOrEqual(seconds, 0.05)
    }

    /// A cancelled sleep throws `CancellationError` at once, and leaves no action behind; so does
    /// one begun by a task cancelled already.
    func testACancelledSleepThrowsAtOnceAndLeavesNothingBehind() async throws {
        let timer = DeadlineTimer()
        let sleeping = Task { try await timer.sleep(for: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(20))
        let asked = ContinuousClock.now
        sleeping.cancel()
        do {
            try await sleeping.value
            XCTFail("a cancelled sleep ended without an error")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertLessThan(ContinuousClock.now - asked, .seconds(1))

        let late = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await timer.sleep(for: .seconds(60))
        }
        do {
            try await late.value
            XCTFail("a sleep begun by a cancelled task ended without an error")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertEqual(timer.pendingCount, 0)
    }
}
