import Foundation
import XCTest

import FlagshipStore

/// A damaged file is moved aside to `<name>.corrupt-<timestamp>`, never deleted, and a fresh
/// database takes its place.
final class DamagedFileTests: StoreTestCase {
    /// `fixedNow` as the suffix of a moved-aside file.
    private let stamp = "20241121T062000.123Z"

    func testFileOfGarbageBytesIsMovedAsideAndAFreshDatabaseTakesItsPlace() throws {
        let garbage = Data((0..<8_192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: url())

        let store = try openStore()

        try assertMovedAside(store, originalBytes: garbage, reasonContains: "file is not a database")
    }

    func testDatabaseTruncatedToHalfIsMovedAside() throws {
        let truncated = try writeTruncatedDatabase(keeping: { $0 / 2 })

        let store = try openStore()

        try assertMovedAside(store, originalBytes: truncated, reasonContains: "database disk image is malformed")
    }

    func testDatabaseTruncatedInTheMiddleOfAPageIsMovedAside() throws {
        let truncated = try writeTruncatedDatabase(keeping: { $0 / 2 + 1_000 })

        let store = try openStore()

        try assertMovedAside(store, originalBytes: truncated, reasonContains: "database disk image is malformed")
    }

    func testDatabaseTruncatedToItsFirstPageIsMovedAside() throws {
        let truncated = try writeTruncatedDatabase(keeping: { _ in 4_096 })

        let store = try openStore()

        try assertMovedAside(store, originalBytes: truncated, reasonContains: "database disk image is malformed")
    }

    func testDatabaseTruncatedToFiftyBytesIsMovedAside() throws {
        let truncated = try writeTruncatedDatabase(keeping: { _ in 50 })

        let store = try openStore()

        try assertMovedAside(store, originalBytes: truncated, reasonContains: "database disk image is malformed")
    }

    func testDatabaseCutShortInsideItsLastPageIsMovedAside() throws {
        // quick_check passes such a file: the lost bytes held index entries, not table rows.
        let truncated = try writeTruncatedDatabase(keeping: { $0 - 10 })

        let store = try openStore()

        try assertMovedAside(store, originalBytes: truncated,
                             reasonContains: "the file is \(truncated.count) bytes, not a whole number of 4096-byte pages: it was cut short")
    }

    func testIndexPageOverwrittenByZerosAfterACrashIsMovedAsideByTheFullCheck() throws {
        // Opening never reads this page; only quick_check does, and it runs after a crash.
        _ = try writeDatabaseSpanningManyPages()
        try openStore().abandon()
        let damaged = try zeroIndexRootPage()

        let store = try openStore()

        try assertMovedAside(store, originalBytes: damaged.bytes,
                             reasonContains: "quick_check: *** in database main ***\nPage \(damaged.rootPage): btreeInitPage() returns error code 11")
        // Only an index was damaged: every hit is read from the table and kept (issue 18, point 4).
        XCTAssertEqual(try store.opening.salvage?.get().hitsCopied, 2_000)
    }

    func testIndexPageDamagedAfterACleanCloseIsFoundAtFirstUseAndMovedAsideAtTheNextStart() throws {
        _ = try writeDatabaseSpanningManyPages()
        let damaged = try zeroIndexRootPage()

        let first = try openStore()
        XCTAssertNil(first.opening.fullCheck, "a clean close: no full check")
        XCTAssertNil(first.opening.movedAside)
        XCTAssertThrowsError(try first.write { try $0.hits.deleteHits(visitorId: "visitor-1", keepingConsentHits: false) }, "the damaged index is read") { error in
            guard case .sqlite(let sqliteError)? = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertTrue(sqliteError.meansFileIsDamaged, "\(sqliteError)")
        }
        first.close()
        let second = try openStore()

        let movedAside = try XCTUnwrap(second.opening.movedAside, "damage met keeps the session marker: a full check")
        XCTAssertTrue(movedAside.reason.contains("Page \(damaged.rootPage): btreeInitPage() returns error code 11"), movedAside.reason)
    }

    func testDatabaseTruncatedToHalfWithCommittedTransactionsInItsWalIsMovedAsideWithItsWalUntouched() throws {
        try assertCrashedDatabaseIsMovedAsideUntouched(cuttingBytes: { $0 / 2 })
    }

    func testDatabaseMissingFourPagesWithCommittedTransactionsInItsWalIsMovedAsideWithItsWalUntouched() throws {
        // A cut this small does not stop SQLite's own checkpoint (which refuses past 64 KiB plus the WAL).
        try assertCrashedDatabaseIsMovedAsideUntouched(cuttingBytes: { _ in 4 * 4_096 })
    }

    func testWalAndShmCompanionsOfADamagedFileAreMovedWithIt() throws {
        let garbage = Data(repeating: 0xAB, count: 2_048)
        let wal = Data("not a write-ahead log".utf8)
        let shm = Data(repeating: 0x5A, count: 64)
        try garbage.write(to: url())
        try wal.write(to: url("flagship-test.sqlite-wal"))
        try shm.write(to: url("flagship-test.sqlite-shm"))

        let store = try openStore()

        let movedAside = try XCTUnwrap(store.opening.movedAside)
        XCTAssertEqual(try fileBytes(movedAside.url), garbage)
        XCTAssertEqual(try? fileBytes(URL(fileURLWithPath: movedAside.url.path + "-wal")), wal)
        XCTAssertTrue(FileManager.default.fileExists(atPath: movedAside.url.path + "-shm"))
        XCTAssertEqual(try store.read { try $0.hits.count() }, 0)
    }

    func testSecondDamagedFileAtTheSameInstantGetsItsOwnName() throws {
        let first = Data(repeating: 0x01, count: 1_024)
        let second = Data(repeating: 0x02, count: 1_024)
        try first.write(to: url())
        try openStore().close()
        try second.write(to: url("flagship-test.sqlite"))
        try? FileManager.default.removeItem(at: url("flagship-test.sqlite-wal"))
        try? FileManager.default.removeItem(at: url("flagship-test.sqlite-shm"))

        let store = try openStore()

        XCTAssertEqual(store.opening.movedAside?.url.lastPathComponent, "flagship-test.sqlite.corrupt-\(stamp)-2")
        XCTAssertEqual(try fileBytes(url("flagship-test.sqlite.corrupt-\(stamp)")), first)
        XCTAssertEqual(try fileBytes(url("flagship-test.sqlite.corrupt-\(stamp)-2")), second)
    }

    func testHealthyDatabaseIsNotMovedAside() throws {
        _ = try writeDatabaseSpanningManyPages()

        let store = try openStore()

        XCTAssertNil(store.opening.movedAside)
        XCTAssertEqual(try store.read { try $0.hits.count() }, 2_000)
        XCTAssertFalse(try directoryListing().contains { $0.contains(".corrupt-") })
    }

    /// Valid SQL, another schema: storing a screen view would fail with a constraint error, never
    /// `SQLITE_CORRUPT`, forever. The recorded hash of the schema's definitions catches it.
    func testSchemaTextChangedIntoOtherValidSQLIsMovedAside() throws {
        try closedStoreWithOneHit { connection in
            try connection.execute("PRAGMA writable_schema = ON")
            try connection.execute("UPDATE sqlite_master SET sql = replace(sql, 'SCREENVIEW', 'SCREENVIEX') WHERE name = 'hits'")
        }
        let bytes = try fileBytes(url())

        let store = try openStore()

        try assertMovedAside(store, originalBytes: bytes, reasonContains: "the schema in sqlite_master is not the one the migrations wrote")
    }

    /// A view or an index a person makes in the `sqlite3` shell is theirs: the file is not damaged.
    func testObjectsAddedFromTheShellDoNotMakeTheFileLookDamaged() throws {
        try closedStoreWithOneHit { connection in
            try connection.execute("CREATE VIEW my_hits AS SELECT id, visitor_id FROM hits")
            try connection.execute("CREATE INDEX my_hits_by_type ON hits (type)")
        }

        let store = try openStore()

        XCTAssertNil(store.opening.movedAside)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:before"])
    }

    // MARK: - Helpers

    /// A closed store of 2,000 hits, well over a hundred pages; returns the file's length.
    private func writeDatabaseSpanningManyPages() throws -> Int {
        let store = try openStore()
        let padding = String(repeating: "x", count: 200)
        try store.write { try $0.hits.insert((0..<2_000).map { index in
            var hit = HitRecord.sample("hit-\(index)", createdAt: fixedNowMilliseconds + Int64(index))
            hit.document = #"{"version":1,"padding":"\#(padding)"}"#
            return hit
        }) }
        store.close()
        let length = try fileBytes(url()).count
        XCTAssertGreaterThan(length, 100 * 4_096)
        XCTAssertFalse(FileManager.default.fileExists(atPath: url().path + "-wal"), "closing checkpoints the WAL into the file")
        return length
    }

    /// A store holding one hit, closed, then changed through a plain connection (as the shell would).
    private func closedStoreWithOneHit(changedBy change: (Connection) throws -> Void) throws {
        let first = try openStore()
        try first.write { try $0.hits.insert([.sample("before")]) }
        first.close()
        let database = try rawDatabase()
        try database.write(change)
        database.close()
    }

    /// Overwrites the root page of the `hits_by_visitor` index with zeros; returns the file's bytes then.
    private func zeroIndexRootPage() throws -> (bytes: Data, rootPage: Int64) {
        try zeroRootPage(of: "hits_by_visitor")
    }

    /// A closed store spanning many pages, then cut to `keeping(length)` bytes; returns what is left.
    private func writeTruncatedDatabase(keeping: (Int) -> Int) throws -> Data {
        let length = try writeDatabaseSpanningManyPages()
        try truncateFile(url(), to: keeping(length))
        return try fileBytes(url())
    }

    /// A crash: the file and its WAL as a process left them, with transactions not yet
    /// checkpointed; then the file loses `cuttingBytes(length)` bytes at its end.
    private func assertCrashedDatabaseIsMovedAsideUntouched(
        cuttingBytes: (Int) -> Int, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        _ = try writeDatabaseSpanningManyPages()
        let running = try openStore()
        try running.write { db in try db.hits.insert((0..<20).map { .sample("in-wal-\($0)") }) }
        try FileManager.default.copyItem(at: url(), to: url("crashed.sqlite"))
        try FileManager.default.copyItem(at: url("flagship-test.sqlite-wal"), to: url("crashed.sqlite-wal"))
        running.close()
        let crashed = url("crashed.sqlite")
        let length = try fileBytes(crashed).count
        try truncateFile(crashed, to: length - cuttingBytes(length))
        let mainBytes = try fileBytes(crashed)
        let walBytes = try fileBytes(url("crashed.sqlite-wal"))
        XCTAssertGreaterThan(walBytes.count, 0, file: file, line: line)

        let store = try openStore(at: crashed)

        let movedAside = try XCTUnwrap(store.opening.movedAside, "the file was not moved aside", file: file, line: line)
        XCTAssertEqual(movedAside.url.lastPathComponent, "crashed.sqlite.corrupt-\(stamp)", file: file, line: line)
        XCTAssertEqual(try fileBytes(movedAside.url), mainBytes, "the damaged file as it was found", file: file, line: line)
        XCTAssertEqual(try? fileBytes(URL(fileURLWithPath: movedAside.url.path + "-wal")), walBytes, "its WAL as it was found", file: file, line: line)
        // What the damaged file and its WAL still give is copied into the new store, each hit once.
        let salvage = try XCTUnwrap(store.opening.salvage?.get(), file: file, line: line)
        XCTAssertEqual(try store.read { try $0.hits.count() }, salvage.hitsCopied, file: file, line: line)
        XCTAssertGreaterThan(salvage.hitsCopied, 0, "readable rows kept", file: file, line: line)
        XCTAssertEqual(Set(try store.read { try $0.hits.allIds() }).count, salvage.hitsCopied, file: file, line: line)
    }

    private func assertMovedAside(
        _ store: FlagshipDatabase, originalBytes: Data, reasonContains reason: String,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let movedAside = try XCTUnwrap(store.opening.movedAside, "the file was not moved aside", file: file, line: line)
        XCTAssertEqual(movedAside.url.path, url().path + ".corrupt-" + stamp, file: file, line: line)
        XCTAssertTrue(movedAside.reason.contains(reason), "reason: \(movedAside.reason)", file: file, line: line)
        XCTAssertEqual(try fileBytes(movedAside.url), originalBytes, "the moved file holds the original bytes", file: file, line: line)

        XCTAssertEqual(store.opening.fromVersion, 0, file: file, line: line)
        XCTAssertEqual(store.schemaVersion, Migrator().latestVersion, file: file, line: line)
        XCTAssertEqual(try posixPermissions(url()), 0o600, file: file, line: line)
        // What the damaged file still gives is copied into the new store (or nothing, from garbage).
        let salvaged = (try? store.opening.salvage?.get())?.hitsCopied ?? 0
        XCTAssertEqual(try store.read { try $0.hits.count() }, salvaged, file: file, line: line)
        try store.write { try $0.hits.insert([.sample("after-recovery")]) }
        XCTAssertEqual(try store.read { try $0.hits.count() }, salvaged + 1, file: file, line: line)
        XCTAssertTrue(try store.read { try $0.hits.allIds() }.contains("visitor-1:after-recovery"), file: file, line: line)
    }
}
