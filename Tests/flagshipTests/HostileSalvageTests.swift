import FlagshipStore
import Foundation
import XCTest

/// Damage is reported and what is readable is kept (issue 18, point 4): a damaged store moved
/// aside gives its readable hits to the new one, and `db salvage` copies them from any damaged
/// copy, each hit once, never writing the damaged file.
final class HostileSalvageTests: HitCommandTestCase {
    private static let hitCount = 3_001

    /// A store of `hitCount` recent hits, closed.
    private func storeWithHits(at url: URL) throws {
        let store = try FlagshipDatabase.open(at: url)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try store.write { try $0.hits.insert((0..<Self.hitCount).map { index in
            HitRecord(id: "v1:\(index)", visitorId: "v1", type: "EVENT",
                      document: #"{"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "type": "EVENT", "time": \#(now), "content": {"t": "EVENT", "vid": "v1", "ec": "Action Tracking", "ea": "salvaged", "el": "\#(index)", "ds": "APP", "cid": "env"}}}"#,
                      createdAt: now + Int64(index))
        }) }
        store.close()
    }

    /// Overwrites with zeros the page `pageOf` picks among those of `object` (from `dbstat`).
    private func zeroPage(of object: String, in url: URL, pick: ([Int64]) -> Int64) throws -> Data {
        let database = try Database(path: url.path, options: DatabaseOptions(immutable: true))
        let pages = try database.read { try $0.query("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno", [.text(object)]).compactMap { $0[0].int64 } }
        let pageSize = try XCTUnwrap(try database.read { try $0.scalar("PRAGMA page_size")?.int64 })
        database.close()
        let page = pick(pages)
        var bytes = try Data(contentsOf: url)
        let start = Int((page - 1) * pageSize)
        bytes.replaceSubrange(start..<(start + Int(pageSize)), with: Data(count: Int(pageSize)))
        try bytes.write(to: url)
        return bytes
    }

    /// The issue's case: a store whose index was damaged, left by a crash, used to be moved out
    /// of the replay path whole ("remaining 0", its hits stranded). Now every hit is replayed.
    func testAStoreDamagedInAnIndexKeepsEveryHitAndReplaysThemOnce() throws {
        try storeWithHits(at: storeFile)
        // A crash: the session of a process that no longer runs, so the next open checks the whole file.
        var deadPID: Int32 = 4_000_000
        while kill(deadPID, 0) == 0 || errno != ESRCH { deadPID -= 1 }
        let store = try FlagshipDatabase.open(at: storeFile)
        _ = try store.database.write {
            try $0.execute("INSERT INTO sdk_state (key, value, updated_at) VALUES (?, '0', 0)", [.text("store.session.\(deadPID).dead0001")])
        }
        store.close()
        _ = try zeroPage(of: "hits_by_visitor", in: storeFile, pick: { $0[$0.count / 2] })

        let result = try replay()

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("\(Self.hitCount) hit(s), 0 visitor(s) and 0 decision(s) copied"), result.stderr)
        let labels = server.hits.filter { $0["ea"] == "salvaged" }.compactMap { $0["el"]?.stringValue }
        XCTAssertEqual(labels.count, Self.hitCount, "each hit delivered")
        XCTAssertEqual(Set(labels).count, Self.hitCount, "each once")
        XCTAssertEqual(try summary(result)["remaining"], 0)
    }

    func testSalvageCopiesTheReadableHitsOfADamagedFileOnceAndNeverWritesIt() throws {
        let damaged = storeDirectory.appendingPathComponent("old.sqlite.corrupt-20261101T000000.000Z")
        try storeWithHits(at: damaged)
        let bytes = try zeroPage(of: "hits", in: damaged, pick: { $0[$0.count / 2] })
        let listing = try storeDirectoryListing()

        let first = try flagship("db", "salvage", "--db", storeFile.path, "--from", damaged.path)

        XCTAssertEqual(first.status, 0, first.stderr)
        let counts = try summary(first)
        let copied = try XCTUnwrap(counts["hitsCopied"])
        XCTAssertGreaterThan(copied, Self.hitCount - 100, "only the rows of the zeroed page are lost")
        XCTAssertLessThan(copied, Self.hitCount)
        XCTAssertEqual(counts["unreadableStretches"], 1)
        XCTAssertEqual(try storedHits().values.reduce(0, +), copied)
        XCTAssertEqual(try Data(contentsOf: damaged), bytes, "the damaged file is never written")
        XCTAssertEqual(Set(try storeDirectoryListing()).subtracting([storeFile.lastPathComponent, storeFile.lastPathComponent + "-wal", storeFile.lastPathComponent + "-shm"]),
                       Set(listing), "nothing created beside it")

        let again = try flagship("db", "salvage", "--db", storeFile.path, "--from", damaged.path)

        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("already salvaged"), again.stderr)
        XCTAssertEqual(try storedHits().values.reduce(0, +), copied)
    }
}
