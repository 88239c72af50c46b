import Foundation
import XCTest

import FlagshipStore

/// What a salvage copies of each row: all of it, but the claim of a process that is gone.
final class SalvageRowsTests: StoreTestCase {
    private func hitRows(_ store: FlagshipDatabase) throws -> [String: [SQLiteValue]] {
        let rows = try store.read {
            try $0.query("SELECT id, attempts, next_attempt_at, file_version, decided_at, lease_owner, lease_until FROM hits")
        }
        return Dictionary(uniqueKeysWithValues: try rows.map { (try $0.text(0), Array($0.values.dropFirst())) })
    }

    /// A hit keeps its retry time and its decision's provenance, a visitor when it was last seen;
    /// a claim of the process that wrote the file is dropped (the hit is sent again), but a dead
    /// letter stays aside.
    func testASalvagedRowKeepsItsProvenanceRetryAndLastSeenButNoProcesssClaim() throws {
        let damaged = url("damaged.sqlite")
        let source = try openStore(at: damaged)
        var activate = HitRecord.sample("a1", type: "ACTIVATE")
        activate.fileVersion = String(repeating: "ab", count: 32)
        activate.decidedAt = 1_700_000_000_123
        try source.write { connection in
            _ = try connection.hits.insert([activate, .sample("e1"), .sample("e2"), .sample("e3")])
            try connection.hits.recordFailedAttempt(ids: ["visitor-1:e1"], nextAttemptAt: 1_800_000_000_000)
            try connection.hits.setAside(ids: ["visitor-1:e3"], reason: "edited by hand")
            try connection.visitors.save(.sample("v1", updatedAt: 1_000))
            // As a process that crashed left them: a claim, and a sighting written.
            try connection.execute("UPDATE hits SET lease_owner = 'process-1', lease_until = ? WHERE id IN ('visitor-1:e2', 'visitor-1:a1')",
                                   [.integer(fixedNowMilliseconds + 60_000)])
            try connection.execute("UPDATE visitors SET last_seen_at = 5000 WHERE visitor_id = 'v1'")
        }
        source.close()
        let store = try openStore()

        let salvage = try Salvage.copy(from: damaged, into: store.database, now: fixedNow)

        XCTAssertEqual(salvage.hitsCopied, 4)
        let rows = try hitRows(store)
        XCTAssertEqual(rows["visitor-1:a1"], [.integer(0), .null, .text(String(repeating: "ab", count: 32)), .integer(1_700_000_000_123), .null, .null])
        XCTAssertEqual(rows["visitor-1:e1"], [.integer(1), .integer(1_800_000_000_000), .null, .null, .null, .null])
        XCTAssertEqual(rows["visitor-1:e2"], [.integer(0), .null, .null, .null, .null, .null])
        XCTAssertEqual(rows["visitor-1:e3"], [.integer(0), .null, .null, .null, .text("dead letter: edited by hand"),
                                               .integer(HitRecordStore.deadLetterUntil)])
        XCTAssertEqual(try store.read { try $0.hits.deadLetterCount() }, 1)
        XCTAssertEqual(try store.read { try $0.scalar("SELECT last_seen_at FROM visitors WHERE visitor_id = 'v1'") }, .integer(5_000))
    }

    /// A file of the first schema has none of the later columns: its rows are copied with them empty.
    func testAFileOfTheFirstSchemaIsSalvagedWithTheLaterColumnsEmpty() throws {
        let damaged = url("old.sqlite")
        let old = try rawDatabase(at: damaged)
        XCTAssertEqual(try Migrator().migrate(old, upTo: 1).toVersion, 1)
        try old.write { connection in
            let hit = HitRecord.sample("e1")
            try connection.execute(
                "INSERT INTO hits (id, visitor_id, type, is_consent, document, created_at, attempts) VALUES (?, ?, ?, 0, ?, ?, 2)",
                [.text(hit.id), .text(hit.visitorId), .text(hit.type), .text(hit.document), .integer(hit.createdAt)])
            let visitor = VisitorRecord.sample("v1", updatedAt: 7_000)
            try connection.execute("INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at) VALUES (?, NULL, 1, ?, ?)",
                                   [.text(visitor.visitorId), .text(visitor.document), .integer(visitor.updatedAt)])
        }
        old.close()
        let store = try openStore()

        let salvage = try Salvage.copy(from: damaged, into: store.database, now: fixedNow)

        XCTAssertEqual(salvage.hitsCopied, 1)
        XCTAssertEqual(salvage.visitorsCopied, 1)
        XCTAssertEqual(try hitRows(store)["visitor-1:e1"], [.integer(2), .null, .null, .null, .null, .null])
        XCTAssertEqual(try store.read { try $0.scalar("SELECT coalesce(last_seen_at, updated_at) FROM visitors WHERE visitor_id = 'v1'") },
                       .integer(7_000))
    }

