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

/// A custom hit cache over a dictionary, with a gate on lookups when asked.
private final class MemoryHitCache: FSHitCacheDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var hits: [String: [String: Any]] = [:]
    let gated: Bool
    let gate = DispatchSemaphore(value: 0)

    init(gated: Bool = false) {
        self.gated = gated
    }

    var ids: Set<String> {
        lock.lock()
        defer { lock.unlock() }
        return Set(hits.keys)
    }

    func cacheHits(hits newHits: [String: [String: Any]]) {
        lock.lock()
        hits.merge(newHits) { $1 }
        lock.unlock()
    }

    func lookupHits() -> [String: [String: Any]] {
        if gated { gate.wait() }
        lock.lock()
        defer { lock.unlock() }
        return hits
    }

    func flushHits(hitIds: [String]) {
        lock.lock()
        for id in hitIds { hits[id] = nil }
        lock.unlock()
    }

    func flushAllHits() {
        lock.lock()
        hits.removeAll()
        lock.unlock()
    }
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

    func testDefaultsAreTheSQLiteCaches() {
        let caches = service(FSCacheManager())
        XCTAssertTrue(caches.visitorCache is FSDefaultCacheVisitor)
        XCTAssertTrue(caches.hitCache is FSDefaultCacheHit)
        XCTAssertEqual(caches.visitorLookupTimeout, 0.2)
        XCTAssertEqual(caches.hitLookupTimeout, 0.2)
    }

    func testAVisitorWrittenIsFoundByTheNextLookup() async throws {
        let caches = service(FSCacheManager())
        let document = VisitorCacheDocument(visitorId: "v1", context: ["plan": .string("pro")])

        await caches.cacheVisitor(document)

        let lookup = await caches.lookupVisitor("v1")
        XCTAssertEqual(lookup, .found(document))
        let missing = await caches.lookupVisitor("v2")
        XCTAssertEqual(missing, .notFound)
    }

    func testASlowCustomVisitorCacheIsAbandonedOnTimeAndItsLateAnswerIgnored() async throws {
        let slow = GatedVisitorCache(answer: try VisitorCacheDocument(visitorId: "v1").jsonData())
        let caches = service(FSCacheManager(slow, nil, visitorLookupTimeOut: 0.05))

        let started = Date()
        let lookup = await caches.lookupVisitor("v1")
        let elapsed = Date().timeIntervalSince(started)

        XCTAssertEqual(lookup, .timedOut)
        XCTAssertGreaterThanOrEqual(elapsed, 0.05)
        XCTAssertLessThan(elapsed, 1.0, "abandoned on time, not when the cache answers")
        XCTAssertEqual(log.messages(at: .warning), ["Visitor cache lookup for 'v1' took longer than 50 ms: going on without it"])

        // Let the abandoned call finish: its answer goes nowhere, and the cache keeps working.
        slow.gate.signal()
        slow.answered.wait()
        slow.gate.signal()
        let next = await caches.lookupVisitor("v1")
        XCTAssertEqual(next, .found(VisitorCacheDocument(visitorId: "v1")))
    }

    func testASlowCustomHitCacheIsAbandonedOnTime() async {
        let slow = MemoryHitCache(gated: true)
        let caches = service(FSCacheManager(nil, slow, hitCacheLookupTimeout: 0.05))

        let lookup = await caches.lookupHits()

        XCTAssertEqual(lookup, .timedOut)
        slow.gate.signal()
    }

    func testADocumentOfAnotherVisitorIsRejectedAndLogged() async throws {
        let caches = service(FSCacheManager())
        // Written straight into the table, as a hand edit or another tool could.
        try database.visitors.save(VisitorRecord(visitorId: "v1", anonymousId: nil, consent: true,
                                                 document: #"{"version":1,"data":{"visitorId":"v9"}}"#, updatedAt: 0))

        let lookup = await caches.lookupVisitor("v1")

        XCTAssertEqual(lookup, .rejected(.wrongVisitor(expected: "v1", found: "v9")))
        XCTAssertEqual(log.messages(at: .error).count, 1)
    }

    func testHitsGoThroughTheCustomCacheInOrder() async throws {
        let custom = MemoryHitCache()
        let caches = service(FSCacheManager(nil, custom))
        let document = try HitCacheDocument(dictionary: hitDictionary(visitorId: "v1", time: 42))

        await caches.cacheHits(["v1:a": document, "v1:b": document])
        await caches.flushHits(["v1:a"])

        XCTAssertEqual(custom.ids, ["v1:b"])
        let lookup = await caches.lookupHits()
        XCTAssertEqual(lookup, .found(["v1:b": document]))
    }

    func testConsentWithdrawalKeepsOnlyConsentHitsInTheDefaultCache() async throws {
        let caches = service(FSCacheManager())
        try await assertConsentPurge(caches) { Set(try self.database.hits.page(limit: 100).map(\.id)) }
        XCTAssertNil(try database.visitors.visitor(id: "v1"))
    }

    func testConsentWithdrawalKeepsOnlyConsentHitsInACustomCache() async throws {
        let custom = MemoryHitCache()
        let caches = service(FSCacheManager(nil, custom))
        try await assertConsentPurge(caches) { custom.ids }
    }

    private func assertConsentPurge(_ caches: CacheService, ids: () throws -> Set<String>) async throws {
        await caches.cacheVisitor(VisitorCacheDocument(visitorId: "v1"))
        await caches.cacheHits([
            "v1:event": try HitCacheDocument(dictionary: hitDictionary(visitorId: "v1", time: Date().unixMilliseconds)),
            "v1:consent": try HitCacheDocument(dictionary: consentHitDictionary(visitorId: "v1", time: Date().unixMilliseconds)),
            "v2:event": try HitCacheDocument(dictionary: hitDictionary(visitorId: "v2", time: Date().unixMilliseconds)),
        ])

        await caches.purgeVisitor("v1")

        XCTAssertEqual(try ids(), ["v1:consent", "v2:event"])
        let lookup = await caches.lookupVisitor("v1")
        XCTAssertEqual(lookup, .notFound)
    }

    func testTimeoutsThatCannotWorkFallBackToTheDefault() {
        let manager = FSCacheManager(visitorLookupTimeOut: -1, hitCacheLookupTimeout: .nan)
        XCTAssertEqual(manager.visitorLookupTimeOut, 0.2)
        XCTAssertEqual(manager.hitCacheLookupTimeout, 0.2)
    }
}
