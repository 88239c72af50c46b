import Dispatch
import XCTest
@testable import Flagship
import FlagshipStore

/// The one timer that bounds visitor lookups and HTTP exchanges.
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
        let tokens = (0..<1_000).map { _ in timer.schedule(at: .now() + .milliseconds(30)) { ran.withLock { $0 += 1 } } }
        XCTAssertEqual(timer.pendingCount, 1_000)
        tokens.forEach(timer.cancel)
        XCTAssertEqual(timer.pendingCount, 0)
        // A later action proves the timer went past the cancelled deadlines.
        let after = expectation(description: "after")
        timer.schedule(at: .now() + .milliseconds(60)) { after.fulfill() }
        wait(for: [after], timeout: 5)
        XCTAssertEqual(ran.withLock { $0 }, 0)
    }

    func testADeadlineAlreadyPastRunsAtOnce() {
        let timer = DeadlineTimer()
        let ran = expectation(description: "ran")
        timer.schedule(at: .now() - .seconds(1)) { ran.fulfill() }
        wait(for: [ran], timeout: 5)
    }
}
