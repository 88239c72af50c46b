import CSQLite
import Foundation

/// What a prune of many visitors reads first, beside its batches: the leaves of the two indexes
/// keyed by visitor id, read ahead into the kernel's page cache.
///
/// Each visitor a prune deletes has an entry in the visitors' primary key and in
/// `decisions_by_visitor`, at a place its id decides: at random. The prune's other pages follow
/// the visitors' age (their rows, `visitors_by_last_seen`, the decisions' rows) and are read a
/// page for dozens of visitors. So a prune of many visitors of a big store read cold reads one
/// leaf of each index per visitor from the disk, 4 KB at a time on its own thread, between its
/// writes: measured on a store of 10 million visitors, a prune of a tenth deleted 1.31 times as
/// many visitors a second with those leaves already read (`Benchmarks/README.md`, "Scale").
///
/// When the visitors due are at least as many as an index has leaves, most of its leaves are
/// touched (each with a chance of 1 − e⁻¹ at least), so all of them are read first, on serial
/// queues of the read ahead's own (`io.flagship.store.read-ahead`), while the batches go on: in file order, consecutive pages together,
/// by four readers side by side, without SQLite's B-tree code, against the batches' reads of the
/// same pages one at a time. A prune of fewer visitors only counts its first visitors due (`planned()`). Which pages
/// are leaves comes from the interior pages (`IndexLeaves`), about a hundredth of the tree, read
/// from the file. Every page is read through SQLite's own file (`csqlite_read_main_file`) on
/// read-only connections of the read ahead's own, never a descriptor of ours, whose closing
/// would drop SQLite's locks on the file. Nothing is written, and a failure to read anything
/// only leaves the prune as it was.
struct PruneReadAhead: Sendable {
    /// The indexes whose entries a visitor's deletion removes at a place its id decides.
    static let indexes = ["sqlite_autoindex_visitors_1", "decisions_by_visitor"]
    /// Consecutive pages read in one call at most (256 KB of 4 KB pages).
    static let longestRun = 64

    let path: String
    let boundary: Int64?
    let maxVisitors: Int?
    var minimumLeaves = FlagshipDatabase.pruneReadAheadMinimumLeaves

    /// Which leaves to read, or `nil` for none (`plan()`), on a queue of the read ahead's. The
    /// prune awaits it before its first batch: a count of the visitors due up to
    /// `minimumLeaves` when few are (every periodic prune of a store that keeps up), else that
    /// and a walk of the interior pages (about 2,200 pages for the 10 million visitors' two
    /// indexes), so that what it reports does not depend on how fast its batches go.
    func planned() async -> Plan? {
        await queuedCall(on: StoreThreads.queue("io.flagship.store.read-ahead")) { plan() }
    }

    /// Reads the plan's pages until done or `stop` is set (the prune's last batch); a cancelled
    /// task sets it too. `readers` connections read their share of the runs side by side, each
    /// in file order on a queue of its own: one read waiting at a time left the disk idle between them (measured on
    /// the 10M store's 198,000 leaves read cold: 9.9 s with one reader, 6.7 s with four).
    /// Returns how many pages were read.
    func read(_ plan: Plan, stop: Locked<Bool>, readers: Int = 4) async -> Int {
        await withTaskCancellationHandler {
            let runs = IndexLeaves.runs(plan.pages, longest: Self.longestRun)
            let shares = (0..<max(1, readers)).map { reader in
                stride(from: reader, to: runs.count, by: max(1, readers)).map { runs[$0] }
            }
            return await withTaskGroup(of: Int.self) { group in
                for share in shares where !share.isEmpty {
                    let queue = StoreThreads.queue("io.flagship.store.read-ahead")
                    group.addTask { await queuedCall(on: queue) { readAhead(share, pageSize: plan.pageSize, stop: stop) } }
                }
                return await group.reduce(0, +)
            }
        } onCancel: {
            stop.withLock { $0 = true }
        }
    }

    /// Which leaves to read: those of each index of `minimumLeaves` leaves or more that has no
    /// more leaves than there are visitors due. `nil`: none.
    struct Plan: Sendable {
        var pageSize: Int
        var pages: [Int]
        var indexes: [String]
    }

