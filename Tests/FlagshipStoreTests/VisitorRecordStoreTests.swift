import Foundation
import XCTest

import FlagshipStore

final class VisitorRecordStoreTests: StoreTestCase {
    private var store: FlagshipDatabase!
    private var visitors: VisitorRecordStore { store.visitors }

    override func setUpWithError() throws {
        try super.setUpWithError()
        store = try openStore()
    }

    func testSavedVisitorIsReadBackExactly() throws {
        let anonymous = VisitorRecord.sample("visitor-1")
        let authenticated = VisitorRecord.sample("user-42", anonymousId: "anon-7", consent: false, updatedAt: 1_732_170_009_999)

        try visitors.save(anonymous)
        try visitors.save(authenticated)

        XCTAssertEqual(try visitors.visitor(id: "visitor-1"), anonymous)
        XCTAssertEqual(try visitors.visitor(id: "user-42"), authenticated)
    }

    func testVisitorNeverSavedIsNil() throws {
        try visitors.save(.sample("visitor-1"))

        XCTAssertNil(try visitors.visitor(id: "visitor-2"))
        XCTAssertNil(try visitors.visitor(id: "VISITOR-1"), "ids are case-sensitive")
    }

    func testSavingAnExistingVisitorReplacesEveryColumnOfItsRow() throws {
        try visitors.save(.sample("visitor-1", anonymousId: "anon-1", consent: true, updatedAt: 1))
        let replacement = VisitorRecord(
            visitorId: "visitor-1", anonymousId: nil, consent: false,
            document: visitorDocument(visitorId: "visitor-1", consent: false, context: ["plan": "pro"]), updatedAt: 2
        )

        try visitors.save(replacement)

        XCTAssertEqual(try visitors.count(), 1)
        XCTAssertEqual(try visitors.visitor(id: "visitor-1"), replacement)
    }

    func testDeleteRemovesTheVisitorAndSaysWhetherThereWasOne() throws {
        try visitors.save(.sample("visitor-1"))
        try visitors.save(.sample("visitor-2"))

        XCTAssertTrue(try visitors.delete(visitorId: "visitor-1"))
        XCTAssertFalse(try visitors.delete(visitorId: "visitor-1"))

        XCTAssertNil(try visitors.visitor(id: "visitor-1"))
        XCTAssertEqual(try visitors.visitors().map(\.visitorId), ["visitor-2"])
    }

    func testVisitorsAreListedMostRecentlyUpdatedFirstThenById() throws {
        try visitors.save(.sample("b", updatedAt: 100))
        try visitors.save(.sample("c", updatedAt: 300))
        try visitors.save(.sample("a", updatedAt: 100))
        try visitors.save(.sample("d", updatedAt: 200))

        XCTAssertEqual(try visitors.visitors().map(\.visitorId), ["c", "d", "a", "b"])
        XCTAssertEqual(try visitors.visitors(limit: 2), [.sample("c", updatedAt: 300), .sample("d", updatedAt: 200)])
    }

    func testCountCountsVisitors() throws {
        XCTAssertEqual(try visitors.count(), 0)

        try visitors.save(.sample("a"))
        try visitors.save(.sample("b"))
        try visitors.save(.sample("a"))

        XCTAssertEqual(try visitors.count(), 2)
    }

    func testDocumentThatIsNotJSONIsRejectedByTheCheckConstraint() throws {
        var record = VisitorRecord.sample("visitor-1")
        record.document = "visitor-1 likes green buttons"

        XCTAssertThrowsError(try visitors.save(record)) { error in
            XCTAssertEqual(sqliteError(error)?.extendedCode, 275) // SQLITE_CONSTRAINT_CHECK
        }
        XCTAssertEqual(try visitors.count(), 0)
    }

    func testStoredDocumentIsQueryableWithJSONFunctionsThroughTheReadableView() throws {
        try visitors.save(.sample("visitor-1", anonymousId: "anon-1", updatedAt: 1_732_170_000_123))

        let row = try store.database.read { try $0.query("SELECT * FROM visitors_readable").first?.values }

        XCTAssertEqual(row, ["visitor-1", "anon-1", 1, "2024-11-21 06:20:00", 1, #"{"plan":"free"}"#])
    }
}
