import FlagshipStore
import Foundation
import XCTest

/// `flagship export`: everything a store file holds for one visitor, as JSON.
final class ExportCommandTests: CommandTestCase {
    /// A decision of the fixture's v1, on a bucketing file version.
    static let decision = DecisionRecord(
        visitorId: "v1", decidedAt: 1_732_170_000_500, campaignId: "c1", variationGroupId: "vg1", variationId: "var1",
        source: .bucketingFile, reason: "SPLIT", fileVersion: String(repeating: "ab", count: 32),
        context: #"{"age":32}"#, flags: #"{"btnColor":"green"}"#
    )

    /// The fixture, with v1's decision recorded as the SDK records it (with its document).
    static func populate(_ store: FlagshipDatabase) throws {
        try StoreFixture.populate(store)
        var v1 = StoreFixture.visitors[0]
        v1.decisions = [decision]
        try store.write { try $0.visitors.save(v1) }
    }

    static let v1Export = """
        {"visitorId": "v1",
         "visitor": {"anonymousId": null, "consent": true, "updatedAt": 1732170001000, "updatedAtUTC": "2024-11-21T06:20:01.000Z",
                     "lastSeenAt": 1732170001000, "lastSeenAtUTC": "2024-11-21T06:20:01.000Z",
                     "document": {"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "consent": true,
                                  "context": {"age": 32},
                                  "campaigns": [{"campaignId": "c1", "variationGroupId": "vg1", "variationId": "var1",
                                                 "isReference": false, "type": "ab", "slug": null, "activated": false,
                                                 "flags": {"btnColor": "green"}}],
                                  "assignmentsHistory": {"vg1": "var1"}}}},
         "decisions": [{"decidedAt": 1732170000500, "decidedAtUTC": "2024-11-21T06:20:00.500Z", "campaignId": "c1",
                        "variationGroupId": "vg1", "variationId": "var1", "source": "bucketing_file", "reason": "SPLIT",
                        "fileVersion": "\(String(repeating: "ab", count: 32))", "context": {"age": 32}, "flags": {"btnColor": "green"}}],
         "hits": [{"id": "v1:0001", "type": "EVENT", "isConsent": false, "createdAt": 1732170000123, "createdAtUTC": "2024-11-21T06:20:00.123Z",
                   "attempts": 2, "deadLetter": null,
                   "document": {"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "type": "EVENT", "time": 1732170000123,
                                "content": {"t": "EVENT", "vid": "v1", "ec": "Action Tracking", "ea": "click", "el": "cta", "ds": "APP", "cid": "env"}}}},
                  {"id": "v1:0003", "type": "PAGEVIEW", "isConsent": false, "createdAt": 1732170009999, "createdAtUTC": "2024-11-21T06:20:09.999Z",
                   "attempts": 0, "deadLetter": null,
                   "document": {"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "type": "PAGEVIEW", "time": 1732170009999,
                                "content": {"t": "PAGEVIEW", "vid": "v1", "dl": "https://example.com/a", "ds": "APP", "cid": "env"}}}},
                  {"id": "v1:0004", "type": "EVENT", "isConsent": true, "createdAt": 1732170010000, "createdAtUTC": "2024-11-21T06:20:10.000Z",
                   "attempts": 0, "deadLetter": null,
                   "document": {"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "type": "EVENT", "time": 1732170010000,
                                "content": {"t": "EVENT", "vid": "v1", "ec": "User Engagement", "ea": "fs_consent", "el": "swift:true", "ds": "APP", "cid": "env"}}}}],
         "unreadableRows": 0, "damagedRows": 0}
        """

    func testExportPrintsTheVisitorsDocumentDecisionsAndWaitingHitsOnly() throws {
        try withStore(Self.populate)

        let result = try flagship("export", "--db", storeFile.path, "--visitor-id", "v1")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        XCTAssertEqual(try canonicalJSON(try parseJSON(result.stdout)), try canonicalJSON(try parseJSON(Self.v1Export)))
        XCTAssertFalse(result.stdout.contains("v2"), "nothing of another visitor")
    }

