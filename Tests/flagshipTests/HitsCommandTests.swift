import FlagshipStore
import Foundation
import XCTest

final class HitsCommandTests: CommandTestCase {
    func testHitsJSONListsTheOldestHitsFirstUpToTheLimit() throws {
        try withStore(StoreFixture.populate)
        let before = Date()

        let result = try flagship("hits", "--db", storeFile.path, "--json", "--limit", "2")

        let after = Date()
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        var rows = try XCTUnwrap(try parseJSON(result.stdout) as? [[String: Any]])
        for index in rows.indices {
            let age = try XCTUnwrap(rows[index].removeValue(forKey: "ageSeconds") as? Int)
            let createdAt = try XCTUnwrap(rows[index]["createdAt"] as? Int)
            XCTAssertEqual(
                Double(age), before.timeIntervalSince1970 - Double(createdAt) / 1000,
                accuracy: after.timeIntervalSince(before) + 1
            )
        }
        let expected = """
            [{"id": "v1:0001", "visitorId": "v1", "type": "EVENT", "isConsent": false, "attempts": 2,
              "createdAt": 1732170000123, "createdAtUTC": "2024-11-21T06:20:00.123Z",
              "document": {"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "type": "EVENT", "time": 1732170000123,
                           "content": {"t": "EVENT", "vid": "v1", "ec": "Action Tracking", "ea": "click", "el": "cta",
                                       "ds": "APP", "cid": "env"}}}},
             {"id": "v2:0002", "visitorId": "v2", "type": "ACTIVATE", "isConsent": false, "attempts": 0,
              "createdAt": 1732170005000, "createdAtUTC": "2024-11-21T06:20:05.000Z",
              "document": {"version": 1, "data": {"visitorId": "v2", "anonymousId": "anon-2", "type": "ACTIVATE", "time": 1732170005000,
                           "content": {"vid": "v2", "aid": "anon-2", "caid": "vg1", "vaid": "var1", "cid": "env"}}}}]
            """
        XCTAssertEqual(try canonicalJSON(rows), try canonicalJSON(try parseJSON(expected)))
    }

    func testHitsTextShowsOneLinePerHitWithAContentSummary() throws {
        try withStore(StoreFixture.populate)

        let result = try flagship("hits", "--db", storeFile.path, "--limit", "3")

        XCTAssertEqual(result.status, 0, result.stderr)
        // Cells are two or more spaces apart; ages grow with the clock, so only their shape is checked.
        var rows = result.stdout.split(separator: "\n").map {
            $0.replacingOccurrences(of: " {2,}", with: "|", options: .regularExpression).split(separator: "|").map(String.init)
        }
        XCTAssertEqual(rows.count, 5, result.stdout)
        for index in 1..<min(rows.count, 4) where rows[index].count > 3 {
            XCTAssertNotNil(rows[index][3].range(of: #"^\d+d\d\dh$"#, options: .regularExpression), rows[index][3])
            rows[index][3] = "<age>"
        }
        XCTAssertEqual(rows, [
            ["ID", "TYPE", "VISITOR", "AGE", "ATTEMPTS", "CONTENT"],
            ["v1:0001", "EVENT", "v1", "<age>", "2", "ea=click el=cta"],
            ["v2:0002", "ACTIVATE", "v2", "<age>", "0", "caid=vg1 vaid=var1"],
            ["v1:0003", "PAGEVIEW", "v1", "<age>", "0", "dl=https://example.com/a"],
            ["the 3 oldest of 4 hits (--limit to see more)"],
        ])
    }

    func testHitsRefusesALimitBelowOne() throws {
        try withStore(StoreFixture.populate)

        for limit in ["0", "-3"] {
            let result = try flagship("hits", "--db", storeFile.path, "--limit=\(limit)")

            XCTAssertNotEqual(result.status, 0)
            XCTAssertEqual(result.stdout, "")
            XCTAssertTrue(result.stderr.hasPrefix("Error: --limit must be a positive number of hits, not \(limit).\n"), result.stderr)
        }
    }
}
