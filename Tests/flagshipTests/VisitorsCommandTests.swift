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

    /// Each document is read as the SDK reads it: what the SDK would ignore shows `?` and a
    /// warning saying why, and the listing goes on.
    func testAVisitorDocumentTheSDKWouldIgnoreIsListedWithAWarningSayingWhy() throws {
        try withStore { store in
            try StoreFixture.populate(store)
            for (index, (visitorId, document)) in [
                ("v3", #"{"version": 2, "data": {"visitorId": "v3", "campaigns": []}}"#),
                ("v4", #"{"version": 1, "data": {"visitorId": "v1", "campaigns": []}}"#),
                ("v5", #"{"version": 1, "data": {"visitorId": "v5", "campaigns": [{"campaignId": "c1", "variationId": "var1"}]}}"#),
            ].enumerated() {
                try store.write { try $0.visitors.save(VisitorRecord(visitorId: visitorId, anonymousId: nil, consent: true, document: document,
                                                      updatedAt: 1_732_170_003_000 + Int64(index) * 1_000)) }
            }
        }

        let result = try flagship("visitors", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, """
            VISITOR  ANONYMOUS ID  CONSENT  UPDATED (UTC)             CAMPAIGNS
            v5       -             yes      2024-11-21T06:20:05.000Z  ?
            v4       -             yes      2024-11-21T06:20:04.000Z  ?
            v3       -             yes      2024-11-21T06:20:03.000Z  ?
            v2       anon-2        yes      2024-11-21T06:20:02.500Z  0
            v1       -             yes      2024-11-21T06:20:01.000Z  1

            """)
        XCTAssertEqual(result.stderr, """
            warning: visitor 'v5': the visitor cache document is invalid: missing data.campaigns[0].variationGroupId; the SDK ignores it
            warning: visitor 'v4': its cached document belongs to visitor 'v1'; the SDK ignores it
            warning: visitor 'v3': the visitor cache document has version 2; only version 1 is read; the SDK ignores it

            """)
    }

    func testVisitorsOfAnEmptyStoreSaysSo() throws {
        try withStore { _ in }

        XCTAssertEqual(try flagship("visitors", "--db", storeFile.path).stdout, "no visitors\n")
        XCTAssertEqual(try canonicalJSON(try parseJSON(try flagship("visitors", "--db", storeFile.path, "--json").stdout)), "[]")
    }
}
