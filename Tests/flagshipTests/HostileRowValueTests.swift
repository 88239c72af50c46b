import Foundation
import XCTest

/// Every command that reads rows survives any value SQLite can hold in them: an edited file, a clock
/// gone wrong, an integer SQLite turned into a REAL past 2^63 − 1. It prints the row, or says in an
/// `Error:` line which column it cannot read, with exit status 1; it never traps.
final class HostileRowValueTests: CommandTestCase {
    /// The ends of a 64-bit integer: every time and count column set to one at once, so that each
    /// command computes with all of them.
    private static let extremes = ["-9223372036854775808", "9223372036854775807"]
    /// One of each other storage class where an integer belongs (a REAL past 2^63 − 1, text, a
    /// blob) and NULL: set one column at a time, since a command stops at the first it cannot read.
    private static let nonIntegers = ["1e300", "'not a number'", "x'00ff'", "NULL"]
    /// The time and count columns the commands compute with.
    private static let columns = [("hits", "created_at"), ("hits", "attempts"), ("hits", "next_attempt_at"),
                                  ("hits", "lease_until"), ("hits", "decided_at"),
                                  ("visitors", "updated_at"), ("visitors", "last_seen_at")]
    private static let commands = [["hits"], ["hits", "--json"], ["db", "inspect"], ["db", "inspect", "--json"],
                                   ["visitors"], ["visitors", "--json"], ["why", "--visitor-id", "bob"]]

    func testEveryReadingCommandPrintsOrRefusesAnyValueAColumnCanHoldAndNeverTraps() throws {
        XCTAssertEqual(try flagship("demo", "seed", "--cache-dir", storeDirectory.path, "--env-id", "env").status, 0)
        let seeded = try Data(contentsOf: storeFile)
        var printed = 0
        var cases: [(updates: [String], named: String?, commands: [[String]])] = Self.extremes.map { value in
            (Self.columns.map { "UPDATE \($0.0) SET \($0.1) = \(value)" }, nil, Self.commands)
        }
        for (table, column) in Self.columns {
            for value in Self.nonIntegers {
                // The text forms: the JSON ones read the same rows the same way.
                cases.append((["UPDATE \(table) SET \(column) = \(value)"], column, Self.commands.filter { !$0.contains("--json") }))
            }
        }
        for (updates, column, commands) in cases {
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: storeFile.path + suffix) }
            try seeded.write(to: storeFile)
            // A NOT NULL column refuses NULL: that case is the file as seeded.
            for update in updates {
                try? withStore { store in _ = try store.write { try $0.execute(update) } }
            }
            for command in commands {
                let result = try FlagshipExecutable.run(command + ["--db", storeFile.path], outputDirectory: outputDirectory)
                let place = "\(command.joined(separator: " ")) after \(updates.joined(separator: "; "))"
                XCTAssertFalse(result.signaled, "\(place): killed by signal \(result.status)\n\(result.stderr)")
                XCTAssertTrue([0, 1].contains(result.status), "\(place): exit \(result.status)\n\(result.stderr)")
                if result.status == 1 {
                    XCTAssertTrue(result.stderr.hasPrefix("Error: "), "\(place): \(result.stderr)")
                    if let column {
                        XCTAssertTrue(result.stderr.contains(column), "\(place) names the column it cannot read: \(result.stderr)")
                    }
                } else {
                    printed += 1
                }
            }
        }
        XCTAssertGreaterThan(printed, 0)
    }

    /// The ages the commands print, at the ends of the range: clamped, not trapped.
    func testAnAgeFromEitherEndOfTheIntegerRangeIsClampedAndPrinted() throws {
        XCTAssertEqual(try flagship("demo", "seed", "--cache-dir", storeDirectory.path, "--env-id", "env").status, 0)
        try withStore { store in
            _ = try store.write { try $0.execute("UPDATE hits SET created_at = -9223372036854775808") }
        }
        let result = try flagship("hits", "--json", "--db", storeFile.path)
        XCTAssertEqual(result.status, 0, result.stderr)
        let rows = try XCTUnwrap(try parseJSON(result.stdout) as? [[String: Any]])
        XCTAssertFalse(rows.isEmpty)
        for row in rows {
            XCTAssertEqual(row["ageSeconds"] as? Int, Int(Int64.max / 1000), "the age of the oldest possible hit, clamped")
        }
        let text = try flagship("db", "inspect", "--db", storeFile.path)
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("106751991167d07h ago"), text.stdout)
    }

    /// A creation time edited into text, a REAL or a blob: `hits` lists every row, that one too
    /// (it used to fail the whole listing on it).
    func testTheHitsListingShowsARowWhoseCreationTimeIsNotAnInteger() throws {
        XCTAssertEqual(try flagship("demo", "seed", "--cache-dir", storeDirectory.path, "--env-id", "env").status, 0)
        let seeded = try XCTUnwrap(try parseJSON(try flagship("hits", "--json", "--db", storeFile.path).stdout) as? [[String: Any]])
        XCTAssertGreaterThan(seeded.count, 1)
        for update in ["UPDATE hits SET created_at = 'not a number' WHERE rowid = (SELECT min(rowid) FROM hits)",
                       "UPDATE hits SET created_at = 1.5e300 WHERE rowid = (SELECT min(rowid) FROM hits)",
                       "UPDATE hits SET created_at = x'00ff' WHERE rowid = (SELECT min(rowid) FROM hits)"] {
            try withStore { store in _ = try store.write { try $0.execute(update) } }
            let listed = try flagship("hits", "--json", "--db", storeFile.path)
            XCTAssertEqual(listed.status, 0, "\(update): \(listed.stderr)")
            let rows = try XCTUnwrap(try parseJSON(listed.stdout) as? [[String: Any]], update)
            XCTAssertEqual(Set(rows.compactMap { $0["id"] as? String }), Set(seeded.compactMap { $0["id"] as? String }), update)
            let text = try flagship("hits", "--db", storeFile.path)
            XCTAssertEqual(text.status, 0, "\(update): \(text.stderr)")
        }
    }
}
