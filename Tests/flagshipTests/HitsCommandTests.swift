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
              "nextAttemptAt": null, "nextAttemptAtUTC": null, "leaseOwner": null, "deadLetter": null,
              "document": {"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "type": "EVENT", "time": 1732170000123,
                           "content": {"t": "EVENT", "vid": "v1", "ec": "Action Tracking", "ea": "click", "el": "cta",
                                       "ds": "APP", "cid": "env"}}}},
             {"id": "v2:0002", "visitorId": "v2", "type": "ACTIVATE", "isConsent": false, "attempts": 0,
              "createdAt": 1732170005000, "createdAtUTC": "2024-11-21T06:20:05.000Z",
              "nextAttemptAt": null, "nextAttemptAtUTC": null, "leaseOwner": null, "deadLetter": null,
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
            ["ID", "TYPE", "VISITOR", "AGE", "ATTEMPTS", "NEXT TRY", "CLAIMED BY", "CONTENT"],
            ["v1:0001", "EVENT", "v1", "<age>", "2", "-", "-", "ea=click el=cta"],
            ["v2:0002", "ACTIVATE", "v2", "<age>", "0", "-", "-", "caid=vg1 vaid=var1"],
            ["v1:0003", "PAGEVIEW", "v1", "<age>", "0", "-", "-", "dl=https://example.com/a"],
            ["the 3 oldest of 4 hits (--limit to see more)"],
        ])
    }

    func testHitsShowWhenEachFailedHitIsTriedAgainAndWhoIsSendingIt() throws {
        let now = Date().unixMilliseconds
        let retryAt = now + 3_630_000
        try withStore { store in
            try StoreFixture.populate(store)
            // A sender that died holding v1:0001 and v1:0003: its claim lapsed a second ago.
            _ = try store.database.write {
                try $0.hits.claim(.events, owner: "pid 1 gone", now: now, leaseUntil: now - 1_000, limit: 2)
            }
            try store.write { try $0.hits.recordFailedAttempt(ids: ["v1:0001"], nextAttemptAt: retryAt) }
            try store.write { try $0.hits.recordFailedAttempt(ids: ["v2:0002"], nextAttemptAt: now - 5_000) }
            // A live sender takes the oldest unclaimed hit, v1:0001, for an hour.
            let claimed = try store.database.write {
                try $0.hits.claim(.events, owner: "pid 4242 cafe0001", now: now, leaseUntil: now + 3_600_000, limit: 1)
            }
            XCTAssertEqual(claimed.map(\.id), ["v1:0001"])
        }

        let text = try flagship("hits", "--db", storeFile.path)
        let json = try flagship("hits", "--db", storeFile.path, "--json")

        XCTAssertEqual(text.status, 0, text.stderr)
        let rows = text.stdout.split(separator: "\n").map {
            $0.replacingOccurrences(of: " {2,}", with: "|", options: .regularExpression).split(separator: "|").map(String.init)
        }
        XCTAssertEqual(rows.map { $0.count > 6 ? [$0[0], $0[4], $0[5], $0[6]] : $0 }, [
            ["ID", "ATTEMPTS", "NEXT TRY", "CLAIMED BY"],
            ["v1:0001", "3", "in 1h00m", "pid 4242 cafe0001"],
            ["v2:0002", "1", "due", "-"],
            ["v1:0003", "0", "-", "-"],
            ["v1:0004", "0", "-", "-"],
        ])
        XCTAssertEqual(json.status, 0, json.stderr)
        let objects = try XCTUnwrap(try parseJSON(json.stdout) as? [[String: Any]])
        let retries = try objects.map { object in
            try canonicalJSON([object["id"], object["attempts"], object["nextAttemptAt"], object["nextAttemptAtUTC"], object["leaseOwner"]]
                .map { $0 ?? "absent" })
        }
        XCTAssertEqual(retries, try [
            ["v1:0001", 3, retryAt, Self.utc(retryAt), "pid 4242 cafe0001"],
            ["v2:0002", 1, now - 5_000, Self.utc(now - 5_000), NSNull()],
            ["v1:0003", 0, NSNull(), NSNull(), NSNull()],
            ["v1:0004", 0, NSNull(), NSNull(), NSNull()],
        ].map(canonicalJSON))
    }

    /// `2026-11-23T09:13:20.969Z`, formatted apart from the command (whole seconds through a
    /// `Date`, which holds them exactly, and the milliseconds as an integer).
    private static func utc(_ unixMilliseconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        let seconds = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(unixMilliseconds / 1000)))
        return seconds + String(format: ".%03dZ", Int(unixMilliseconds % 1000))
    }

    /// Each document is read as the SDK reads it before sending: what it could not send shows `?`
    /// and a warning saying why, and the listing goes on.
    func testAHitDocumentTheSDKCannotSendIsListedWithAWarningSayingWhy() throws {
        try withStore { store in
            try StoreFixture.populate(store)
            try store.write { try $0.hits.insert([
                HitRecord(id: "v1:bad-version", visitorId: "v1", type: "EVENT",
                          document: #"{"version": 2, "data": {"visitorId": "v1", "type": "EVENT", "time": 1, "content": {"ea": "click"}}}"#,
                          createdAt: 1_732_170_000_200),
                HitRecord(id: "v1:bad-content", visitorId: "v1", type: "EVENT",
                          document: #"{"version": 1, "data": {"visitorId": "v1", "type": "EVENT", "time": 1, "content": ["ea"]}}"#,
                          createdAt: 1_732_170_000_300),
            ]) }
        }

        let result = try flagship("hits", "--db", storeFile.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        let rows = result.stdout.split(separator: "\n").map {
            $0.replacingOccurrences(of: " {2,}", with: "|", options: .regularExpression).split(separator: "|").map(String.init)
        }
        XCTAssertEqual(rows.map { $0.count > 7 ? [$0[0], $0[7]] : $0 }, [
            ["ID", "CONTENT"],
            ["v1:0001", "ea=click el=cta"],
            ["v1:bad-version", "?"],
            ["v1:bad-content", "?"],
            ["v2:0002", "caid=vg1 vaid=var1"],
            ["v1:0003", "dl=https://example.com/a"],
            ["v1:0004", "ea=fs_consent el=swift:true"],
        ])
        XCTAssertEqual(result.stderr, """
            warning: hit 'v1:bad-version': its document is not a hit cache document (version 2 is not 1); the SDK will not send it
            warning: hit 'v1:bad-content': its document is not a hit cache document (field data.content must be an object); the SDK will not send it

            """)
    }

    func testHitsRefusesALimitBelowOne() throws {
        try withStore(StoreFixture.populate)

        for limit in ["0", "-3"] {
            let result = try flagship("hits", "--db", storeFile.path, "--limit=\(limit)")

            XCTAssertNotEqual(result.status, 0)
            XCTAssertEqual(result.stdout, "")
            XCTAssertTrue(result.stderr.hasPrefix("Error: --limit must be a positive number of hits, not \(limit)\n"), result.stderr)
        }
    }
}