    func plan() -> Plan? {
        Self.withConnection(path) { connection, handle -> Plan? in
            guard let layout = try? connection.transaction(immediate: false, { try Self.layout(of: $0) }),
                  let some = try? connection.transaction(immediate: false, { try visitorsDue(in: $0, atMost: minimumLeaves) }),
                  some >= minimumLeaves else { return nil }
            var found: [(name: String, leaves: [Int])] = []
            for (name, root) in layout.roots {
                let leaves = IndexLeaves.leaves(root: root, pageCount: layout.pageCount, pageSize: layout.pageSize) { number in
                    Self.page(number, of: handle, pageSize: layout.pageSize)
                }
                if let leaves, leaves.count >= minimumLeaves { found.append((name, leaves)) }
            }
            guard let most = found.map(\.leaves.count).max(),
                  let due = try? connection.transaction(immediate: false, { try visitorsDue(in: $0, atMost: most) })
            else { return nil }
            let chosen = found.filter { due >= $0.leaves.count }
            guard !chosen.isEmpty else { return nil }
            return Plan(pageSize: layout.pageSize, pages: chosen.flatMap(\.leaves).sorted(), indexes: chosen.map(\.name))
        } ?? nil
    }

    /// `body` with a read-only connection of its own to the file, closed after; `nil` when the
    /// file cannot be opened.
    private static func withConnection<T>(_ path: String, _ body: (Connection, OpaquePointer) -> T) -> T? {
        var opened: OpaquePointer?
        guard sqlite3_open_v2(path, &opened, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil) == SQLITE_OK,
              let handle = opened else {
            sqlite3_close_v2(opened)
            return nil
        }
        csqlite_disable_checkpoint_on_close(handle)
        sqlite3_busy_timeout(handle, 1_000)
        let connection = Connection(handle: handle)
        defer { connection.close(checkpoint: false) }
        return body(connection, handle)
    }

    /// The visitors this prune will delete, counted up to `atMost`: those not seen since the
    /// boundary, and those beyond the budget.
    private func visitorsDue(in db: Connection, atMost: Int) throws -> Int {
        var due = try boundary.map { try db.visitors.countNotSeen(since: $0, atMost: atMost) } ?? 0
        if let maxVisitors { due += max(0, try db.visitors.count() - max(0, maxVisitors)) }
        return due
    }

    private struct Layout {
        var pageSize: Int
        var pageCount: Int
        var roots: [(String, Int)]
    }

    private static func layout(of db: Connection) throws -> Layout {
        let pageSize = Int(try db.scalar("PRAGMA page_size")?.int64 ?? 0)
        let pageCount = Int(try db.scalar("PRAGMA page_count")?.int64 ?? 0)
        var roots: [(String, Int)] = []
        for name in indexes {
            if let root = try db.scalar("SELECT rootpage FROM main.sqlite_schema WHERE type = 'index' AND name = ?", [.text(name)])?.int64 {
                roots.append((name, Int(root)))
            }
        }
        return Layout(pageSize: pageSize, pageCount: pageCount, roots: roots)
    }

    /// Page `number` as the file holds it, or `nil`.
    private static func page(_ number: Int, of handle: OpaquePointer, pageSize: Int) -> [UInt8]? {
        guard pageSize > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: pageSize)
        let code = bytes.withUnsafeMutableBytes { buffer in
            csqlite_read_main_file(handle, buffer.baseAddress, Int32(pageSize), Int64(number - 1) * Int64(pageSize))
        }
        return code == SQLITE_OK ? bytes : nil
    }

    /// Reads `runs` (first page, count) in order on a connection of its own, until `stop`;
    /// returns how many pages were read.
    private func readAhead(_ runs: [(first: Int, count: Int)], pageSize: Int, stop: Locked<Bool>) -> Int {
        Self.withConnection(path) { _, handle in
            var buffer = [UInt8](repeating: 0, count: pageSize * Self.longestRun)
            var read = 0
            for run in runs {
                if stop.withLock({ $0 }) { break }
                let code = buffer.withUnsafeMutableBytes { buffer in
                    csqlite_read_main_file(handle, buffer.baseAddress, Int32(run.count * pageSize), Int64(run.first - 1) * Int64(pageSize))
                }
                guard code == SQLITE_OK else { break }
                read += run.count
            }
            return read
        } ?? 0
    }
}
