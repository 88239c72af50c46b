import Foundation
import XCTest

import FlagshipStore

final class VisitorRecordStoreTests: StoreTestCase {
    private var store: FlagshipDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        store = try openStore()
    }

    func testSavedVisitorIsReadBackExactly() throws {
        let anonymous = VisitorRecord.sample("visitor-1")
        let authenticated = VisitorRecord.sample("user-42", anonymousId: "anon-7", consent: false, updatedAt: 1_732_170_009_999)

        try store.write { try $0.visitors.save(anonymous) }
        try store.write { try $0.visitors.save(authenticated) }

        XCTAssertEqual(try store.read { try $0.visitors.visitor(id: "visitor-1") }, anonymous)
        XCTAssertEqual(try store.read { try $0.visitors.visitor(id: "user-42") }, authenticated)
    }

    func testVisitorNeverSavedIsNil() throws {
        try store.write { try $0.visitors.save(.sample("visitor-1")) }

        XCTAssertNil(try store.read { try $0.visitors.visitor(id: "visitor-2") })
        XCTAssertNil(try store.read { try $0.visitors.visitor(id: "VISITOR-1") }, "ids are case-sensitive")
    }

    func testSavingAnExistingVisitorReplacesEveryColumnOfItsRow() throws {
        try store.write { try $0.visitors.save(.sample("visitor-1", anonymousId: "anon-1", consent: true, updatedAt: 1)) }
        let replacement = VisitorRecord(
            visitorId: "visitor-1", anonymousId: nil, consent: false,
            document: visitorDocument(visitorId: "visitor-1", consent: false, context: ["plan": "pro"]), updatedAt: 2
        )

        try store.write { try $0.visitors.save(replacement) }

        XCTAssertEqual(try store.read { try $0.visitors.count() }, 1)
        XCTAssertEqual(try store.read { try $0.visitors.visitor(id: "visitor-1") }, replacement)
    }

    func testDeleteRemovesTheVisitorAndSaysWhetherThereWasOne() throws {
        try store.write { try $0.visitors.save(.sample("visitor-1")) }
        try store.write { try $0.visitors.save(.sample("visitor-2")) }

        XCTAssertTrue(try store.write { try $0.visitors.delete(visitorId: "visitor-1") })
        XCTAssertFalse(try store.write { try $0.visitors.delete(visitorId: "visitor-1") })

        XCTAssertNil(try store.read { try $0.visitors.visitor(id: "visitor-1") })
        XCTAssertEqual(try store.read { try $0.visitors.visitors() }.map(\.visitorId), ["visitor-2"])
    }

    func testVisitorsAreListedMostRecentlyUpdatedFirstThenById() throws {
        try store.write { try $0.visitors.save(.sample("b", updatedAt: 100)) }
        try store.write { try $0.visitors.save(.sample("c", updatedAt: 300)) }
        try store.write { try $0.visitors.save(.sample("a", updatedAt: 100)) }
        try store.write { try $0.visitors.save(.sample("d", updatedAt: 200)) }

        XCTAssertEqual(try store.read { try $0.visitors.visitors() }.map(\.visitorId), ["c", "d", "a", "b"])
        XCTAssertEqual(try store.read { try $0.visitors.visitors(limit: 2) }, [.sample("c", updatedAt: 300), .sample("d", updatedAt: 200)])
    }

    func testCountCountsVisitors() throws {
        XCTAssertEqual(try store.read { try $0.visitors.count() }, 0)

        try store.write { try $0.visitors.save(.sample("a")) }
        try store.write { try $0.visitors.save(.sample("b")) }
        try store.write { try $0.visitors.save(.sample("a")) }

        XCTAssertEqual(try store.read { try $0.visitors.count() }, 2)
    }

    func testDocumentThatIsNotJSONIsRejectedByTheCheckConstraint() throws {
        var record = VisitorRecord.sample("visitor-1")
        record.document = "visitor-1 likes green buttons"

        XCTAssertThrowsError(try store.write { try $0.visitors.save(record) }) { error in
            XCTAssertEqual(sqliteError(error)?.extendedCode, 275) // SQLITE_CONSTRAINT_CHECK
        }
        XCTAssertEqual(try store.read { try $0.visitors.count() }, 0)
    }

    func testStoredDocumentIsQueryableWithJSONFunctionsThroughTheReadableView() throws {
        try store.write { try $0.visitors.save(.sample("visitor-1", anonymousId: "anon-1", updatedAt: 1_732_170_000_123)) }

        let row = try store.database.read { try $0.query("SELECT * FROM visitors_readable").first?.values }

        XCTAssertEqual(row, ["visitor-1", "anon-1", 1, "2024-11-21 06:20:00", "2024-11-21 06:20:00", 1, #"{"plan":"free"}"#])
    }

    func testTheKeptVisitorCountFollowsInsertsUpdatesDeletesAndPrunes() throws {
        let store = try openStore()
        func counts() throws -> (kept: Int, counted: Int) {
            try store.read { (try $0.visitors.count(), try $0.visitors.countRows()) }
        }
        try store.write { try $0.visitors.save(["a", "b", "c", "d"].map { VisitorRecord.sample($0) }) }
        XCTAssertEqual(try counts().kept, 4)
        try store.write { try $0.visitors.save(.sample("a", updatedAt: 1_732_170_009_999)) }
        XCTAssertEqual(try counts().kept, 4, "saved again: an update, not a visitor more")
        XCTAssertTrue(try store.write { try $0.visitors.delete(visitorId: "b") })
        XCTAssertEqual(try counts().kept, 3)
        let pruned = try store.write { try $0.visitors.deleteNotSeen(since: .max, limit: 2) }
        XCTAssertEqual(pruned.visitors, 2)
        let after = try counts()
        XCTAssertEqual(after.kept, 1)
        XCTAssertEqual(after.kept, after.counted)
        // A write around the triggers (`INSERT OR REPLACE` deletes without firing them) shows.
        try store.write { try $0.execute("INSERT OR REPLACE INTO visitors (visitor_id, consent, document, updated_at) SELECT visitor_id, consent, document, updated_at FROM visitors") }
        XCTAssertEqual(try counts().counted, 1)
        XCTAssertEqual(try counts().kept, 2, "what --full shows beside the count")
    }

    func testAStoreMigratedToVersion7CountsItsVisitorsOnce() throws {
        let file = url("version-6.sqlite")
        let database = try rawDatabase(at: file)
        _ = try Migrator().migrate(database, upTo: 6, now: { fixedNow })
        try database.write { try $0.visitors.save(["a", "b", "c"].map { VisitorRecord.sample($0) }) }
        XCTAssertFalse(try database.read { try $0.tableExists("visitors_total") })
        XCTAssertEqual(try database.read { try $0.visitors.count() }, 3, "version 6: counted")
        database.close()

        let after = try openStore(at: file)
        XCTAssertEqual(after.schemaVersion, Migrator().latestVersion)
        XCTAssertEqual(try after.read { try $0.scalar("SELECT total FROM visitors_total")?.int64 }, 3)
    }

    func testTheDueCountStopsWhereItIsAskedTo() throws {
        try store.write { try $0.visitors.save((0..<5).map { VisitorRecord.sample("old-\($0)", updatedAt: 1_000 + Int64($0)) }) }
        XCTAssertEqual(try store.read { try $0.visitors.countNotSeen(since: 10_000) }, 5)
        XCTAssertEqual(try store.read { try $0.visitors.countNotSeen(since: 10_000, atMost: 3) }, 3)
        XCTAssertEqual(try store.read { try $0.visitors.countNotSeen(since: 1_002, atMost: 3) }, 2)
    }
}
