import Dispatch
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// `OneShot`: the waiter list of the SDK's one-off events (a service's start, the poller's first
/// attempt, a stored state value).
final class OneShotTests: XCTestCase {
    func testEveryWaiterGetsTheFirstValueAndALaterOneIsIgnored() async {
        let shot = OneShot<Int>()
        let waiters = (0..<8).map { _ in Task { await shot.value() } }
        await waitUntil { shot.waiting == 8 }
        XCTAssertTrue(shot.fulfil(1))
        XCTAssertFalse(shot.fulfil(2))
        for waiter in waiters {
            let value = await waiter.value
            XCTAssertEqual(value, 1)
        }
        let late = await shot.value()
        XCTAssertEqual(late, 1, "a waiter after the value gets it at once")
        XCTAssertEqual(shot.current, 1)
        XCTAssertEqual(shot.waiting, 0)
    }

    func testACancelledWaiterStopsAloneAndIsForgotten() async {
        let shot = OneShot<String>()
        let staying = Task { await shot.value() }
        let leaving = Task { await shot.value() }
        await waitUntil { shot.waiting == 2 }
        leaving.cancel()
        let left = await leaving.value
        XCTAssertNil(left)
        XCTAssertEqual(shot.waiting, 1, "the cancelled waiter's entry is gone")
        shot.fulfil("ready")
        let stayed = await staying.value
        XCTAssertEqual(stayed, "ready")
    }

    func testATaskCancelledBeforeItWaitsDoesNotWait() async {
        let shot = OneShot<Int>()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await shot.value()
        }
        let value = await task.value
        XCTAssertNil(value)
        XCTAssertEqual(shot.waiting, 0)
    }

    func testADeadlineEndsTheWaitAndForgetsTheWaiter() async {
        let shot = OneShot<Int>()
        let value = await shot.value(until: .now())
        XCTAssertNil(value)
        XCTAssertEqual(shot.waiting, 0)
        shot.fulfil(3)
        let afterwards = await shot.value(until: .now())
        XCTAssertEqual(afterwards, 3, "a value already there is no wait, whatever the deadline")
    }

    func testABlockedThreadWakesWithTheValueOrAtItsDeadline() {
        let shot = OneShot<Int>()
        XCTAssertNil(shot.value(blockingUntil: .now()), "past its deadline, no wait")
        let woken = Locked<Int?>(nil)
        let thread = Thread { woken.withLock { $0 = shot.value(blockingUntil: .distantFuture) } }
        let finished = expectation(description: "the blocked thread returned")
        let watcher = Thread {
            while woken.withLock({ $0 }) == nil { usleep(1_000) }
            finished.fulfill()
        }
        thread.start()
        watcher.start()
        shot.fulfil(7)
        wait(for: [finished], timeout: 10)
        XCTAssertEqual(woken.withLock { $0 }, 7)
    }

    private func waitUntil(_ condition: @escaping @Sendable () -> Bool) async {
        while !condition() { await Task.yield() }
    }
}
