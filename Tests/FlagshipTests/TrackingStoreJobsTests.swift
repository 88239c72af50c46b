import Dispatch
import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship

/// The tracking store's jobs: one at a time, each to its end though it awaits, in the order they
/// were asked for, on the queue of the SQLite store they write, or on Swift's global executor
/// when there is none.
final class TrackingStoreJobsTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var database: FlagshipDatabase!
    private var store: TrackingStore!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        database = try FlagshipDatabase.open(at: directory.file("flagship.sqlite"))
        store = TrackingStore(hits: SQLiteHitQueue(store: database, capacity: 100, leaseDuration: 60, logger: Logger(label: "test")),
                              executor: database.executor)
    }

    override func tearDown() {
        database.close()
        directory.remove()
    }

    /// A job that awaits (a PostgreSQL write, a custom cache's call) is not interleaved with the
    /// jobs asked for after it: an erasure queued during a group commit's write runs after it.
    func testAJobThatAwaitsIsNotInterleavedWithTheNextOnes() async throws {
        let order = Locked<[String]>([])
        let release = OneShot<Void>()
        store.async {
            order.withLock { $0.append("commit starts") }
            _ = await release.value()
            order.withLock { $0.append("commit ends") }
        }
        store.async { order.withLock { $0.append("erasure") } }
        let barrier = Task { [store] in await store!.run { order.withLock { $0.append("barrier") } } }

        try await waitUntil { order.withLock { $0 } == ["commit starts"] }
        // Time for the jobs behind it to run, were they allowed to while it awaits.
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertEqual(order.withLock { $0 }, ["commit starts"], "nothing ran while the first job awaited")

        _ = release.fulfil(())
        await barrier.value
        XCTAssertEqual(order.withLock { $0 }, ["commit starts", "commit ends", "erasure", "barrier"])
    }

    /// The jobs run on the SQLite store's queue, before and after an await, never on a thread of
    /// the cooperative pool: SQLite's writer calls block there. So does the store's own async work.
    func testJobsRunOnTheStoresQueueBeforeAndAfterAnAwait() async throws {
        let queue = try XCTUnwrap(store.executor).queue
        let onTheStoreQueue = await store.run { () -> [Bool] in
            var seen = [Self.isOn(queue)]
            await Task.yield()
            try? await Task.sleep(for: .milliseconds(1))
            seen.append(Self.isOn(queue))
            return seen
        }
        XCTAssertEqual(onTheStoreQueue, [true, true])
        let storeWork = try await database.write(cancellable: false) { _ in Self.isOn(queue) }
        XCTAssertTrue(storeWork, "the store's async calls share the queue: one thread for its writes")
    }

    /// With no SQLite store to write, the jobs run in order all the same, on the global executor.
    func testWithoutASQLiteStoreTheJobsStillRunInOrder() async throws {
        let memory = TrackingStore(hits: DelegateHitQueue(delegate: ConfinedDelegate(NoHitCache(), label: "test.hits"),
                                                          capacity: 10, lookupTimeout: 1, logger: Logger(label: "test")),
                                   executor: nil)
        let order = Locked<[Int]>([])
        for number in 0..<20 {
            memory.async {
                if number % 3 == 0 { await Task.yield() }
                order.withLock { $0.append(number) }
            }
        }
        await memory.run {}
        XCTAssertEqual(order.withLock { $0 }, Array(0..<20))
    }

    /// A bounded wait gives up at its deadline; the job still runs in its turn.
    func testABoundedRunGivesUpAtItsDeadlineAndTheJobStillRuns() async throws {
        let release = OneShot<Void>()
        store.async { _ = await release.value() }
        let ran = Locked(false)
        let answer = await store.run(until: Date().addingTimeInterval(0.05), clock: SystemClock()) { () -> Bool in
            ran.withLock { $0 = true }
            return true
        }
        XCTAssertNil(answer, "the job ahead holds it past the deadline")
        XCTAssertFalse(ran.withLock { $0 })
        _ = release.fulfil(())
        await store.run {}
        XCTAssertTrue(ran.withLock { $0 }, "run once its turn came")
    }

    /// The task that runs the jobs holds their stream, not the store: a store let go ends, and
    /// its task with it, rather than living as long as the process.
    func testAStoreLetGoIsFreedOnceItsJobsRan() async throws {
        weak var released: TrackingStore?
        do {
            let local = TrackingStore(hits: store.hits, executor: database.executor)
            released = local
            await local.run {}
        }
        let deadline = Date().addingTimeInterval(5)
        while released != nil, Date() < deadline { try await Task.sleep(for: .milliseconds(2)) }
        XCTAssertNil(released, "the store outlived its last reference")
    }

    private static func isOn(_ queue: DispatchQueue) -> Bool {
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        defer { queue.setSpecific(key: key, value: nil) }
        return DispatchQueue.getSpecific(key: key) == true
    }

    private func waitUntil(timeout: TimeInterval = 5, _ condition: @escaping @Sendable () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { return XCTFail("condition not met within \(timeout) s") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
