import FlagshipStore
import Foundation
import XCTest

/// A hit that can never be sent exactly becomes a dead letter (issue 18, point 13): bytes that
/// are not UTF-8 in its id or document (a hand edit, another writer) used to be re-sent at every
/// replay and never deleted. Now such a row is sent never, kept out of every claim, counted by
/// `db inspect` and listed by `hits`, while every other hit is delivered and deleted.
final class HostileDeadLetterTests: HitCommandTestCase {
    /// Bytes of an event hit document whose label holds 0xFF 0xFE (never valid UTF-8).
    private static func documentBytes(label: [UInt8]) -> [UInt8] {
        Array(#"{"version": 1, "data": {"visitorId": "v9", "anonymousId": null, "type": "EVENT", "time": 1732170000123, "content": {"t": "EVENT", "vid": "v9", "ec": "Action Tracking", "ea": "click", "el": ""#.utf8)
            + label + Array(#"", "ds": "APP", "cid": "env"}}}"#.utf8)
    }

    private func insertRaw(id: [UInt8], document: [UInt8], into store: FlagshipDatabase) throws {
        _ = try store.database.write { connection in
            try connection.execute(
                "INSERT INTO hits (id, visitor_id, type, document, created_at) VALUES (CAST(?1 AS TEXT), 'v9', 'EVENT', CAST(?2 AS TEXT), ?3)",
                [.blob(id), .blob(document), .integer(Int64(Date().timeIntervalSince1970 * 1000))])
        }
    }

    func testHitsWithBytesThatAreNotUTF8BecomeDeadLettersNotResentForever() throws {
        try withStore { store in
            // Recent: past the hit lifetime (4 h) the replay would delete them unsent.
            try insertRaw(id: Array("v9:good".utf8), document: Self.documentBytes(label: Array("good".utf8)), into: store)
            try insertRaw(id: Array("v9:bad-document".utf8), document: Self.documentBytes(label: [0x63, 0xFF, 0xFE]), into: store)
            try insertRaw(id: Array("v9:bad-id-".utf8) + [0xC3, 0x28], document: Self.documentBytes(label: Array("ok".utf8)), into: store)
        }

        let first = try replay()
        // They remain, but no replay can send them: named, and no failure.
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertTrue(first.stderr.contains("warning: 2 dead letter(s) stay in \(storeFile.path), never sent"), first.stderr)
        XCTAssertEqual(try summary(first)["remaining"], 2)
        let sentFirst = server.hits.filter { $0["vid"] == "v9" }.count
        server.clearReceived()
        let second = try replay()
        XCTAssertEqual(second.status, 0, second.stderr)

        XCTAssertEqual(server.hits.filter { $0["ea"] == "click" }.count, 0, "nothing sent again: \(second.stderr)")
        XCTAssertEqual(sentFirst, 1, "only the good hit, never one with its bytes changed")
        let inspect = try FlagshipExecutable.run(["db", "inspect", "--json", "--db", storeFile.path], outputDirectory: outputDirectory)
        XCTAssertEqual(inspect.status, 0, inspect.stderr)
        let document = try XCTUnwrap(try parseJSON(inspect.stdout) as? [String: Any])
        XCTAssertEqual(document["deadLetters"] as? Int, 2, inspect.stdout)
        XCTAssertEqual((document["hits"] as? [String: Any])?["total"] as? Int, 2, "the good hit was delivered and deleted")
        let hits = try FlagshipExecutable.run(["hits", "--json", "--db", storeFile.path], outputDirectory: outputDirectory)
        let rows = try XCTUnwrap(try parseJSON(hits.stdout) as? [[String: Any]], hits.stdout)
        XCTAssertEqual(rows.count, 2)
        for row in rows {
            let reason = try XCTUnwrap(row["deadLetter"] as? String, "\(row)")
            XCTAssertTrue(reason.contains("not valid UTF-8"), reason)
        }
        let text = try FlagshipExecutable.run(["hits", "--db", storeFile.path], outputDirectory: outputDirectory)
        XCTAssertTrue(text.stdout.contains("dead letter"), text.stdout)
    }

    /// A row whose columns cannot be read as the SDK writes them (an `attempts` past 2^63 − 1,
    /// which SQLite keeps as a REAL; a `next_attempt_at` edited into text) used to fail every
    /// claim: nothing was delivered, and after 4 hours every hit expired unsent. Now each such
    /// row becomes a dead letter alone, named, and the others are delivered.
    func testARowWhoseColumnsCannotBeReadIsADeadLetterAloneAndTheOthersAreDelivered() throws {
        try withStore { store in
            for name in ["good-1", "huge-attempts", "text-backoff", "good-2"] {
                try insertRaw(id: Array("v9:\(name)".utf8), document: Self.documentBytes(label: Array(name.utf8)), into: store)
            }
            _ = try store.database.write { connection in
                try connection.execute("UPDATE hits SET attempts = 18446744073709551616 WHERE id = 'v9:huge-attempts'")
                try connection.execute("UPDATE hits SET next_attempt_at = 'soon' WHERE id = 'v9:text-backoff'")
            }
            let kinds = try store.database.read { connection in
                try connection.query("SELECT typeof(attempts) || ',' || typeof(next_attempt_at) FROM hits ORDER BY id").map { try $0.text(0) }
            }
            XCTAssertEqual(Set(kinds), ["integer,null", "real,null", "integer,text"], "the rows as the issue found them")
        }

        let replayed = try replay()

        XCTAssertEqual(replayed.status, 0, replayed.stderr)
        XCTAssertEqual(Set(server.hits.compactMap { $0["el"]?.stringValue }), ["good-1", "good-2"], replayed.stderr)
        XCTAssertTrue(replayed.stderr.contains("warning: 2 dead letter(s) stay in \(storeFile.path), never sent"), replayed.stderr)
        let hits = try FlagshipExecutable.run(["hits", "--json", "--db", storeFile.path], outputDirectory: outputDirectory)
        XCTAssertEqual(hits.status, 0, hits.stderr)
        let rows = try XCTUnwrap(try parseJSON(hits.stdout) as? [[String: Any]], hits.stdout)
        let reasons = rows.compactMap { $0["deadLetter"] as? String }.sorted()
        XCTAssertEqual(reasons.count, 2, hits.stdout)
        XCTAssertTrue(reasons.contains { $0.contains("column attempts holds a REAL") }, "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.contains("column next_attempt_at holds TEXT") }, "\(reasons)")
    }
}
