import Dispatch
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// The SDK's blocking threads (`BlockingThreads`): the only dispatch queues the library makes,
/// where SQLite, the app's callbacks and its cache delegates run, each lane in order, none of them
/// able to stop the others by blocking.
final class BlockingThreadsTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    /// Library code makes dispatch queues in one file, and holds no semaphore: every other place
    /// that blocks uses the pool or a lane of it.
    func testLibraryCodeMakesItsDispatchQueuesInOnePlace() throws {
        let root = SharedData.packageRoot
        let libraries = ["Flagship", "FlagshipAsyncHTTPClient", "FlagshipConfiguration", "FlagshipLocalServer",
                         "FlagshipMetrics", "FlagshipPostgres", "FlagshipServiceLifecycle", "FlagshipStore",
                         "FlagshipTesting", "FlagshipTracing"]
        var makers: [String] = []
        var semaphores: [String] = []
        var read = 0
        for module in libraries {
            let folder = root.appendingPathComponent("Sources/\(module)")
            let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
            for file in files {
                read += 1
                let path = String(file.path.dropFirst(root.path.count + 1))
                let text = try String(contentsOf: file, encoding: .utf8)
                makers += text.matches(of: /DispatchQueue\s*\(\s*label/).map { _ in path }
                semaphores += text.matches(of: /DispatchSemaphore\s*\(/).map { _ in path }
            }
        }
        XCTAssertGreaterThan(read, 200, "the library sources were found")
        XCTAssertEqual(makers, Array(repeating: "Sources/FlagshipStore/SQLite/BlockingThreads.swift", count: 2))
        XCTAssertEqual(semaphores, [])
    }

    /// The store's connection, the app's callbacks and a cache delegate each run on a lane: on the
    /// pool's threads, never on a thread of Swift's cooperative pool.
    func testTheStoreTheCallbacksAndTheCacheDelegatesRunOnThePool() throws {
        let database = try FlagshipDatabase.open(at: directory.file("flagship.sqlite"))
        defer { database.close() }
        let delegate = ConfinedDelegate(NoHitCache(), label: "io.flagship.cache.hits")
        let key = DispatchSpecificKey<Bool>()
        BlockingThreads.pool.setSpecific(key: key, value: true)
        defer { BlockingThreads.pool.setSpecific(key: key, value: nil) }
        for (name, lane) in [("store", database.executor.queue), ("callbacks", Flagship.callbacks), ("delegate", delegate.queue)] {
            XCTAssertEqual(lane.sync { DispatchQueue.getSpecific(key: key) }, true, "\(name) is not on the pool")
        }
        XCTAssertNil(DispatchQueue.getSpecific(key: key), "the test's own thread is not the pool's")
    }

    /// A lane runs its blocks one at a time, in the order they were queued, however many threads
    /// the pool has.
    func testALaneKeepsItsOrder() {
        let lane = BlockingThreads.lane("io.flagship.test.order")
        let seen = Locked<[Int]>([])
        let running = Locked((now: 0, most: 0))
        let done = expectation(description: "every block ran")
        done.expectedFulfillmentCount = 2_000
        for index in 0..<2_000 {
            lane.async {
                running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                seen.withLock { $0.append(index) }
                running.withLock { $0.now -= 1 }
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 30)
        XCTAssertEqual(seen.withLock { $0 }, Array(0..<2_000))
        XCTAssertEqual(running.withLock { $0.most }, 1, "two blocks of one lane ran at once")
    }

    /// An app callback that blocks holds its own lane only: the store's writes, a cache
    /// delegate's calls and another lane's work go on meanwhile.
    func testABlockedCallbackHoldsOnlyItsLane() async throws {
        let database = try FlagshipDatabase.open(at: directory.file("flagship.sqlite"))
        defer { database.close() }
        let release = DispatchSemaphore(value: 0)
        let callbackRan = Locked(false)
        Flagship.callbacks.async { callbackRan.withLock { $0 = true }; release.wait() }
        defer { release.signal() }
        let deadline = Date().addingTimeInterval(10)
        while !callbackRan.withLock({ $0 }), Date() < deadline { try await Task.sleep(for: .milliseconds(2)) }
        XCTAssertTrue(callbackRan.withLock { $0 }, "the callback had not started")

        let wentOn = expectation(description: "the other lanes went on")
        let answers = Locked<[String]>([])
        let others = Task {
            _ = try await database.write { try $0.execute("CREATE TABLE written_beside_a_callback (id INTEGER)") }
            answers.withLock { $0.append("store") }
            if await ConfinedDelegate(NoHitCache(), label: "io.flagship.cache.hits").run({ _ in true }) {
                answers.withLock { $0.append("delegate") }
            }
            let lane = await queuedCall(on: BlockingThreads.lane("io.flagship.test.free")) { "lane" }
            answers.withLock { $0.append(lane) }
            wentOn.fulfill()
        }
        await fulfillment(of: [wentOn], timeout: 10)
        XCTAssertEqual(answers.withLock { $0 }, ["store", "delegate", "lane"])
        release.signal()
        try await others.value
    }
}
