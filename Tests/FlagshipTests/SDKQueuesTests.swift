import Dispatch
import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship

/// The SDK's serial dispatch queues (the store's, its read connection's and checkpoints', the
/// callbacks', a cache delegate's) each get a thread of their own when they have work: neither
/// long work on the global pool nor a callback that blocks makes them wait. A serial queue made
/// to target a concurrent queue would lose that (libdispatch gives a thread at once only to a
/// serial queue on its default target). Tried on 2026-12-02: in a probe, such a queue got no
/// thread for the 3 s the probe waited while CPU work held the global pool, and neither did the
/// concurrent queue the store's reads and checkpoints used until 2026-12-03. The tests below allow
/// 2 s for what takes milliseconds when the queue has a thread.
final class SDKQueuesTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    /// While long work holds every thread of the global pool (an app's `concurrentPerform`, a
    /// bucketing file read in parts), a block on each SDK queue runs at once.
    func testTheSDKQueuesRunWhileLongWorkHoldsTheGlobalPool() throws {
        let database = try FlagshipDatabase.open(at: directory.file("flagship.sqlite"))
        defer { database.close() }
        let delegate = ConfinedDelegate(NoHitCache(), label: "io.flagship.cache.hits")
        let release = holdTheGlobalPool()
        defer { release() }
        for (name, queue) in [("store", database.executor.queue), ("callbacks", Flagship.callbacks), ("delegate", delegate.queue)] {
            let ran = DispatchSemaphore(value: 0)
            let asked = Date()
            queue.async { ran.signal() }
            XCTAssertEqual(ran.wait(timeout: .now() + 2), .success, "the \(name) queue got no thread while the pool was held")
            XCTAssertLessThan(Date().timeIntervalSince(asked), 2, name)
        }
    }

    /// The store's blocking work beside its writes (a fleet's lookup in its local file, a
    /// checkpoint) runs at once while long work holds every thread of the global pool: on serial
    /// queues of its own, not on a concurrent queue that waits for a thread of that pool.
    func testTheStoresWorkBesideItsWritesRunsWhileLongWorkHoldsTheGlobalPool() throws {
        let store = try FlagshipDatabase.open(at: directory.file("flagship.sqlite"))
        defer { store.close() }
        let saved = VisitorRecord(visitorId: "ada", anonymousId: nil, consent: true, document: #"{"version": 1}"#, updatedAt: 1)
        try store.write { try $0.visitors.save(saved) }
        let local = LocalHitsAndVisitors(hits: SQLiteHitQueue(store: store, capacity: 100, leaseDuration: 60, logger: Logger(label: "test")),
                                         store: store)
        let executor = ThreadExecutor(name: "io.flagship.test.awaiting")
        defer { executor.shutdown() }
        let release = holdTheGlobalPool()
        defer { release() }

        let before = store.database.backgroundCheckpoints
        try store.write { try $0.state.setValue("x", forKey: "beside-the-pool", now: 1) }
        store.database.checkpointSoon()
        let deadline = Date().addingTimeInterval(2)
        while store.database.backgroundCheckpoints == before, Date() < deadline { usleep(1_000) }
        XCTAssertGreaterThan(store.database.backgroundCheckpoints, before, "the checkpoint got no thread while the pool was held")

        // Awaited from a task on a thread of the test's own, so that only the lookup's queue is
        // in question, not Swift's pool.
        let found = OneShot<Result<VisitorRecord?, any Error>>()
        Task(executorPreference: executor) {
            do {
                found.fulfil(.success(try await local.lookUpVisitor(id: "ada")))
            } catch {
                found.fulfil(.failure(error))
            }
        }
        let answer = try XCTUnwrap(found.value(blockingUntil: .now() + 2), "the lookup got no thread while the pool was held")
        XCTAssertEqual(try answer.get(), saved)
    }

    /// A prune's rests between its batches end while long work holds every thread of the global
    /// pool: they sleep on the SDK's timer. With `Task.sleep`, whose wake-up goes through Swift's
    /// global executor (on Linux, the global pool's threads), the prune stood still after its
    /// first batch until the pool was free.
    func testAPrunesRestsEndWhileLongWorkHoldsTheGlobalPool() throws {
        let store = try FlagshipDatabase.open(at: directory.file("flagship.sqlite"))
        defer { store.close() }
        try store.write { db in
            for index in 0..<100 {
                try db.visitors.save(VisitorRecord(visitorId: "old-\(index)", anonymousId: nil, consent: true,
                                                   document: #"{"version": 1}"#, updatedAt: 1))
            }
        }
        let executor = ThreadExecutor(name: "io.flagship.test.pruning")
        defer { executor.shutdown() }
        let release = holdTheGlobalPool()
        defer { release() }

        let pruned = OneShot<Result<VisitorPrune, any Error>>()
        Task(executorPreference: executor) {
            do {
                pruned.fulfil(.success(try await store.pruneVisitors(notSeenSince: 2, keepingAtMost: nil, batchSize: 10)))
            } catch {
                pruned.fulfil(.failure(error))
            }
        }
        let prune = try XCTUnwrap(pruned.value(blockingUntil: .now() + 3), "the prune did not end within 3 s while the pool was held").get()
        XCTAssertEqual(prune.expired, 100)
        XCTAssertGreaterThanOrEqual(prune.transactions, 10, "ten batches, with rests between them")
    }

    /// The deadlines of the waits the SDK bounds (a visitor lookup, an HTTP exchange, `close()`)
    /// fire on time while long work holds every thread of the global pool.
    func testADeadlineFiresOnTimeWhileLongWorkHoldsTheGlobalPool() {
        let release = holdTheGlobalPool()
        defer { release() }
        let fired = DispatchSemaphore(value: 0)
        let asked = DispatchTime.now()
        DeadlineTimer.shared.schedule(at: asked + .milliseconds(50)) { fired.signal() }
        XCTAssertEqual(fired.wait(timeout: .now() + 2), .success, "the deadline did not fire while the pool was held")
        let waited = Double(DispatchTime.now().uptimeNanoseconds - asked.uptimeNanoseconds) / 1e9
        XCTAssertGreaterThanOrEqual(waited, 0.05)
    }

    /// An app callback that blocks holds its own queue only: the store's writes, a cache
    /// delegate's calls and the reads beside the writes go on meanwhile.
    func testABlockedCallbackHoldsOnlyItsQueue() async throws {
        let database = try FlagshipDatabase.open(at: directory.file("flagship.sqlite"))
        defer { database.close() }
        let release = DispatchSemaphore(value: 0)
        let callbackRan = Locked(false)
        Flagship.callbacks.async { callbackRan.withLock { $0 = true }; release.wait() }
        defer { release.signal() }
        let deadline = Date().addingTimeInterval(10)
        while !callbackRan.withLock({ $0 }), Date() < deadline { try await Task.sleep(for: .milliseconds(2)) }
        XCTAssertTrue(callbackRan.withLock { $0 }, "the callback had not started")

        let wentOn = expectation(description: "the other queues went on")
        let answers = Locked<[String]>([])
        let others = Task {
            _ = try await database.write { try $0.execute("CREATE TABLE written_beside_a_callback (id INTEGER)") }
            answers.withLock { $0.append("store") }
            if await ConfinedDelegate(NoHitCache(), label: "io.flagship.cache.hits").run({ _ in true }) {
                answers.withLock { $0.append("delegate") }
            }
            let reader = try await database.readBesideWrites { _ in "reader" }
            answers.withLock { $0.append(reader) }
            wentOn.fulfill()
        }
        await fulfillment(of: [wentOn], timeout: 10)
        XCTAssertEqual(answers.withLock { $0 }, ["store", "delegate", "reader"])
        release.signal()
        try await others.value
    }

    /// The callbacks run one at a time, in the order they were asked for.
    func testCallbacksRunOneAtATimeInOrder() {
        let seen = Locked<[Int]>([])
        let running = Locked((now: 0, most: 0))
        let done = expectation(description: "every callback ran")
        done.expectedFulfillmentCount = 1_000
        for index in 0..<1_000 {
            Flagship.callbacks.async {
                running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                seen.withLock { $0.append(index) }
                running.withLock { $0.now -= 1 }
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 30)
        XCTAssertEqual(seen.withLock { $0 }, Array(0..<1_000))
        XCTAssertEqual(running.withLock { $0.most }, 1, "two callbacks ran at once")
    }
}

/// Sets 2 × cores blocks spinning on the global pool (20 s at most) once one has started;
/// returns what ends them and waits for their end.
func holdTheGlobalPool() -> () -> Void {
    let holding = Locked(true)
    let held = DispatchGroup()
    let spinners = 2 * max(ProcessInfo.processInfo.activeProcessorCount, 2)
    let started = DispatchSemaphore(value: 0)
    for _ in 0..<spinners {
        DispatchQueue.global().async(group: held) {
            started.signal()
            let end = Date().addingTimeInterval(20)
            while holding.withLock({ $0 }), Date() < end {}
        }
    }
    XCTAssertEqual(started.wait(timeout: .now() + 5), .success, "the global pool ran none of the long blocks")
    return {
        holding.withLock { $0 = false }
        held.wait()
    }
}
