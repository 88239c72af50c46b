import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// A custom visitor cache that answers only when the test lets it.
private final class GatedVisitorCache: FSVisitorCacheDelegate, @unchecked Sendable {
    let gate = DispatchSemaphore(value: 0)
    let answered = DispatchSemaphore(value: 0)
    let answer: Data?

    init(answer: Data?) {
        self.answer = answer
    }

    func cacheVisitor(visitorId: String, _ visitorData: Data) {}

    func lookupVisitor(visitorId: String) -> Data? {
        gate.wait()
        defer { answered.signal() }
        return answer
    }

    func flushVisitor(visitorId: String) {}
}

final class CacheServiceTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var database: FlagshipDatabase!
    private var log: LogCapture!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        database = try FlagshipDatabase.open(at: directory.file("flagship-env.sqlite"))
        log = LogCapture()
    }

    override func tearDown() {
        database.close()
        directory.remove()
    }

    private func service(_ manager: FSCacheManager) -> CacheService {
        CacheService(manager: manager, store: database, logger: log.logger)
    }

    func testTheDefaultIsTheSQLiteVisitorCache() {
        let caches = service(FSCacheManager())
        XCTAssertTrue(caches.visitorCache.holds(FSDefaultCacheVisitor.self))
        XCTAssertEqual(caches.visitorLookupTimeout, 0.2)
    }

    func testAVisitorWrittenIsFoundByTheNextLookup() async throws {
        let caches = service(FSCacheManager())
        let document = VisitorCacheDocument(visitorId: "v1", context: ["plan": .string("pro")])

        XCTAssertTrue(caches.cacheVisitor(document), "the default cache's document waits for the group commit")

        let lookup = await caches.lookupVisitor("v1")
        XCTAssertEqual(lookup, .found(document))
        let missing = await caches.lookupVisitor("v2")
        XCTAssertEqual(missing, .notFound)
    }

    func testASlowCustomVisitorCacheIsAbandonedOnTimeAndItsLateAnswerIgnored() async throws {
        let slow = GatedVisitorCache(answer: VisitorCacheDocument(visitorId: "v1").jsonData())
        let caches = service(FSCacheManager(slow, nil, visitorLookupTimeOut: 0.05))

        let started = Date()
        let lookup = await caches.lookupVisitor("v1")
        let elapsed = Date().timeIntervalSince(started)

        XCTAssertEqual(lookup, .timedOut)
        XCTAssertGreaterThanOrEqual(elapsed, 0.05)
        // The cache answers only when the test opens its gate, after the lookup: without the
        // timeout the lookup would never end. 1 s is twenty times the timeout, room for a busy machine.
        XCTAssertLessThan(elapsed, 1.0, "abandoned on time, not when the cache answers")
        XCTAssertEqual(log.messages(at: .warning), ["A visitor cache lookup took longer than 50 ms: going on without it"])

        // Let the abandoned call finish: its answer goes nowhere, and the cache keeps working.
        slow.gate.signal()
        slow.answered.wait()
        slow.gate.signal()
        let next = await caches.lookupVisitor("v1")
        XCTAssertEqual(next, .found(VisitorCacheDocument(visitorId: "v1")))
    }

    /// The synchronous `build()`'s lookup blocks its caller for the timeout at most, as the
    /// async one waits, and then finds what the cache answers in time.
    func testTheSynchronousLookupOfASlowCustomCacheEndsAtItsTimeoutToo() throws {
        let slow = GatedVisitorCache(answer: VisitorCacheDocument(visitorId: "v1").jsonData())
        let caches = service(FSCacheManager(slow, nil, visitorLookupTimeOut: 0.05))

        let started = Date()
        XCTAssertEqual(caches.lookupVisitorBlocking("v1"), .timedOut)
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(elapsed, 0.05)
        XCTAssertLessThan(elapsed, 1.0, "abandoned on time, not when the cache answers")

        slow.gate.signal()
        slow.answered.wait()
        slow.gate.signal()
        XCTAssertEqual(caches.lookupVisitorBlocking("v1"), .found(VisitorCacheDocument(visitorId: "v1")))
    }

    /// A fleet's lookup in its local file that the synchronous `build()` stops waiting for at the
    /// timeout is cancelled, and says no more than the timeout's warning: its cancellation is not
    /// "the visitor cache could not be read". The next lookup finds the visitor.
    func testASharedStoresLookupCancelledAtTheTimeoutSaysOnlyThatItTimedOut() throws {
        let local = try FlagshipDatabase.open(at: directory.file("fleet-local.sqlite"))
        defer { local.close() }
        let document = VisitorCacheDocument(visitorId: "v1")
        let record = VisitorRecord(visitorId: "v1", anonymousId: nil, consent: true,
                                   document: String(decoding: document.jsonData(), as: UTF8.self), updatedAt: 1)
        try local.write { try $0.visitors.save(record) }
        let shared = LocalHitsAndVisitors(hits: SQLiteHitQueue(store: local, capacity: 100, leaseDuration: 60, logger: log.logger),
                                          store: local)
        let caches = CacheService(manager: FSCacheManager(visitorLookupTimeOut: 0.05), store: database, shared: shared,
                                  logger: log.logger)
        // The local file's read connection, held by another thread's read.
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let held = DispatchGroup()
        DispatchQueue.global().async(group: held) {
            try? local.readBesideWrites { _ in
                holding.signal()
                _ = release.wait(timeout: .now() + 10)
            }
        }
        XCTAssertEqual(holding.wait(timeout: .now() + 5), .success, "the read did not start")

        XCTAssertEqual(caches.lookupVisitorBlocking("v1"), .timedOut)
        release.signal()
        held.wait()
        // Queued behind the cancelled lookup on the read connection's queue and the cache's.
        XCTAssertEqual(caches.lookupVisitorBlocking("v1"), .found(document))
        XCTAssertEqual(log.messages(at: .error), [])
        XCTAssertEqual(log.messages(at: .warning), ["A visitor cache lookup took longer than 50 ms: going on without it"])
    }

    func testTimeoutsThatCannotWorkFallBackToTheDefault() {
        let manager = FSCacheManager(visitorLookupTimeOut: -1, hitCacheLookupTimeout: .nan)
        XCTAssertEqual(manager.visitorLookupTimeOut, 0.2)
        XCTAssertEqual(manager.hitCacheLookupTimeout, 0.2)
    }
}