    /// Decisions are copied with their provenance; a compact row's shared variation and preset
    /// keys are mapped to the sound store's copies (their ids differ there), so it reads back
    /// whole. A row whose text is no longer JSON is refused (a compact visitor's too), the rest copied.
    func testDecisionsAreSalvagedAndReadBackWhole() throws {
        func entry(_ campaign: String, _ color: String) -> String {
            #"{"campaignId":"\#(campaign)","campaignName":"Checkout","flags":{"btnColor":"\#(color)"},"isReference":false,"slug":null,"type":"ab","variationGroupId":"vg1","variationGroupName":"All","variationId":"var1","variationName":"Green"}"#
        }
        func compact(_ visitorId: String, _ entry: String, preset: String) -> DecisionRecord {
            DecisionRecord(visitorId: visitorId, decidedAt: 5, campaignId: "c1", variationGroupId: "vg1", variationId: "var1",
                           source: .bucketingFile, reason: "SPLIT", fileVersion: String(repeating: "a", count: 64),
                           context: #"{"age":32,"sdk_osName":"linux"}"#, flags: nil,
                           shared: SharedDecisionParts(variation: entry, context: #"{"age":32}"#, preset: preset))
        }
        let damaged = url("damaged.sqlite")
        let source = try openStore(at: damaged)
        let plain = DecisionRecord(visitorId: "v2", decidedAt: 6, campaignId: "c2", variationGroupId: "vg2", variationId: "var2",
                                   source: .decisionAPI, reason: "TARGETING_MATCH", fileVersion: nil, context: #"{"plan":"pro"}"#, flags: #"{"k":1}"#)
        try source.write { try $0.decisions.insert([compact("v1", entry("c1", "green"), preset: #"{"sdk_osName":"linux"}"#), plain]) }
        let before = try source.read { connection in try ["v1", "v2"].map { try connection.decisions.decisions(visitorId: $0) } }
        XCTAssertEqual(before.map(\.count), [1, 1])
        source.close()
        // A row damaged into text that is not JSON, past the store's checks.
        let raw = try rawDatabase(at: damaged)
        try raw.write { connection in
            try connection.execute("PRAGMA ignore_check_constraints = ON")
            try connection.execute("INSERT INTO decisions (visitor_id, decided_at, source, assignments) VALUES ('v3', 7, 'unknown', '[[1,')")
            try connection.execute("INSERT INTO visitors (visitor_id, consent, document, updated_at) VALUES ('v3', 1, '{\"compact\":[', 7)")
        }
        raw.close()
        // The sound store has shared parts of its own: the copies get other ids.
        let store = try openStore()
        try store.write { try $0.decisions.insert([compact("here", entry("c0", "red"), preset: #"{"sdk_osName":"other"}"#)]) }

        let salvage = try Salvage.copy(from: damaged, into: store.database, now: fixedNow)

        XCTAssertEqual(salvage.decisionsCopied, 2)
        XCTAssertEqual(salvage.rowsRefused, 2, "the decision and the visitor whose text is not JSON")
        XCTAssertEqual(try store.read { connection in try ["v1", "v2"].map { try connection.decisions.decisions(visitorId: $0) } }, before)
        XCTAssertEqual(try store.read { try $0.decisions.decisions(visitorId: "v3") }, [])
    }
}
