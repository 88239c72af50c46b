import Foundation
import XCTest

import FlagshipStore

/// Consent withdrawn: a visitor's unsent hits go, but its consent hits stay, and so do the hits
/// accepted after the withdrawal that a group commit wrote before the deletion ran.
final class ConsentPurgeStoreTests: StoreTestCase {
    func testAVisitorsHitsGoButItsConsentHitsAndTheSparedIdsStay() throws {
        let store = try openStore()
        try store.write { try $0.hits.insert([
            .sample("before-1"), .sample("before-2"), .sample("consent", isConsent: true),
            .sample("after-1"), .sample("other", visitorId: "visitor-2"),
            .sample("with\u{0}nul"),
        ]) }

        let deleted = try store.write { try $0.hits.deleteHits(visitorId: "visitor-1", keepingConsentHits: true,
                                                keepingIds: ["visitor-1:after-1", "visitor-1:with\u{0}nul"]) }

        XCTAssertEqual(deleted, 2)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }.sorted(),
                       ["visitor-1:after-1", "visitor-1:consent", "visitor-1:with\u{0}nul", "visitor-2:other"])
        XCTAssertEqual(try store.read { try $0.hits.count() }, 4, "the kept count follows")
    }

    func testWithoutSparedIdsEveryNonConsentHitOfTheVisitorGoes() throws {
        let store = try openStore()
        try store.write { try $0.hits.insert([.sample("a"), .sample("b"), .sample("consent", isConsent: true)]) }

        XCTAssertEqual(try store.write { try $0.hits.deleteHits(visitorId: "visitor-1", keepingConsentHits: true) }, 2)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:consent"])
    }
}
