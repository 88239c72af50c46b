import Foundation
import XCTest

import FlagshipStore

/// `Connection.visitorData(visitorId:)`: one visitor's rows from one snapshot, and `merge`, which
/// puts a fleet's shared rows beside an instance's own.
final class VisitorDataRecordsTests: StoreTestCase {
    private static func visitor(_ id: String, updatedAt: Int64, decidedAt: Int64) -> VisitorRecord {
        var record = VisitorRecord(visitorId: id, anonymousId: nil, consent: true, document: #"{"version":1,"at":\#(updatedAt)}"#,
                                   updatedAt: updatedAt)
        record.decisions = [DecisionRecord(visitorId: id, decidedAt: decidedAt, campaignId: "c", variationGroupId: "vg-\(decidedAt)",
                                           variationId: "v", source: .decisionAPI, reason: "STATIC", fileVersion: nil, context: "{}",
                                           flags: "{}")]
        return record
    }

    private static func hit(_ id: String, visitorId: String, createdAt: Int64) -> HitRecord {
        HitRecord(id: id, visitorId: visitorId, type: "EVENT", document: #"{"version":1}"#, createdAt: createdAt)
    }

    func testOneVisitorsRowsAndNoOneElses() throws {
        let store = try openStore()
        defer { store.close() }
        try store.write { db in
            try db.visitors.save([Self.visitor("alice", updatedAt: 10, decidedAt: 5), Self.visitor("bob", updatedAt: 11, decidedAt: 6)])
            try db.hits.insert([Self.hit("a2", visitorId: "alice", createdAt: 30), Self.hit("b1", visitorId: "bob", createdAt: 20),
                                Self.hit("a1", visitorId: "alice", createdAt: 10)])
        }

        let alice = try store.read { try $0.visitorData(visitorId: "alice") }
        let nobody = try store.read { try $0.visitorData(visitorId: "nobody") }

        XCTAssertEqual(alice.visitor?.document, #"{"version":1,"at":10}"#)
        XCTAssertEqual(alice.lastSeenAt, 10)
        XCTAssertEqual(alice.decisions.map(\.variationGroupId), ["vg-5"])
        XCTAssertEqual(alice.hits.map(\.id), ["a1", "a2"], "oldest first")
        XCTAssertEqual(alice.unreadableRows, 0)
        XCTAssertNil(nobody.visitor)
        XCTAssertEqual(nobody.decisions, [])
        XCTAssertEqual(nobody.hits, [])
    }

    func testAVisitorRowThatCannotBeReadIsCountedNotThrown() throws {
        let store = try openStore()
        defer { store.close() }
        try store.write { db in
            try db.visitors.save([Self.visitor("alice", updatedAt: 10, decidedAt: 5)])
            XCTAssertEqual(try db.execute("UPDATE visitors SET updated_at = 'yesterday' WHERE visitor_id = 'alice'"), 1)
        }

        let alice = try store.read { try $0.visitorData(visitorId: "alice") }

        XCTAssertNil(alice.visitor)
        XCTAssertEqual(alice.unreadableRows, 1)
        XCTAssertEqual(alice.decisions.count, 1, "the rest is read")
    }

    func testMergeKeepsTheNewerDocumentAndEveryRowOnce() {
        let shared = Self.visitor("alice", updatedAt: 20, decidedAt: 15)
        let local = Self.visitor("alice", updatedAt: 10, decidedAt: 5)
        var records = VisitorDataRecords(visitorId: "alice", visitor: local, lastSeenAt: 10, decisions: local.decisions,
                                         hits: [Self.hit("a1", visitorId: "alice", createdAt: 10)], unreadableRows: 1)

        records.merge(VisitorDataRecords(visitorId: "alice", visitor: shared, lastSeenAt: 25, decisions: shared.decisions + local.decisions,
                                          hits: [Self.hit("a0", visitorId: "alice", createdAt: 5), Self.hit("a1", visitorId: "alice", createdAt: 10)],
                                          unreadableRows: 2))

        XCTAssertEqual(records.visitor?.updatedAt, 20, "the newer document")
        XCTAssertEqual(records.lastSeenAt, 25)
        XCTAssertEqual(records.decisions.map(\.decidedAt), [5, 15], "each decision once, oldest first")
        XCTAssertEqual(records.hits.map(\.id), ["a0", "a1"], "each hit once, oldest first")
        XCTAssertEqual(records.unreadableRows, 3)

        var older = VisitorDataRecords(visitorId: "alice", visitor: shared, lastSeenAt: 25, decisions: [], hits: [], unreadableRows: 0)
        older.merge(VisitorDataRecords(visitorId: "alice", visitor: local, lastSeenAt: 10, decisions: [], hits: [], unreadableRows: 0))
        XCTAssertEqual(older.visitor?.updatedAt, 20, "an older document never replaces a newer one")
    }
}