    func testAVisitorTheStoreHoldsNothingForIsAnEmptyAnswer() throws {
        try withStore(Self.populate)

        let result = try flagship("export", "--db", storeFile.path, "--visitor-id", "nobody")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try canonicalJSON(try parseJSON(result.stdout)), try canonicalJSON(try parseJSON("""
            {"visitorId": "nobody", "visitor": null, "decisions": [], "hits": [], "unreadableRows": 0, "damagedRows": 0}
            """)))
    }

    /// A hand-edited hit is still listed; a decision row that cannot be read is skipped, counted
    /// and warned about, and the rest is printed.
    func testRowsThatCannotBeReadAreCountedAndTheRestPrinted() throws {
        try withStore { store in
            try Self.populate(store)
            try store.database.withConnection { connection in
                XCTAssertEqual(try connection.execute("UPDATE hits SET attempts = 'many' WHERE id = 'v1:0003'"), 1)
                try connection.query("PRAGMA ignore_check_constraints = ON")
                XCTAssertEqual(try connection.execute(
                    "UPDATE decisions SET assignments = substr(assignments, 1, length(assignments) - 3) WHERE visitor_id = 'v1'"), 1)
                try connection.query("PRAGMA ignore_check_constraints = OFF")
            }
        }

        let result = try flagship("export", "--db", storeFile.path, "--visitor-id", "v1")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, """
            warning: 1 row(s) of this visitor could not be read and are not in the answer (`flagship db inspect` says more)
            warning: 1 row(s) of this visitor hold a value the SDK would not have written (a hand edit, damage): in the answer as stored, each with `damaged` saying what

            """)
        let answer = try XCTUnwrap(try parseJSON(result.stdout) as? [String: Any])
        XCTAssertEqual(answer["unreadableRows"] as? Int, 1)
        XCTAssertEqual(answer["damagedRows"] as? Int, 1, "the hit whose attempts is text")
        let edited = (answer["hits"] as? [[String: Any]])?.first { $0["id"] as? String == "v1:0003" }
        XCTAssertEqual(edited?["damaged"] as? String, "its attempts hold(s) a value of another type than the SDK writes, shown as near as it goes")
        XCTAssertEqual((answer["decisions"] as? [Any])?.count, 0)
        XCTAssertEqual((answer["hits"] as? [[String: Any]])?.map { $0["id"] as? String }, ["v1:0001", "v1:0003", "v1:0004"])
        XCTAssertNotNil(answer["visitor"] as? [String: Any])
    }

    /// A hit whose creation time was edited into text, and one whose document is not JSON: shown
    /// as stored (the text, not a number it is not), each marked `damaged`, counted and warned
    /// about, as `flagship hits` warns of them.
    func testDamagedRowsAreShownAsStoredMarkedCountedAndWarnedAbout() throws {
        try withStore { store in
            try Self.populate(store)
            try store.database.withConnection { connection in
                XCTAssertEqual(try connection.execute("UPDATE hits SET created_at = 'yesterday' WHERE id = 'v1:0001'"), 1)
                try connection.query("PRAGMA ignore_check_constraints = ON")
                XCTAssertEqual(try connection.execute("UPDATE hits SET document = '{\"version\": 1, \"data\": ' WHERE id = 'v1:0003'"), 1)
                try connection.query("PRAGMA ignore_check_constraints = OFF")
            }
        }

        let result = try flagship("export", "--db", storeFile.path, "--visitor-id", "v1")

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, """
            warning: 2 row(s) of this visitor hold a value the SDK would not have written (a hand edit, damage): in the answer as stored, each with `damaged` saying what

            """)
        let answer = try XCTUnwrap(try parseJSON(result.stdout) as? [String: Any])
        XCTAssertEqual(answer["damagedRows"] as? Int, 2)
        XCTAssertEqual(answer["unreadableRows"] as? Int, 0)
        let hits = try XCTUnwrap(answer["hits"] as? [[String: Any]])
        let textTime = try XCTUnwrap(hits.first { $0["id"] as? String == "v1:0001" })
        XCTAssertEqual(textTime["createdAt"] as? String, "yesterday", "as stored, not -2^63")
        XCTAssertTrue(textTime["createdAtUTC"] is NSNull)
        XCTAssertEqual(textTime["damaged"] as? String, "its created_at holds the text \"yesterday\", not unix milliseconds")
        let brokenDocument = try XCTUnwrap(hits.first { $0["id"] as? String == "v1:0003" })
        XCTAssertEqual(brokenDocument["document"] as? String, #"{"version": 1, "data": "#)
        XCTAssertEqual(brokenDocument["damaged"] as? String, "its document is not JSON")
        XCTAssertNil(hits.first { $0["id"] as? String == "v1:0004" }?["damaged"], "a row as written is not marked")
    }

    /// Any value SQLite can hold in a time column is printed, never a crash: -2^63 as itself,
    /// with no UTC twin.
    func testTheExtremeTimesARowCanHoldArePrinted() throws {
        try withStore { store in
            try Self.populate(store)
            try store.write { db in
                XCTAssertEqual(try db.execute("UPDATE hits SET created_at = -9223372036854775808 WHERE id = 'v1:0001'"), 1)
                XCTAssertEqual(try db.execute("UPDATE hits SET created_at = 9223372036854775807 WHERE id = 'v1:0003'"), 1)
            }
        }

        let result = try flagship("export", "--db", storeFile.path, "--visitor-id", "v1")

        XCTAssertEqual(result.status, 0, result.stderr)
        let hits = try XCTUnwrap((try parseJSON(result.stdout) as? [String: Any])?["hits"] as? [[String: Any]])
        XCTAssertEqual(hits.map { $0["id"] as? String }, ["v1:0001", "v1:0004", "v1:0003"])
        XCTAssertEqual(hits.first?["createdAt"] as? Int64, .min)
        XCTAssertTrue(hits.first?["createdAtUTC"] is NSNull)
        XCTAssertEqual(hits.last?["createdAt"] as? Int64, .max)
        XCTAssertTrue(hits.last?["createdAtUTC"] is NSNull)
    }

    func testAMissingStoreFileIsAnErrorThatCreatesNothing() throws {
        let stderr = try stderrOfFailureLeavingStoreUntouched("export", "--db", storeFile.path, "--visitor-id", "v1")

        XCTAssertTrue(stderr.contains("no store at \(storeFile.path)"), stderr)
    }
}
