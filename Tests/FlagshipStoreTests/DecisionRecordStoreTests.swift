import FlagshipStore
import Foundation
import XCTest

/// `decisions` and `bucketing_files`: a fetch's assignments share a row and come back one by one,
/// hostile text round-trips, a hand-edited row is a typed error, old versions go beyond the limit.
final class DecisionRecordStoreTests: StoreTestCase {
    private func decision(_ visitor: String, at time: Int64, group: String, variation: String = "v",
                          context: String? = #"{"plan":"pro"}"#) -> DecisionRecord {
        DecisionRecord(visitorId: visitor, decidedAt: time, campaignId: "c-" + group, variationGroupId: group, variationId: variation,
                       source: .bucketingFile, reason: "SPLIT", fileVersion: String(repeating: "a", count: 64), context: context,
                       flags: #"{"k":1}"#)
    }

    func testAFetchsAssignmentsShareARowAndComeBackInOrder() throws {
        let store = try openStore()
        let records = [decision("alice", at: 1, group: "g1"), decision("alice", at: 1, group: "g2"),
                       decision("alice", at: 2, group: "g3"), decision("bob", at: 2, group: "g1")]

        try store.write { try $0.decisions.insert(records) }

        XCTAssertEqual(try store.database.integer("SELECT count(*) FROM decisions"), 3, "one row per fetch")
        XCTAssertEqual(try store.read { try $0.decisions.decisions(visitorId: "alice") }, Array(records.prefix(3)))
        XCTAssertEqual(try store.read { try $0.decisions.page(after: 0, limit: 10).decisions.map(\.record) }, records)
        XCTAssertEqual(try store.read { try $0.decisions.count() }, 4)
        XCTAssertEqual(try store.database.integer("SELECT count(*) FROM decisions_readable"), 4, "one line per assignment")
    }

    func testHostileIdsAndContextsRoundTripUnchanged() throws {
        let store = try openStore()
        let hostile = ["quote \" backslash \\ slash /", "line\nbreak\ttab\r", "control \u{01}\u{1F}", "émoji 🧪 \u{2028}", ""]
        let records = hostile.enumerated().map { index, text in
            DecisionRecord(visitorId: text, decidedAt: Int64(index), campaignId: text, variationGroupId: text, variationId: text,
                           source: .decisionAPI, reason: "TARGETING_MATCH", fileVersion: nil, context: nil, flags: nil)
        }

        try store.write { try $0.decisions.insert(records) }

        XCTAssertEqual(try store.read { try $0.decisions.page(after: 0, limit: 10).decisions.map(\.record) }, records)
    }

    func testAHandEditedRowIsATypedErrorNamingTheColumn() throws {
        let store = try openStore()
        try store.write { db in
            _ = try db.execute("INSERT INTO decisions (visitor_id, decided_at, source, assignments) VALUES ('v', 1, 'unknown', '[1, 2]')")
        }

        var unreadable: [UnreadableDecision] = []
        XCTAssertEqual(try store.read { try $0.decisions.decisions(visitorId: "v", unreadable: &unreadable) }, [])
        XCTAssertEqual(unreadable.map(\.rowId), [1])
        XCTAssertEqual(unreadable.first?.reason,
                       "\(StoreError.unexpectedValue(column: "decisions.assignments", found: "not a JSON array of objects"))")
        XCTAssertThrowsError(try store.write { db in
            _ = try db.execute("INSERT INTO decisions (visitor_id, decided_at, source, assignments) VALUES ('v', 1, 'unknown', '{}')")
        }, "the column holds an array, checked by the schema")
    }

    /// Rows only a hand edit or a damaged page makes (the schema's checks bypassed): JSON cut
    /// short, in the whole shape and the compact one, which fails the view's whole statement, and
    /// a source no version knows. Each is named and skipped; the rows around them are read.
    func testRowsThatCannotBeReadAreSkippedNamedAndCountedAndTheRowsAroundThemAreRead() throws {
        let store = try openStore()
        let good = [decision("alice", at: 1, group: "g1"), decision("bob", at: 5, group: "g1"), decision("carol", at: 9, group: "g1")]
        try store.write { try $0.decisions.insert([good[0]]) }
        try store.database.withConnection { connection in
            try connection.query("PRAGMA ignore_check_constraints = ON")
            _ = try connection.execute("INSERT INTO decisions (visitor_id, decided_at, source, assignments) VALUES ('alice', 2, 'unknown', '[{\"variationGroupId\":\"g')")
            _ = try connection.execute("INSERT INTO decisions (visitor_id, decided_at, source, assignments) VALUES ('bob', 3, 'unknown', '[[1,\"SPLIT\"],[2,')")
            _ = try connection.execute("INSERT INTO decisions (visitor_id, decided_at, source, assignments) VALUES ('bob', 4, 'elsewhere', '[]')")
            try connection.query("PRAGMA ignore_check_constraints = OFF")
        }
        try store.write { try $0.decisions.insert(Array(good.dropFirst())) }

        // The whole table in pages of two: every readable decision once, every other row named once.
        var decisions: [DecisionRecord] = []
        var unreadable: [UnreadableDecision] = []
        var after: Int64 = 0
        while true {
            let page = try store.read { try $0.decisions.page(after: after, limit: 2) }
            guard let last = page.lastRowId else { break }
            decisions += page.decisions.map(\.record)
            unreadable += page.unreadable
            after = last
        }
        XCTAssertEqual(decisions, good)
        XCTAssertEqual(unreadable.map(\.rowId), [2, 3, 4])
        XCTAssertTrue(unreadable[0].reason.contains("decisions.assignments"), unreadable[0].reason)
        XCTAssertTrue(unreadable[1].reason.lowercased().contains("json"), unreadable[1].reason)
        XCTAssertTrue(unreadable[2].reason.contains("elsewhere"), unreadable[2].reason)

        var bobsUnreadable: [UnreadableDecision] = []
        XCTAssertEqual(try store.read { try $0.decisions.decisions(visitorId: "bob", unreadable: &bobsUnreadable) }, [good[1]])
        XCTAssertEqual(bobsUnreadable.map(\.rowId), [3, 4])
        XCTAssertEqual(try store.read { try $0.decisions.count() }, 3, "the readable rows' assignments")
        XCTAssertEqual(try store.read { try $0.decisions.unreadableCount() }, 2, "the rows whose assignments is not a JSON array")
        XCTAssertEqual(try store.read { try StoreSummary(of: store, in: $0) }.unreadableDecisionRows, 2)
    }

    func testDeletingAVisitorDeletesItsDecisions() throws {
        let store = try openStore()
        try store.write { db in
            try db.visitors.save([VisitorRecord.sample("alice")])
            try db.decisions.insert([decision("alice", at: 1, group: "g1"), decision("bob", at: 1, group: "g1")])
        }

        try store.write { try $0.visitors.delete(visitorId: "alice") }

        XCTAssertEqual(try store.read { try $0.decisions.page(after: 0, limit: 10).decisions.map(\.record.visitorId) }, ["bob"])
    }

    func testTheNewestVersionsByLastUseAreKeptAndAPrefixFindsOne() throws {
        let store = try openStore()
        func use(_ digit: Character, at time: Int64) throws {
            try store.write { db in
                _ = try db.bucketingFiles.use(BucketingFileVersion(version: String(repeating: digit, count: 64), envId: "env", document: "{}",
                                                                   origin: .download, firstUsedAt: time, lastUsedAt: time), keeping: 2)
            }
        }
        try use("1", at: 1)
        try use("2", at: 2)
        try use("1", at: 3)   // used again: now the newest
        try use("3", at: 4)

        let kept = try store.read { try $0.bucketingFiles.versions() }
        XCTAssertEqual(kept.map { $0.version.prefix(1) }, ["3", "1"])
        XCTAssertEqual(kept.last?.firstUsedAt, 1, "a version used again keeps its first use")
        XCTAssertEqual(try store.read { try $0.bucketingFiles.file(version: "3333") }?.version.prefix(1), "3")
        XCTAssertNil(try store.read { try $0.bucketingFiles.file(version: "333") }, "fewer than 4 digits")
        XCTAssertNil(try store.read { try $0.bucketingFiles.file(version: "2222") }, "no longer kept")
    }
}
