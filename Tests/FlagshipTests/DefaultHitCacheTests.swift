import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

final class DefaultHitCacheTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var database: FlagshipDatabase!
    private var log: LogCapture!
    private let clock = TestClock()

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        database = try FlagshipDatabase.open(at: directory.file("flagship-env.sqlite"))
        log = LogCapture()
    }

    override func tearDown() {
        database.close()
        directory.remove()
    }

    private func makeCache(hitLifetime: TimeInterval = 4 * 3600, maxHits: Int = 100_000) -> FSDefaultCacheHit {
        FSDefaultCacheHit(database: database, hitLifetime: hitLifetime, maxHits: maxHits, now: clock.function, logger: log.logger)
    }

    private var nowMs: Int64 { clock.now.unixMilliseconds }

    func testHitsRoundTripWithQueryableColumns() throws {
        let cache = makeCache()
        let hits: [String: [String: Any]] = [
            "v1:a": hitDictionary(visitorId: "v1", type: "EVENT", time: nowMs - 2),
            "v1:b": hitDictionary(visitorId: "v1", type: "SCREENVIEW", time: nowMs - 1,
                                  content: ["t": "SCREENVIEW", "vid": "v1", "dl": "home", "ds": "APP", "cid": "env"]),
            "v2:c": consentHitDictionary(visitorId: "v2", time: nowMs),
        ]
        cache.cacheHits(hits: hits)

        let found = cache.lookupHits()
        XCTAssertEqual(Set(found.keys), Set(hits.keys))
        for (id, dictionary) in hits {
            XCTAssertEqual(try canonicalJSON(try XCTUnwrap(found[id])), try canonicalJSON(dictionary), id)
        }
        let rows = try database.read { try $0.hits.page(limit: 10) }
        XCTAssertEqual(rows.map(\.id), ["v1:a", "v1:b", "v2:c"], "oldest first")
        XCTAssertEqual(rows.map(\.type), ["EVENT", "SCREENVIEW", "EVENT"])
        XCTAssertEqual(rows.map(\.isConsent), [false, false, true])
        XCTAssertEqual(rows.map(\.createdAt), [nowMs - 2, nowMs - 1, nowMs])
        XCTAssertEqual(log.entries, [])
    }

    func testFlushHitsKeepsNothingItWasAskedToRemove() throws {
        let cache = makeCache()
        var hits: [String: [String: Any]] = [:]
        for index in 0..<50 { hits["v1:\(index)"] = hitDictionary(time: nowMs + Int64(index)) }
        cache.cacheHits(hits: hits)

        let removed = (0..<50).filter { $0 % 3 == 0 }.map { "v1:\($0)" }
        cache.flushHits(hitIds: removed + ["v1:not-there"])

        let left = Set(cache.lookupHits().keys)
        XCTAssertTrue(left.isDisjoint(with: removed))
        XCTAssertEqual(left, Set(hits.keys).subtracting(removed))
    }

    func testFlushAllHitsEmptiesTheTableConsentHitsIncluded() throws {
        let cache = makeCache()
        cache.cacheHits(hits: ["v1:a": hitDictionary(time: nowMs), "v1:b": consentHitDictionary(visitorId: "v1", time: nowMs)])

        cache.flushAllHits()

        XCTAssertEqual(cache.lookupHits().count, 0)
        XCTAssertEqual(try database.read { try $0.hits.count() }, 0)
    }

    func testExpiryRemovesExactlyTheHitsPastTheLifetime() throws {
        let cache = makeCache(hitLifetime: 3600)
        let lifetimeMs: Int64 = 3_600_000
        cache.cacheHits(hits: [
            "v1:expired": hitDictionary(time: nowMs - lifetimeMs - 1),
            "v1:boundary": hitDictionary(time: nowMs - lifetimeMs),
            "v1:fresh": hitDictionary(time: nowMs - 10),
        ])

        XCTAssertEqual(Set(cache.lookupHits().keys), ["v1:boundary", "v1:fresh"])
        XCTAssertEqual(try database.read { try $0.hits.count() }, 2)
        XCTAssertEqual(log.messages(at: .warning), ["Deleted 1 unsent hit(s) older than 1 h"])

        clock.advance(by: 0.001)
        XCTAssertEqual(Set(cache.lookupHits().keys), ["v1:fresh"], "one millisecond later the boundary hit is past its lifetime")
    }

    func testTheCapEvictsTheOldestFirstAndSaysHowMany() throws {
        let cache = makeCache(maxHits: 5)
        var hits: [String: [String: Any]] = [:]
        for index in 0..<8 { hits["v1:\(index)"] = hitDictionary(time: nowMs - 100 + Int64(index)) }
        cache.cacheHits(hits: hits)

        XCTAssertEqual(Set(cache.lookupHits().keys), ["v1:3", "v1:4", "v1:5", "v1:6", "v1:7"])
        XCTAssertEqual(log.messages(at: .warning), ["Hit cache full (5 hits): evicted the 3 oldest unsent hit(s)"])
    }

    func testInvalidHitsAreRefusedAndTheValidOnesKept() throws {
        let cache = makeCache()
        var missingType = hitDictionary(time: nowMs)
        var data = missingType["data"] as! [String: Any]
        data["type"] = nil
        missingType["data"] = data

        cache.cacheHits(hits: ["v1:good": hitDictionary(time: nowMs), "v1:bad": missingType])

        XCTAssertEqual(Array(cache.lookupHits().keys), ["v1:good"])
        XCTAssertEqual(log.messages(at: .error), ["A hit was not cached: required field data.type is missing"])
    }

    func testARowEditedIntoTheWrongShapeIsSkippedAndKept() throws {
        let cache = makeCache()
        cache.cacheHits(hits: ["v1:good": hitDictionary(time: nowMs), "v1:edited": hitDictionary(time: nowMs + 1)])
        try database.database.write { connection in
            try connection.execute("UPDATE hits SET document = json_remove(document, '$.data.content') WHERE id = ?", ["v1:edited"])
        }

        XCTAssertEqual(Array(cache.lookupHits().keys), ["v1:good"])
        XCTAssertEqual(log.messages(at: .error), ["A cached hit was skipped: required field data.content is missing"])
        XCTAssertEqual(try database.read { try $0.hits.count() }, 2, "nothing is deleted for being unreadable")
    }

    func testPurgeKeepsOnlyTheVisitorsConsentHits() throws {
        let cache = makeCache()
        cache.cacheHits(hits: [
            "v1:event": hitDictionary(visitorId: "v1", time: nowMs),
            "v1:consent": consentHitDictionary(visitorId: "v1", time: nowMs),
            "v2:event": hitDictionary(visitorId: "v2", time: nowMs),
        ])

        XCTAssertEqual(try cache.purgeHits(visitorId: "v1"), 1)

        XCTAssertEqual(Set(cache.lookupHits().keys), ["v1:consent", "v2:event"])
    }
}
