import CSQLite
import Foundation
import XCTest

@testable import FlagshipStore

/// A visitor's data deleted from the store is gone from the disk too: not left in the free space
/// of a page (`secure_delete`), nor in the page images the write-ahead log still holds
/// (`eraseWALHistory()`). Checked on the bytes of the database file and its `-wal` and `-shm`.
final class SecureDeletionTests: StoreTestCase {
    private static let context = "ultramarine-7d41c9"
    private static let label = "basket-3f8e2a"

    /// The bytes of the database file and of its `-wal` and `-shm` files, those that exist.
    private func bytesOnDisk() throws -> [String: Data] {
        var files: [String: Data] = [:]
        for suffix in ["", "-wal", "-shm"] {
            let file = URL(fileURLWithPath: url().path + suffix)
            if FileManager.default.fileExists(atPath: file.path) { files["file" + suffix] = try fileBytes(file) }
        }
        return files
    }

    /// The files (`file`, `file-wal`...) holding `text`'s UTF-8 bytes.
    private func filesHolding(_ text: String) throws -> [String] {
        try bytesOnDisk().filter { $0.value.range(of: Data(text.utf8)) != nil }.keys.sorted()
    }

    private func visitor(_ visitorId: String, context: String, updatedAt: Int64 = fixedNowMilliseconds) -> VisitorRecord {
        VisitorRecord(visitorId: visitorId, anonymousId: nil, consent: true,
                      document: visitorDocument(visitorId: visitorId, context: ["colour": context]), updatedAt: updatedAt)
    }

    private func hit(_ suffix: String, visitorId: String = "visitor-1", label: String, isConsent: Bool = false) -> HitRecord {
        HitRecord(id: "\(visitorId):\(suffix)", visitorId: visitorId, type: "EVENT", isConsent: isConsent,
                  document: hitDocument(visitorId: visitorId, type: "EVENT", time: fixedNowMilliseconds, label: label),
                  createdAt: fixedNowMilliseconds, attempts: 0)
    }

    func testAStoreInIncrementalVacuumZeroesFreedPagesOnlyAtAnErasure() throws {
        let store = try openStore()

        XCTAssertEqual(try store.database.integer("PRAGMA auto_vacuum"), 2)
        XCTAssertEqual(try store.database.integer("PRAGMA secure_delete"), 2, "FAST: deleted content zeroed in the pages written anyway")
    }

    func testAFileWithoutIncrementalVacuumZeroesEveryFreedPage() throws {
        // Made before incremental auto-vacuum, and too large to be switched at open.
        let database = try rawDatabase()
        try database.withConnection { try $0.execute("CREATE TABLE filler (x BLOB)") }
        XCTAssertEqual(try database.integer("PRAGMA auto_vacuum"), 0)

        XCTAssertFalse(try database.zeroFreedPagesAtErasureOnly())
        XCTAssertEqual(try database.integer("PRAGMA secure_delete"), 1)
    }

