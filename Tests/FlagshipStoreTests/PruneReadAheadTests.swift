import CSQLite
import Foundation
import XCTest

@testable import FlagshipStore

/// A prune of many visitors reads the leaves of the two indexes keyed by visitor id ahead: the
/// leaves found from the interior pages are SQLite's own (`dbstat`), a page that does not read
/// as a B-tree page ends the walk without a crash, the read happens only when the visitors due
/// are as many as an index's leaves, and a prune deletes the same with it as without.
final class PruneReadAheadTests: StoreTestCase {
    /// The last sighting of visitor `i` (from 1): the least recently seen come first.
    private static let base: Int64 = 1_700_000_000_000

    /// `count` visitors last seen at `base + i` ms, each with one decision row, written with SQL
    /// as `Scripts/scale-store.sh` writes its stores; then everything checkpointed into the file.
    private func filledStore(_ count: Int) throws -> FlagshipDatabase {
        let store = try openStore()
        try store.write { db in
            try db.execute(
                """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
                INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at)
                SELECT 'visitor-' || lower(hex(randomblob(8))), NULL, 1, '{"version":1,"data":{}}', ?2 + i, NULL FROM n
                """,
                [.integer(Int64(count)), .integer(Self.base)]
            )
            try db.execute("INSERT INTO decisions (visitor_id, decided_at, source, assignments) SELECT visitor_id, updated_at, 'unknown', '[]' FROM visitors")
        }
        try checkpoint(store)
        return store
    }

    private func checkpoint(_ store: FlagshipDatabase) throws {
        XCTAssertTrue(try store.database.withConnection { try $0.checkpointTruncatingWAL(waitingUpTo: 5_000) })
    }

    /// The leaf pages of `name` as SQLite counts them.
    private func dbstatLeaves(_ name: String, in store: FlagshipDatabase) throws -> [Int] {
        try store.database.column("SELECT pageno FROM dbstat WHERE name = '\(name)' AND pagetype = 'leaf' ORDER BY pageno")
            .compactMap(\.int64).map(Int.init)
    }

    /// Every page of the file, by number, read as the walk reads them.
    private func pages(of url: URL) throws -> (pages: [Int: [UInt8]], pageSize: Int) {
        let bytes = try fileBytes(url)
        let pageSize = 4_096
        var pages: [Int: [UInt8]] = [:]
        for number in 1...(bytes.count / pageSize) {
            pages[number] = [UInt8](bytes[(number - 1) * pageSize ..< number * pageSize])
        }
        return (pages, pageSize)
    }

    private func root(of name: String, in store: FlagshipDatabase) throws -> Int {
        Int(try XCTUnwrap(try store.database.column("SELECT rootpage FROM sqlite_schema WHERE name = '\(name)'").first?.int64))
    }

    // MARK: - The walk

