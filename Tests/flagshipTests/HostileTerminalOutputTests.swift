import FlagshipStore
import Foundation
import XCTest

/// The tool's text output forges no line either (issue 18, point 16): a visitor id or hit field
/// holding a newline and an ESC sequence is printed escaped, on its row; `--json` stays exact.
final class HostileTerminalOutputTests: CommandTestCase {
    private static let hostile = "eve\nFAKE ROW\u{1B}[2J"

    func testHitsAndVisitorsPrintOutsideTextEscapedAndJSONExact() throws {
        try withStore { store in
            _ = try store.write { db in
                try db.hits.insert([HitRecord(
                    id: "\(Self.hostile):1", visitorId: Self.hostile, type: "EVENT",
                    document: #"{"version": 1, "data": {"type": "EVENT", "content": {"t": "EVENT", "ea": "a\nb"}}}"#,
                    createdAt: 1_732_170_000_000)])
            }
        }

        let text = try flagship("hits", "--db", storeFile.path)
        let json = try flagship("hits", "--json", "--db", storeFile.path)

        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertFalse(text.stdout.unicodeScalars.contains { $0.value == 0x1B }, text.stdout)
        XCTAssertEqual(text.stdout.split(separator: "\n").count, 2, "a header and one row: \(text.stdout)")
        XCTAssertTrue(text.stdout.contains(#"eve\nFAKE ROW\u{1B}[2J"#), text.stdout)
        let rows = try XCTUnwrap(try parseJSON(json.stdout) as? [[String: Any]])
        XCTAssertEqual(rows.first?["visitorId"] as? String, Self.hostile, "JSON stays exact")
    }
}
