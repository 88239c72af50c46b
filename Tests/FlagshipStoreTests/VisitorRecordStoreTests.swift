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
}