    func testTheLeavesFoundFromTheInteriorPagesAreTheLeavesSQLiteCounts() throws {
        let store = try filledStore(3_000)
        // An index of long keys, to walk a tree of several interior levels.
        try store.write { db in
            try db.execute("CREATE TABLE long_keys (key TEXT NOT NULL)")
            try db.execute("CREATE INDEX long_keys_by_key ON long_keys (key)")
            try db.execute(
                """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
                INSERT INTO long_keys (key) SELECT printf('%0900d', abs(random()) % 1000000000) FROM n
                """
            )
        }
        try checkpoint(store)
        let (pages, pageSize) = try pages(of: url())
        for name in PruneReadAhead.indexes + ["visitors", "long_keys_by_key"] {
            let expected = try dbstatLeaves(name, in: store)
            let found = IndexLeaves.leaves(root: try root(of: name, in: store), pageCount: pages.count, pageSize: pageSize) { pages[$0] }
            XCTAssertEqual(found, expected, name)
            XCTAssertGreaterThan(expected.count, 10, name)
        }
        let depth = try store.database.column("SELECT max(length(path) - length(replace(path, '/', ''))) FROM dbstat WHERE name = 'long_keys_by_key'")
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(depth.first?.int64), 3, "the long keys make a tree of three levels or more")
    }

    func testARootThatIsALeafIsTheOnlyLeaf() throws {
        let store = try openStore()
        try store.write { try $0.visitors.save(.sample("only")) }
        try checkpoint(store)
        let (pages, pageSize) = try pages(of: url())
        let root = try root(of: "sqlite_autoindex_visitors_1", in: store)
        XCTAssertEqual(IndexLeaves.leaves(root: root, pageCount: pages.count, pageSize: pageSize) { pages[$0] }, [root])
        XCTAssertEqual(try dbstatLeaves("sqlite_autoindex_visitors_1", in: store), [root])
    }

    func testEveryByteOfTheRootChangedEndsTheWalkOrNamesPagesOfTheFileOnly() throws {
        let store = try filledStore(3_000)
        let (pages, pageSize) = try pages(of: url())
        let root = try root(of: "decisions_by_visitor", in: store)
        let good = try XCTUnwrap(pages[root])
        var refused = 0
        for offset in 0..<pageSize {
            for value: UInt8 in [0x00, 0x01, 0x0a, 0x7f, 0xff] where good[offset] != value {
                var damaged = good
                damaged[offset] = value
                let found = IndexLeaves.leaves(root: root, pageCount: pages.count, pageSize: pageSize) { $0 == root ? damaged : pages[$0] }
                guard let found else { refused += 1; continue }
                XCTAssertTrue(found.allSatisfy { (1...pages.count).contains($0) }, "byte \(offset) = \(value)")
            }
        }
        XCTAssertGreaterThan(refused, 0)
        // Page numbers out of the file, a page that is no B-tree page, a read that fails.
        XCTAssertNil(IndexLeaves.leaves(root: pages.count + 1, pageCount: pages.count, pageSize: pageSize) { pages[$0] })
        XCTAssertNil(IndexLeaves.leaves(root: root, pageCount: pages.count, pageSize: pageSize) { _ in [UInt8](repeating: 0, count: pageSize) })
        XCTAssertNil(IndexLeaves.leaves(root: root, pageCount: pages.count, pageSize: pageSize) { $0 == root ? good : nil })
    }

    func testAPageThatPointsBackUpEndsTheWalk() throws {
        let store = try filledStore(3_000)
        let (pages, pageSize) = try pages(of: url())
        let root = try root(of: "sqlite_autoindex_visitors_1", in: store)
        // Every child is the root itself: a cycle, which the depth bound ends.
        var looping = try XCTUnwrap(pages[root])
        let cells = Int(looping[3]) << 8 | Int(looping[4])
        for cell in 0..<cells {
            let offset = Int(looping[12 + 2 * cell]) << 8 | Int(looping[13 + 2 * cell])
            looping.replaceSubrange(offset ..< offset + 4, with: Self.bigEndian(root))
        }
        looping.replaceSubrange(8 ..< 12, with: Self.bigEndian(root))
        XCTAssertNil(IndexLeaves.leaves(root: root, pageCount: pages.count, pageSize: pageSize) { $0 == root ? looping : pages[$0] })
    }

    private static func bigEndian(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    func testConsecutivePagesAreReadTogetherUpToTheLongestRun() {
        let runs = IndexLeaves.runs([3, 4, 5, 9, 10, 11, 12, 13, 20], longest: 3)
        XCTAssertEqual(runs.map(\.first), [3, 9, 12, 20])
        XCTAssertEqual(runs.map(\.count), [3, 3, 2, 1])
        XCTAssertTrue(IndexLeaves.runs([], longest: 3).isEmpty)
    }

    // MARK: - The read ahead

    func testManyVisitorsDueReadBothIndexesLeavesAndFewReadNothing() async throws {
        let store = try filledStore(6_000)
        let expected = try PruneReadAhead.indexes.flatMap { try dbstatLeaves($0, in: store) }.sorted()

        let many = PruneReadAhead(path: url().path, boundary: Self.base + 4_001, maxVisitors: nil, minimumLeaves: 8)
        let planned = await many.planned()
        let plan = try XCTUnwrap(planned)
        XCTAssertEqual(plan.indexes, PruneReadAhead.indexes)
        XCTAssertEqual(plan.pages, expected)
        let read = await many.read(plan, stop: Locked(false))
        XCTAssertEqual(read, expected.count)
        for readers in [1, 3, 64] {
            let pages = await many.read(plan, stop: Locked(false), readers: readers)
            XCTAssertEqual(pages, expected.count, "\(readers) reader(s)")
        }

        // As many due by the budget.
        let budget = PruneReadAhead(path: url().path, boundary: nil, maxVisitors: 2_000, minimumLeaves: 8)
        let evicted = await budget.planned()
        XCTAssertEqual(evicted?.pages, expected)

        // Ten due: fewer than either index has leaves.
        let few = await PruneReadAhead(path: url().path, boundary: Self.base + 11, maxVisitors: nil, minimumLeaves: 8).planned()
        XCTAssertNil(few)

        // Indexes smaller than the minimum.
        let small = await PruneReadAhead(path: url().path, boundary: Self.base + 4_001, maxVisitors: nil, minimumLeaves: 1_000_000).planned()
        XCTAssertNil(small)

        // Stopped before it starts.
        let stopped = await many.read(plan, stop: Locked(true))
        XCTAssertEqual(stopped, 0)
    }

    func testADamagedRootOrAFileStillInTheWALReadsNothingOfThatIndex() async throws {
        let store = try filledStore(6_000)
        let visitorLeaves = try dbstatLeaves("sqlite_autoindex_visitors_1", in: store)
        store.close()
        try zeroRootPage(of: "decisions_by_visitor")
        let readAhead = PruneReadAhead(path: url().path, boundary: Self.base + 4_001, maxVisitors: nil, minimumLeaves: 8)
        let plan = await readAhead.planned()
        XCTAssertEqual(plan?.indexes, ["sqlite_autoindex_visitors_1"])
        XCTAssertEqual(plan?.pages, visitorLeaves)

        // Rows never checkpointed: the file holds none of their pages yet.
        let other = url("in-the-wal.sqlite")
        let fresh = try openStore(at: other)
        try await fresh.write { db in
            try db.execute(
                """
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6000)
                INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at)
                SELECT 'visitor-' || lower(hex(randomblob(8))), NULL, 1, '{"version":1,"data":{}}', ?1 + i, NULL FROM n
                """,
                [.integer(Self.base)]
            )
        }
        XCTAssertLessThan(try fileBytes(other).count, 40 * 4_096, "the rows are still in the WAL")
        let inWAL = await PruneReadAhead(path: other.path, boundary: Self.base + 4_001, maxVisitors: nil, minimumLeaves: 8).planned()
        XCTAssertNil(inWAL)
    }

    func testAPruneWithTheReadAheadDeletesWhatAPruneWithoutItDeletes() async throws {
        let store = try filledStore(6_000)
        let leaves = try PruneReadAhead.indexes.reduce(0) { $0 + (try dbstatLeaves($1, in: store)).count }
        store.close()
        try FileManager.default.copyItem(at: url(), to: url("copy.sqlite"))
        let with = try openStore()
        let without = try openStore(at: url("copy.sqlite"))

        let read = try await with.pruneVisitors(notSeenSince: Self.base + 4_001, keepingAtMost: 1_500, readAheadMinimumLeaves: 8)
        let plain = try await without.pruneVisitors(notSeenSince: Self.base + 4_001, keepingAtMost: 1_500, readAheadMinimumLeaves: .max)

        XCTAssertEqual(read.expired, 4_000)
        XCTAssertEqual(read.evicted, 500)
        XCTAssertEqual(read.pagesToReadAhead, leaves)
        // However far the read went before the last batch stopped it.
        XCTAssertLessThanOrEqual(read.pagesReadAhead, leaves)
        XCTAssertEqual([plain.pagesToReadAhead, plain.pagesReadAhead], [0, 0])
        XCTAssertEqual([read.expired, read.evicted, read.decisionRows], [plain.expired, plain.evicted, plain.decisionRows])
        let remaining = "SELECT visitor_id FROM visitors ORDER BY visitor_id"
        XCTAssertEqual(try with.database.column(remaining), try without.database.column(remaining))
        XCTAssertEqual(try with.database.column("SELECT count(*) FROM decisions"), [.integer(1_500)])
        let counted = try await with.read { try $0.visitors.count() }
        XCTAssertEqual(counted, 1_500)
    }
}
