import Foundation
import XCTest

import FlagshipStore

/// Compact rows (schema version 5): what visitors share is stored once, and every read gives
/// the full document back.
final class SharedPartsTests: StoreTestCase {
    private var store: FlagshipDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        store = try openStore()
    }

    private static let green = #"{"campaignId":"c1","campaignName":"Checkout","flags":{"btnColor":"green","ratio":0.30000000000000004,"big":12345678901234567890,"none":null},"isReference":false,"slug":null,"type":"ab","variationGroupId":"vg1","variationGroupName":"All users","variationId":"var1","variationName":"Green"}"#
    private static let banner = #"{"campaignId":"c2","campaignName":"Banner","flags":{"text":"Hi \"you\""},"isReference":true,"slug":"banner","type":"perso","variationGroupId":"vg2","variationGroupName":"Pro","variationId":"var2","variationName":"Hello"}"#
    private static let preset = #"{"fs_version":"1.0","sdk_osName":"linux"}"#

    /// A visitor in both shapes: the full document and the same in parts.
    private func compactRecord(_ visitorId: String, activated: [Bool] = [false, true], age: Int = 32, updatedAt: Int64 = fixedNowMilliseconds) -> VisitorRecord {
        let green = Self.green.dropLast() + #","activated":\#(activated[0])}"#
        let banner = Self.banner.dropLast() + #","activated":\#(activated[1])}"#
        let full = #"{"data":{"anonymousId":null,"assignmentsHistory":{"vg1":"var1","vg2":"var2","vg9":"var9"},"campaigns":[\#(green),\#(banner)],"consent":true,"context":{"age":\#(age),"fs_version":"1.0","sdk_osName":"linux"},"visitorId":"\#(visitorId)"},"version":1}"#
        let parts = CompactVisitorDocument(variations: [Self.green, Self.banner], activated: activated, context: #"{"age":\#(age)}"#,
                                           preset: Self.preset, assignmentsHistory: #"{"vg1":"var1","vg2":"var2","vg9":"var9"}"#)
        return VisitorRecord(visitorId: visitorId, anonymousId: nil, consent: true, document: full, updatedAt: updatedAt, compact: parts)
    }

    private func object(_ text: String) throws -> NSDictionary {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary, text)
    }

    private func rawDocument(_ visitorId: String) throws -> String? {
        try store.read { try $0.scalar("SELECT document FROM visitors WHERE visitor_id = ?", [.text(visitorId)])?.text }
    }

    func testACompactRowIsReadBackAsTheFullDocumentNumbersAndOrderIncluded() throws {
        let record = compactRecord("v1")
        try store.write { try $0.visitors.save(record) }

        let raw = try XCTUnwrap(try rawDocument("v1"))
        XCTAssertTrue(raw.hasPrefix(#"{"compact":1,"#), raw)
        XCTAssertFalse(raw.contains("Checkout"), "the variation is stored once, apart: \(raw)")
        let read = try XCTUnwrap(try store.read { try $0.visitors.visitor(id: "v1") })
        XCTAssertEqual(try object(read.document), try object(record.document))
        // Numbers come back as they were written, digit for digit.
        XCTAssertTrue(read.document.contains("0.30000000000000004") && read.document.contains("12345678901234567890"), read.document)
        XCTAssertTrue(read.document.contains(#""none":null"#), "a null flag value stays: \(read.document)")
        let campaigns = try XCTUnwrap(try object(read.document)["data"] as? NSDictionary)["campaigns"] as? [NSDictionary]
        XCTAssertEqual(campaigns?.map { $0["campaignId"] as? String }, ["c1", "c2"], "campaigns keep their order")
        XCTAssertEqual(campaigns?.map { $0["activated"] as? Bool }, [false, true])
        XCTAssertEqual(try store.read { try $0.visitorAndLastSeen("v1") }, read.document)
    }

    func testVisitorsInTheSameVariationShareOneRowOfIt() throws {
        try store.write { try $0.visitors.save((1...50).map { compactRecord("v\($0)", age: $0) }) }
        try store.write { try $0.visitors.save(compactRecord("v51", activated: [true, true])) }

        let counts = try store.read { try $0.sharedParts.counts() }
        XCTAssertEqual(counts.variations, 2)
        XCTAssertEqual(counts.contexts, 1)
        XCTAssertEqual(try store.read { try $0.visitors.visitors() }.count, 51)
        XCTAssertEqual(try object(try XCTUnwrap(try store.read { try $0.visitors.visitor(id: "v17") }).document),
                       try object(compactRecord("v17", age: 17).document))
    }

    func testFullAndCompactRowsLiveSideBySideAndTheReadableViewsShowBoth() throws {
        try store.write { try $0.visitors.save([.sample("old"), compactRecord("new")]) }

        XCTAssertEqual(try store.read { try $0.visitors.visitor(id: "old") }, .sample("old"), "a full row is read as written")
        let rows = try store.read { try $0.query("SELECT visitor_id, campaigns, context FROM visitors_readable ORDER BY visitor_id") }
        XCTAssertEqual(rows.map { $0[0].text }, ["new", "old"])
        XCTAssertEqual(rows.map { $0[1].int64 }, [2, 1])
        XCTAssertEqual(try object(try XCTUnwrap(rows[0][2].text)), try object(#"{"age":32,"fs_version":"1.0","sdk_osName":"linux"}"#))
    }

    func testCompactDecisionsAreReadBackWhole() throws {
        func decision(_ campaign: String, _ group: String, _ variation: String, _ entry: String, reason: String) -> DecisionRecord {
            DecisionRecord(visitorId: "v1", decidedAt: 5, campaignId: campaign, variationGroupId: group, variationId: variation,
                           source: .bucketingFile, reason: reason, fileVersion: String(repeating: "a", count: 64),
                           context: #"{"age":32,"fs_version":"1.0","sdk_osName":"linux"}"#, flags: nil,
                           shared: SharedDecisionParts(variation: entry, context: #"{"age":32}"#, preset: Self.preset))
        }
        let written = [decision("c1", "vg1", "var1", Self.green, reason: "SPLIT"), decision("c2", "vg2", "var2", Self.banner, reason: "TARGETING_MATCH")]
        try store.write { try $0.decisions.insert(written) }

        let raw = try XCTUnwrap(try store.read { try $0.scalar("SELECT assignments FROM decisions")?.text })
        XCTAssertTrue(raw.hasPrefix("[["), raw)
        let read = try store.read { try $0.decisions.decisions(visitorId: "v1") }
        XCTAssertEqual(read.map(\.variationId), ["var1", "var2"])
        XCTAssertEqual(read.map(\.campaignId), ["c1", "c2"])
        XCTAssertEqual(read.map(\.reason), ["SPLIT", "TARGETING_MATCH"])
        XCTAssertEqual(try read.map { try object(try XCTUnwrap($0.context)) }, Array(repeating: try object(written[0].context!), count: 2))
        XCTAssertEqual(try object(try XCTUnwrap(read[1].flags)), try object(#"{"text":"Hi \"you\""}"#))
        let readable = try store.read { try $0.query("SELECT variation_id, reason, flags FROM decisions_readable ORDER BY variation_id") }
        XCTAssertEqual(readable.map { $0[2].text }, ["btnColor,ratio,big,none", "text"])
        XCTAssertEqual(readable.map { $0[1].text }, ["SPLIT", "TARGETING_MATCH"])
    }

    func testCollectingDeletesWhatNoRowRefersToAndAnotherConnectionWritesItAgain() throws {
        let other = try openStore()
        try store.write { try $0.visitors.save([compactRecord("v1"), compactRecord("v2")]) }
        // `other` caches the shared ids by writing a visitor of its own.
        try other.write { try $0.visitors.save(compactRecord("v3")) }
        try store.write { connection in
            for id in ["v1", "v2", "v3"] { try connection.visitors.delete(visitorId: id) }
        }

        XCTAssertEqual(try store.write { try $0.sharedParts.collect(now: fixedNowMilliseconds) }, 3, "two variations and a context")
        XCTAssertEqual(try store.read { try $0.sharedParts.counts() }.variations, 0)
        // The other connection's cached ids are stale now: it must write the parts again.
        try other.write { try $0.visitors.save(compactRecord("v4")) }
        XCTAssertEqual(try object(try XCTUnwrap(try store.read { try $0.visitors.visitor(id: "v4") }).document),
                       try object(compactRecord("v4").document))
        XCTAssertEqual(try store.read { try $0.sharedParts.counts() }.variations, 2)
    }

    func testCollectingKeepsWhatAVisitorOrADecisionStillRefersTo() throws {
        try store.write { try $0.visitors.save(compactRecord("kept")) }
        let onlyInDecisions = #"{"campaignId":"c3","campaignName":"Old","flags":{},"isReference":false,"slug":null,"type":"ab","variationGroupId":"vg3","variationGroupName":"All","variationId":"var3","variationName":"Old"}"#
        try store.write {
            try $0.decisions.insert([DecisionRecord(
                visitorId: "gone", decidedAt: 1, campaignId: "c3", variationGroupId: "vg3", variationId: "var3", source: .bucketingFile,
                reason: "SPLIT", fileVersion: nil, context: "{}", flags: "{}",
                shared: SharedDecisionParts(variation: onlyInDecisions, context: "{}", preset: nil))])
        }

        XCTAssertEqual(try store.write { try $0.sharedParts.collect(now: fixedNowMilliseconds) }, 0)
        XCTAssertEqual(try store.read { try $0.sharedParts.counts() }.variations, 3)
        try store.write { _ = try $0.decisions.delete(visitorId: "gone") }
        XCTAssertEqual(try store.write { try $0.sharedParts.collect(now: fixedNowMilliseconds) }, 1)
        XCTAssertEqual(try object(try XCTUnwrap(try store.read { try $0.visitors.visitor(id: "kept") }).document),
                       try object(compactRecord("kept").document))
    }

    func testACollectionIsDueOnlyPastTwiceTheRowsInUseAtTheLastOne() throws {
        try store.write { try $0.visitors.save(compactRecord("v1")) }
        XCTAssertTrue(try store.read { try $0.sharedParts.collectionDue(floor: 2) }, "3 rows, none collected yet: over the floor of 2")
        XCTAssertFalse(try store.read { try $0.sharedParts.collectionDue(floor: 3) }, "not over a floor of 3")
        _ = try store.write { try $0.sharedParts.collect(now: fixedNowMilliseconds) }
        XCTAssertFalse(try store.read { try $0.sharedParts.collectionDue(floor: 2) }, "3 rows in use: due past 6")
    }

    func testAPruneCollectsOnceTheSharedRowsOutgrowTheirBound() async throws {
        // 1,200 distinct variations, one per visitor, all seen long ago.
        let records = (0..<1_200).map { index -> VisitorRecord in
            let entry = #"{"campaignId":"c\#(index)","flags":{},"variationGroupId":"vg\#(index)","variationId":"var\#(index)"}"#
            return VisitorRecord(visitorId: "v\(index)", anonymousId: nil, consent: true, document: visitorDocument(visitorId: "v\(index)"),
                                 updatedAt: 1, compact: CompactVisitorDocument(variations: [entry], activated: [false], context: "{}",
                                                                                preset: nil, assignmentsHistory: "{}"))
        }
        try await store.write { try $0.visitors.save(records) }
        let before = try await store.read { try $0.sharedParts.counts() }
        XCTAssertEqual(before.variations, 1_200)

        let prune = try await store.pruneVisitors(notSeenSince: 2, keepingAtMost: nil)

        XCTAssertEqual(prune.expired, 1_200)
        XCTAssertEqual(prune.sharedPartsDeleted, 1_200)
        let after = try await store.read { try $0.sharedParts.counts() }
        XCTAssertEqual(after.variations, 0)
    }

    func testASalvageCopiesCompactRowsWhole() throws {
        let damaged = url("damaged.sqlite")
        let source = try openStore(at: damaged)
        try source.write { try $0.visitors.save([compactRecord("v1"), .sample("v2")]) }
        source.close()
        // The receiving store has shared rows of its own: the copies get other ids.
        let other = #"{"campaignId":"c0","flags":{},"variationGroupId":"vg0","variationId":"var0"}"#
        try store.write {
            try $0.visitors.save(VisitorRecord(visitorId: "here", anonymousId: nil, consent: true, document: visitorDocument(visitorId: "here"),
                                               updatedAt: 1, compact: CompactVisitorDocument(variations: [other], activated: [false], context: "{}",
                                                                                              preset: #"{"sdk_x":1}"#, assignmentsHistory: "{}")))
        }

        let salvage = try Salvage.copy(from: damaged, into: store.database, now: fixedNow)

        XCTAssertEqual(salvage.visitorsCopied, 2)
        XCTAssertEqual(try store.read { try $0.sharedParts.counts() }.variations, 3)
        XCTAssertEqual(try object(try XCTUnwrap(try store.read { try $0.visitors.visitor(id: "v1") }).document),
                       try object(compactRecord("v1").document))
        XCTAssertEqual(try store.read { try $0.visitors.visitor(id: "v2") }, .sample("v2"))
    }
}

private extension Connection {
    /// The document `visitorAndLastSeen` reads.
    func visitorAndLastSeen(_ id: String) throws -> String? {
        try visitors.visitorAndLastSeen(id: id)?.record.document
    }
}
