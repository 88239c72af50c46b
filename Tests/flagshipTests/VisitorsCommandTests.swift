import FlagshipStore
import Foundation
import XCTest

final class VisitorsCommandTests: CommandTestCase {
    func testVisitorsJSONListsEveryVisitorMostRecentlyUpdatedFirstWithItsDocument() throws {
        try withStore(StoreFixture.populate)

        let result = try flagship("visitors", "--db", storeFile.path, "--json")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        let expected = """
            [{"visitorId": "v2", "anonymousId": "anon-2", "consent": true,
              "updatedAt": 1732170002500, "updatedAtUTC": "2024-11-21T06:20:02.500Z",
              "document": {"version": 1, "data": {"visitorId": "v2", "anonymousId": "anon-2", "consent": true,
                           "context": {}, "campaigns": [], "assignmentsHistory": {}}}},
             {"visitorId": "v1", "anonymousId": null, "consent": true,
              "updatedAt": 1732170001000, "updatedAtUTC": "2024-11-21T06:20:01.000Z",
              "document": {"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "consent": true,
                           "context": {"age": 32},
                           "campaigns": [{"campaignId": "c1", "variationGroupId": "vg1", "variationId": "var1",
                                          "isReference": false, "type": "ab", "slug": null, "activated": false,
                                          "flags": {"btnColor": "green"}}],
                           "assignmentsHistory": {"vg1": "var1"}}}}]
            """
        XCTAssertEqual(try canonicalJSON(try parseJSON(result.stdout)), try canonicalJSON(try parseJSON(expected)))
    }

    func testVisitorsTextShowsOneLinePerVisitorWithoutItsDocument() throws {
        try withStore(StoreFixture.populate)

        let result = try flagship("visitors", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, """
            VISITOR  ANONYMOUS ID  CONSENT  UPDATED (UTC)             CAMPAIGNS
            v2       anon-2        yes      2024-11-21T06:20:02.500Z  0
            v1       -             yes      2024-11-21T06:20:01.000Z  1

            """)
    }

    func testVisitorsOfAnEmptyStoreSaysSo() throws {
        try withStore { _ in }

        XCTAssertEqual(try flagship("visitors", "--db", storeFile.path).stdout, "no visitors\n")
        XCTAssertEqual(try canonicalJSON(try parseJSON(try flagship("visitors", "--db", storeFile.path, "--json").stdout)), "[]")
    }
}
