import FlagshipStore
import Foundation
import XCTest

final class VisitorsCommandTests: CommandTestCase {
    func testVisitorsJSONListsEveryVisitorMostRecentlySeenFirstWithItsDocument() throws {
        try withStore(StoreFixture.populate)

        let result = try flagship("visitors", "--db", storeFile.path, "--json")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        let expected = """
            [{"visitorId": "v2", "anonymousId": "anon-2", "consent": true,
              "lastSeenAt": 1732170002500, "lastSeenAtUTC": "2024-11-21T06:20:02.500Z",
              "updatedAt": 1732170002500, "updatedAtUTC": "2024-11-21T06:20:02.500Z",
              "document": {"version": 1, "data": {"visitorId": "v2", "anonymousId": "anon-2", "consent": true,
                           "context": {}, "campaigns": [], "assignmentsHistory": {}}}},
             {"visitorId": "v1", "anonymousId": null, "consent": true,
              "lastSeenAt": 1732170001000, "lastSeenAtUTC": "2024-11-21T06:20:01.000Z",
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
            VISITOR  ANONYMOUS ID  CONSENT  SEEN (UTC)                UPDATED (UTC)             CAMPAIGNS
            v2       anon-2        yes      2024-11-21T06:20:02.500Z  2024-11-21T06:20:02.500Z  0
            v1       -             yes      2024-11-21T06:20:01.000Z  2024-11-21T06:20:01.000Z  1

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
            VISITOR  ANONYMOUS ID  CONSENT  SEEN (UTC)                UPDATED (UTC)             CAMPAIGNS
            v5       -             yes      2024-11-21T06:20:05.000Z  2024-11-21T06:20:05.000Z  ?
            v4       -             yes      2024-11-21T06:20:04.000Z  2024-11-21T06:20:04.000Z  ?
            v3       -             yes      2024-11-21T06:20:03.000Z  2024-11-21T06:20:03.000Z  ?
            v2       anon-2        yes      2024-11-21T06:20:02.500Z  2024-11-21T06:20:02.500Z  0
            v1       -             yes      2024-11-21T06:20:01.000Z  2024-11-21T06:20:01.000Z  1

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

    /// `count` visitors, `visitor-0` written first; each seen (looked up) in the reverse order of
    /// its write, so the most recently seen is the one written first.
    private func storeOfVisitors(_ count: Int) throws {
        try withStore { store in
            try store.write { connection in
                try connection.visitors.save((0..<count).map { index in
                    VisitorRecord(visitorId: "visitor-\(index)", anonymousId: nil, consent: true,
                                  document: #"{"version": 1, "data": {"visitorId": "visitor-\#(index)", "campaigns": []}}"#,
                                  updatedAt: 1_732_170_000_000 + Int64(index))
                })
                try connection.execute("UPDATE visitors SET last_seen_at = 1732180000000 - updated_at + 1732170000000")
            }
        }
    }

    func testAListingStopsAtItsLimitMostRecentlySeenFirstAcrossPagesAndSaysThereIsMore() throws {
        try storeOfVisitors(1_203)

        let text = try flagship("visitors", "--db", storeFile.path, "--limit", "1201")
        XCTAssertEqual(text.status, 0, text.stderr)
        let lines = text.stdout.split(separator: "\n")
        XCTAssertEqual(lines.first?.hasPrefix("VISITOR"), true)
        XCTAssertEqual(lines.filter { $0.hasPrefix("VISITOR") }.count, 1, "one header over three pages")
        let ids = lines.dropFirst().dropLast().map { String($0.split(separator: " ")[0]) }
        XCTAssertEqual(ids, (0..<1_201).map { "visitor-\($0)" }, "seen order, not write order, across pages of 500")
        XCTAssertEqual(lines.last, "the 1201 most recently seen visitors (--limit to see more)")

        let json = try flagship("visitors", "--db", storeFile.path, "--limit", "1203", "--json")
        XCTAssertEqual(json.status, 0, json.stderr)
        let rows = try XCTUnwrap(try parseJSON(json.stdout) as? [[String: Any]])
        XCTAssertEqual(rows.compactMap { $0["visitorId"] as? String }, (0..<1_203).map { "visitor-\($0)" }, "every one, no note")
        XCTAssertEqual(rows.first?["lastSeenAt"] as? Int64, 1_732_180_000_000)

        let fewer = try flagship("visitors", "--db", storeFile.path)
        XCTAssertEqual(fewer.stdout.split(separator: "\n").count, 1 + 100 + 1, "100 unless said, and the note")
    }

    func testALimitThatIsNotPositiveIsRefused() throws {
        try withStore { _ in }
        let result = try flagship("visitors", "--db", storeFile.path, "--limit", "0")
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("--limit must be a positive number of visitors, not 0"), result.stderr)
    }
}
