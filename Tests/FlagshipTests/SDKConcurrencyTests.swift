import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

final class SDKConcurrencyTests: SDKTestCase {
    func testVisitorsUsedFromManyTasksAtOnceLoseNothing() async throws {
        start(configBuilder().withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 5, batchIntervalTimer: 60)))
        let shared = await flagship.newVisitor(visitorId: "shared", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await shared.fetchFlags()
        let tasks = 8
        let hitsPerTask = 10

        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask { [flagship] in
                    let own = await flagship!.newVisitor(visitorId: "v\(task)", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
                    for round in 0..<hitsPerTask {
                        shared.updateContext("task\(task)", round)
                        _ = shared.getFlag(key: "btnColor").value(defaultValue: "blue")
                        try await own.fetchFlags()
                        _ = own.getFlag(key: "price").value(defaultValue: 0.0)
                        try await own.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "round-\(round)"))
                    }
                }
            }
            try await group.waitForAll()
        }
        await flagship.close()

        let events = server.hits.filter { $0["ea"]?.stringValue?.hasPrefix("round-") ?? false }
        XCTAssertEqual(events.count, tasks * hitsPerTask)
        XCTAssertEqual(Set(events.compactMap { hit in hit["vid"]?.stringValue.map { "\($0)/\(hit["ea"]!.stringValue!)" } }).count, tasks * hitsPerTask, "no duplicate")
        XCTAssertEqual(server.activates.filter { $0["vid"] == "shared" }.count, 1, "one activate per variation for one visitor instance")
        XCTAssertEqual(shared.getContext().keys.filter { $0.hasPrefix("task") }.count, tasks)
    }
}

/// `build()` waits for the visitor cache on the cache's own queue, never for a task: called from
/// more tasks than the cooperative pool has threads, each still finds its visitor in the cache.
/// `buildAsync()` suspends instead of blocking.
final class VisitorBuildTests: SDKTestCase {
    private func cacheVisitor(_ id: String) async throws {
        let visitor = await flagship.newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()
        await flagship.flushCaches()
    }

    func testSynchronousBuildFromTasksReturnsEvenWithEveryPoolThreadWaiting() async throws {
        start()
        try await cacheVisitor("cached")
        let builders = max(8, 4 * ProcessInfo.processInfo.activeProcessorCount)
        let colors = Collected<String>()
        let group = DispatchGroup()

        for _ in 0..<builders {
            group.enter()
            Task.detached { [flagship] in
                colors.append(readColorOfVisitorBuiltSynchronously(flagship!, visitorId: "cached"))
                group.leave()
            }
        }

        // Waited for off the pool: this test's own task must not hold one of its threads.
        let returned = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: group.wait(timeout: .now() + 30)) }
        }
        XCTAssertEqual(returned, .success, "every synchronous build returned")
        XCTAssertEqual(colors.values, Array(repeating: "red", count: builders), "each found the visitor in the cache")
        XCTAssertFalse(log.allText.contains("took longer than"), "no lookup ran out of time")
    }

    func testBuildAsyncGivesTheCachedFlagsAndTheSameAnonymousIdAsBuild() async throws {
        start()
        try await cacheVisitor("cached")

        let visitor = await flagship.newVisitor(visitorId: "cached", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        let authenticated = await flagship.newVisitor(visitorId: "user-1", hasConsented: true, instanceType: .NEW_INSTANCE)
            .isAuthenticated(true).buildAsync()
        let again = await flagship.newVisitor(visitorId: "user-1", hasConsented: true, instanceType: .NEW_INSTANCE)
            .isAuthenticated(true).buildAsync()

        XCTAssertEqual(visitor.requiredFetchReason, .FETCHED_FROM_CACHE)
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue", visitorExposed: false), "red")
        let anonymousId = try XCTUnwrap(authenticated.anonymousId)
        XCTAssertEqual(again.anonymousId, anonymousId, "one anonymous id per visitor id, kept in the store")
        XCTAssertEqual(flagship.sharedVisitor.map(ObjectIdentifier.init), nil, "NEW_INSTANCE visitors are not shared")
    }

    func testBuildAsyncGoesOnWithoutTheCacheWhenItsLookupOverrunsTheTimeout() async throws {
        let slow = SlowVisitorCache(delay: 0.5)
        start(configBuilder().withCacheManager(FSCacheManager(slow, visitorLookupTimeOut: 0.05)))

        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .SHARED_INSTANCE).buildAsync()

        XCTAssertEqual(visitor.requiredFetchReason, .VISITOR_CREATE)
        XCTAssertTrue(log.allText.contains("A visitor cache lookup took longer than 50 ms"), log.allText)
        XCTAssertTrue(flagship.sharedVisitor === visitor)
    }
}

/// A plain function, so that Swift picks the synchronous `build()`, as a caller's helper would.
private func readColorOfVisitorBuiltSynchronously(_ flagship: Flagship, visitorId: String) -> String {
    let visitor = flagship.newVisitor(visitorId: visitorId, hasConsented: true, instanceType: .NEW_INSTANCE).build()
    return visitor.getFlag(key: "btnColor").value(defaultValue: "none", visitorExposed: false) ?? "nil"
}

/// A visitor cache that knows nobody and takes `delay` seconds to say so.
private final class SlowVisitorCache: FSVisitorCacheDelegate {
    let delay: TimeInterval

    init(delay: TimeInterval) {
        self.delay = delay
    }

    func cacheVisitor(visitorId: String, _ visitorData: Data) {}

    func lookupVisitor(visitorId: String) -> Data? {
        Thread.sleep(forTimeInterval: delay)
        return nil
    }

    func flushVisitor(visitorId: String) {}
}