    /// A visitor's hits delivered and deleted long before its erasure filled whole pages, freed
    /// unzeroed (`secure_delete = FAST`): the erasure gives every free page back, so none of
    /// their bytes stays in the file.
    func testHitsDeliveredBeforeAnErasureLeaveNoByteInFreedPages() throws {
        let store = try openStore()
        let delivered = (0..<200).map { hit("delivered-\($0)", label: Self.label + "-delivered-\($0)") }
        try store.write { _ = try $0.hits.insert(delivered + [hit("other", visitorId: "visitor-2", label: "other-visitor")]) }
        try store.database.withConnection { try $0.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        try store.write { _ = try $0.hits.delete(ids: delivered.map(\.id)) }
        try store.database.withConnection { try $0.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        XCTAssertGreaterThan(try store.database.integer("PRAGMA freelist_count") ?? 0, 10)
        XCTAssertEqual(try filesHolding(Self.label + "-delivered-1"), ["file"], "freed whole, left as they were: the check sees them")

        try store.write { try $0.hits.deleteHits(visitorId: "visitor-1", keepingConsentHits: true) }
        XCTAssertTrue(try store.database.eraseWALHistory())

        XCTAssertEqual(try filesHolding(Self.label), [])
        XCTAssertEqual(try store.database.integer("PRAGMA freelist_count"), 0)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-2:other"])
        XCTAssertEqual(try store.database.withConnection { try $0.scalar("PRAGMA integrity_check")?.text }, "ok")
    }

    func testADeletedVisitorLeavesNoByteInTheFileOrItsWAL() throws {
        let store = try openStore()
        // Saved three times, so older versions of the row sit in the WAL, and checkpointed
        // once in between, so one is in the database file as well.
        try store.write { try $0.visitors.save(visitor("visitor-1", context: Self.context + "-v1")) }
        try store.database.withConnection { try $0.execute("PRAGMA wal_checkpoint(PASSIVE)") }
        try store.write { try $0.visitors.save(visitor("visitor-1", context: Self.context + "-v2", updatedAt: fixedNowMilliseconds + 1)) }
        try store.write { try $0.visitors.save(visitor("visitor-1", context: Self.context + "-v3", updatedAt: fixedNowMilliseconds + 2)) }
        try store.write { try $0.visitors.save(visitor("visitor-2", context: "someone else")) }
        XCTAssertEqual(try filesHolding(Self.context + "-v1"), ["file", "file-wal"], "the check sees a row where it is")

        try store.write { try $0.visitors.delete(visitorId: "visitor-1") }
        try store.database.eraseWALHistory()

        XCTAssertEqual(try filesHolding(Self.context), [])
        XCTAssertEqual(try filesHolding("visitor-1"), [])
        XCTAssertEqual(try store.read { try $0.visitors.visitors() }.map(\.visitorId), ["visitor-2"])
        XCTAssertEqual(try filesHolding("someone else"), ["file"], "the others are kept, checkpointed into the file")
    }

    func testAVisitorsDeletedHitsLeaveNoByteWhileItsConsentHitStays() throws {
        let store = try openStore()
        try store.write { try $0.hits.insert([hit("a", label: Self.label + "-a"), hit("consent", label: "fs_consent", isConsent: true)]) }
        try store.database.withConnection { try $0.execute("PRAGMA wal_checkpoint(PASSIVE)") }
        try store.write { try $0.hits.insert([hit("b", label: Self.label + "-b"), hit("other", visitorId: "visitor-2", label: "other-visitor")]) }
        XCTAssertEqual(try filesHolding(Self.label + "-a"), ["file", "file-wal"], "the check sees a row where it is")

        try store.write { try $0.hits.deleteHits(visitorId: "visitor-1", keepingConsentHits: true) }
        try store.database.eraseWALHistory()

        XCTAssertEqual(try filesHolding(Self.label), [])
        XCTAssertEqual(try filesHolding("visitor-1:a"), [])
        XCTAssertEqual(try filesHolding("fs_consent"), ["file"])
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:consent", "visitor-2:other"])
    }

    func testTheWALIsEmptyAfterAnErasureAndGrowsAgainWithTheNextWrite() throws {
        let store = try openStore()
        try store.write { try $0.visitors.save(visitor("visitor-1", context: Self.context)) }

        XCTAssertTrue(try store.database.eraseWALHistory())
        XCTAssertEqual(try fileBytes(url("flagship-test.sqlite-wal")).count, 0)

        try store.write { try $0.visitors.save(visitor("visitor-2", context: Self.context)) }
        XCTAssertGreaterThan(try fileBytes(url("flagship-test.sqlite-wal")).count, 0)
        XCTAssertEqual(try posixPermissions(url("flagship-test.sqlite-wal")), 0o600)
    }

    func testAReaderInAnotherConnectionOnlyDelaysTheErasureUntilItEnds() throws {
        let store = try openStore()
        try store.write { try $0.visitors.save(visitor("visitor-1", context: Self.context)) }
        let reader = try FlagshipDatabase.openForInspection(at: url())
        defer { reader.close() }
        let fast = try Database(path: url().path, options: DatabaseOptions(busyTimeoutMilliseconds: 50))
        defer { fast.close() }

        // A read transaction left open on the old snapshot: the erasure cannot truncate the WAL.
        try reader.database.withConnection { connection in
            try connection.execute("BEGIN")
            _ = try connection.scalar("SELECT count(*) FROM visitors")
        }
        try fast.write { try $0.execute("DELETE FROM visitors WHERE visitor_id = ?", [.text("visitor-1")]) }
        XCTAssertFalse(try fast.eraseWALHistory(), "busy: a reader still uses the old pages")
        XCTAssertEqual(try filesHolding(Self.context), ["file-wal"])

        try reader.database.withConnection { try $0.execute("COMMIT") }
        XCTAssertTrue(try fast.eraseWALHistory())
        XCTAssertEqual(try filesHolding(Self.context), [])
    }
    /// Another connection's checkpoint under way (the background checkpointer's, or another
    /// process's) holds SQLite's checkpoint lock, and a checkpoint that finds it held fails at
    /// once: the erasure waits for it to end instead of leaving the old pages in the WAL.
    func testACheckpointUnderWayElsewhereOnlyDelaysTheErasureUntilItEnds() throws {
        let store = try openStore()
        try store.write { try $0.visitors.save(visitor("visitor-1", context: Self.context)) }
        // A connection that zeroes every freed page: its erasure only checkpoints (no
        // `incremental_vacuum` first, which would wait for the write lock instead).
        let plain = try Database(path: url().path, options: DatabaseOptions(busyTimeoutMilliseconds: 5_000))
        defer { plain.close() }
        try plain.write { try $0.execute("DELETE FROM visitors WHERE visitor_id = ?", [.text("visitor-1")]) }
        XCTAssertNotEqual(try plain.integer("PRAGMA secure_delete"), 2)
        XCTAssertEqual(try filesHolding(Self.context), ["file-wal"])

        let held = try HeldCheckpoint(path: url().path)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { held.release() }
        XCTAssertTrue(try plain.eraseWALHistory(), "the other checkpoint ended within the busy timeout")

        XCTAssertTrue(held.ended)
        XCTAssertEqual(try filesHolding(Self.context), [])
        XCTAssertEqual(try fileBytes(url("flagship-test.sqlite-wal")).count, 0)
    }
}

/// A `FULL` checkpoint on a connection of its own, held under way: it takes SQLite's checkpoint
/// lock, then waits in its busy handler for the write lock another connection holds, until
/// `release()`.
private final class HeldCheckpoint: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let resume = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    /// The checkpoint's result code, once it has ended.
    private let result = Locked<Int32?>(nil)
    /// The connection that holds the write lock (its handle's address: a handle is not `Sendable`).
    private let writer: Int

    init(path: String) throws {
        let writer = try Self.open(path)
        let checkpointer = try Self.open(path)
        guard sqlite3_exec(writer, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else { throw CocoaError(.fileLocking) }
        self.writer = Int(bitPattern: writer)
        // A connection checkpoints only once it has read the file (and so opened its WAL).
        guard sqlite3_exec(checkpointer, "SELECT count(*) FROM sqlite_schema", nil, nil, nil) == SQLITE_OK else {
            throw CocoaError(.fileReadUnknown)
        }
        sqlite3_busy_handler(checkpointer, { context, calls in
            let held = Unmanaged<HeldCheckpoint>.fromOpaque(context!).takeUnretainedValue()
            if calls == 0 {
                held.entered.signal()
                held.resume.wait()
            }
            // Then a busy timeout of about 5 s, as the store's.
            usleep(1_000)
            return calls < 5_000 ? 1 : 0
        }, Unmanaged.passUnretained(self).toOpaque())
        let address = Int(bitPattern: checkpointer)
        Thread.detachNewThread { [self] in
            let handle = OpaquePointer(bitPattern: address)
            let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_FULL, nil, nil)
            result.withLock { $0 = code }
            sqlite3_close_v2(handle)
            done.signal()
        }
        entered.wait()
    }

    private static func open(_ path: String) throws -> OpaquePointer {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nil) == SQLITE_OK, let handle else {
            sqlite3_close_v2(handle)
            throw CocoaError(.fileReadUnknown)
        }
        return handle
    }

    /// Ends the write transaction and lets the checkpoint go on; returns once it has ended.
    func release() {
        let handle = OpaquePointer(bitPattern: writer)
        sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
        sqlite3_close_v2(handle)
        resume.signal()
        done.wait()
    }

    /// Whether the checkpoint ended, and copied the WAL.
    var ended: Bool { result.withLock { $0 } == SQLITE_OK }
}
