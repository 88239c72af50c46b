import Foundation
import XCTest

import FlagshipStore

/// Where and how `FlagshipDatabase.open` creates the file, and how the connection is tuned.
final class FlagshipDatabaseOpeningTests: StoreTestCase {
    func testDatabaseIsCreated0600InsideANewly0700CreatedDirectory() throws {
        let cacheDirectory = directory.appendingPathComponent("cache", isDirectory: true)
        let url = cacheDirectory.appendingPathComponent("flagship-env.sqlite")

        try openStore(at: url).close()

        XCTAssertEqual(try posixPermissions(cacheDirectory), 0o700)
        XCTAssertEqual(try posixPermissions(url), 0o600)
    }

    func testEveryDirectoryOpeningCreatesIs0700() throws {
        let outer = directory.appendingPathComponent("home-cache", isDirectory: true)
        let inner = outer.appendingPathComponent("flagship", isDirectory: true)

        try openStore(at: inner.appendingPathComponent("flagship-env.sqlite")).close()

        XCTAssertEqual(try posixPermissions(outer), 0o700)
        XCTAssertEqual(try posixPermissions(inner), 0o700)
    }

    func testAnotherApplicationsDatabaseIsRefusedAndLeftByteForByteUnchanged() throws {
        let other = try rawDatabase()
        try other.write { connection in
            try connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
            try connection.execute("INSERT INTO notes (body) VALUES (?)", ["someone else's data"])
        }
        other.close()
        let before = try fileBytes(url())
        let listing = try directoryListing()

        XCTAssertThrowsError(try openStore()) { error in
            XCTAssertEqual(error as? StoreError, .notAFlagshipDatabase(
                path: self.url().path, reason: "it holds other tables (notes) and no schema_migrations table"))
        }

        XCTAssertEqual(try fileBytes(url()), before)
        XCTAssertEqual(try directoryListing(), listing, "not moved aside, no -wal left behind")
    }

    func testADatabaseMarkedWithAnotherApplicationIDIsRefused() throws {
        let other = try rawDatabase()
        try other.withConnection { try $0.execute("PRAGMA application_id = 42") }
        other.close()
        let before = try fileBytes(url())

        XCTAssertThrowsError(try openStore()) { error in
            XCTAssertEqual(error as? StoreError, .notAFlagshipDatabase(
                path: self.url().path, reason: "its application_id is 42, not Flagship's (\(Migrator.applicationID))"))
        }
        XCTAssertEqual(try fileBytes(url()), before)
    }

    func testANewerSchemaInRollbackJournalModeIsNotSwitchedToWal() throws {
        let latest = Migrator().latestVersion
        try writeNewerSchemaDatabase(at: url(), version: latest + 1)
        let rollback = try rawDatabase()
        try rollback.withConnection { try $0.query("PRAGMA journal_mode = DELETE") }
        rollback.close()
        let before = try fileBytes(url())

        XCTAssertThrowsError(try openStore())

        XCTAssertEqual(try fileBytes(url()), before, "the header still says rollback journal")
    }

    func testWalAndShmFilesAre0600AfterAWrite() throws {
        let store = try openStore()

        try store.write { try $0.hits.insert([.sample("a")]) }

        XCTAssertEqual(try posixPermissions(url()), 0o600)
        XCTAssertEqual(try posixPermissions(url("flagship-test.sqlite-wal")), 0o600)
        XCTAssertEqual(try posixPermissions(url("flagship-test.sqlite-shm")), 0o600)
    }

    /// The modes are asked for, not left to the process's umask: under a umask that masks
    /// nothing, the directory is still 0700 and the file, its WAL and shared memory 0600.
    func testModesHoldUnderAUmaskThatMasksNothing() throws {
        let previous = umask(0)
        defer { umask(previous) }
        let cacheDirectory = directory.appendingPathComponent("open-umask", isDirectory: true)
        let file = cacheDirectory.appendingPathComponent("flagship-env.sqlite")

        let store = try openStore(at: file)
        try store.write { try $0.hits.insert([.sample("a")]) }

        XCTAssertEqual(try posixPermissions(cacheDirectory), 0o700)
        for name in ["flagship-env.sqlite", "flagship-env.sqlite-wal", "flagship-env.sqlite-shm"] {
            XCTAssertEqual(try posixPermissions(cacheDirectory.appendingPathComponent(name)), 0o600, name)
        }
    }

    func testConnectionUsesWalNormalSynchronousForeignKeysAndABusyTimeout() throws {
        let store = try openStore()

        XCTAssertEqual(try store.database.column("PRAGMA journal_mode"), ["wal"])
        XCTAssertEqual(try store.database.integer("PRAGMA synchronous"), 1) // NORMAL
        XCTAssertEqual(try store.database.integer("PRAGMA foreign_keys"), 1)
        XCTAssertEqual(try store.database.integer("PRAGMA busy_timeout"), 5_000)
    }

    func testFullSynchronousCanBeChosen() throws {
        let store = try FlagshipDatabase.open(at: url(), options: DatabaseOptions(synchronous: .full))
        defer { store.close() }

        XCTAssertEqual(try store.database.integer("PRAGMA synchronous"), 2) // FULL
    }

    func testCommittedDataIsFoundAfterReopening() throws {
        let store = try openStore()
        try store.write { try $0.hits.insert([.sample("a", createdAt: 1), .sample("b", createdAt: 2)]) }
        try store.write { try $0.visitors.save(.sample("visitor-1")) }
        store.close()

        let reopened = try openStore()

        XCTAssertEqual(try reopened.read { try $0.hits.all() }, [.sample("a", createdAt: 1), .sample("b", createdAt: 2)])
        XCTAssertEqual(try reopened.read { try $0.visitors.visitor(id: "visitor-1") }, .sample("visitor-1"))
    }

    func testCloseIsSafeTwiceAndLaterCallsSayTheDatabaseIsClosed() throws {
        let store = try openStore()

        store.close()
        store.close()

        XCTAssertThrowsError(try store.read { try $0.hits.count() }) { error in
            XCTAssertEqual(error as? StoreError, .closed)
        }
        XCTAssertThrowsError(try store.write { try $0.visitors.save(.sample("visitor-1")) }) { error in
            XCTAssertEqual(error as? StoreError, .closed)
        }
    }

    func testInMemoryDatabaseIsMigratedAndUsable() throws {
        let store = try FlagshipDatabase.inMemory(now: { fixedNow })
        defer { store.close() }

        try store.write { try $0.hits.insert([.sample("a")]) }

        XCTAssertEqual(store.database.path, ":memory:")
        XCTAssertEqual(store.schemaVersion, Migrator().latestVersion)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:a"])
        XCTAssertEqual(try directoryListing(), [], "nothing written to disk")
    }

    func testDirectoryThatCannotBeCreatedIsAFileSystemError() throws {
        let blocker = url("not-a-directory")
        try Data("a file where a directory should be".utf8).write(to: blocker)
        let cacheDirectory = blocker.appendingPathComponent("cache", isDirectory: true)

        XCTAssertThrowsError(try FlagshipDatabase.open(at: cacheDirectory.appendingPathComponent("flagship-env.sqlite"))) { error in
            guard case .fileSystem(let path, let reason)? = error as? StoreError else {
                return XCTFail("expected StoreError.fileSystem, got \(error)")
            }
            XCTAssertEqual(path, cacheDirectory.path)
            XCTAssertTrue(reason.hasPrefix("cannot create the directory: "), reason)
        }
    }

    func testFileThatCannotBeCreatedIsAFileSystemError() throws {
        let blocker = url("not-a-directory")
        try Data("a file where a directory should be".utf8).write(to: blocker)
        let url = blocker.appendingPathComponent("flagship-env.sqlite")

        XCTAssertThrowsError(try FlagshipDatabase.open(at: url)) { error in
            XCTAssertEqual(error as? StoreError, .fileSystem(path: url.path, reason: "cannot create the file: Not a directory"))
        }
    }

    func testDatabaseFileOfAnEnvironmentIsNamedAfterItAndCannotEscapeTheDirectory() {
        let cache = URL(fileURLWithPath: "/var/cache/flagship", isDirectory: true)

        XCTAssertEqual(StoreLocation.databaseFile(envId: "bk87t3jggr10c6l6sdob", in: cache).path,
                       "/var/cache/flagship/flagship-bk87t3jggr10c6l6sdob.sqlite")
        XCTAssertEqual(StoreLocation.databaseFile(envId: "../../etc/passwd", in: cache).path,
                       "/var/cache/flagship/flagship-______etc_passwd.sqlite")
        XCTAssertEqual(StoreLocation.databaseFile(envId: "café", in: cache).lastPathComponent, "flagship-caf_.sqlite")
    }

    func testDefaultDirectoryPrefersFlagshipCacheDirThenXdgCacheHomeThenHome() {
        XCTAssertEqual(StoreLocation.defaultDirectory(environment: ["FLAGSHIP_CACHE_DIR": "/srv/fs", "XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"]).path, "/srv/fs")
        XCTAssertEqual(StoreLocation.defaultDirectory(environment: ["XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"]).path, "/xdg/flagship")
        XCTAssertEqual(StoreLocation.defaultDirectory(environment: ["FLAGSHIP_CACHE_DIR": "", "HOME": "/home/u"]).path, "/home/u/.cache/flagship")
    }
}

/// The full `quick_check` reads every page, so it runs only when the last session did not close
/// cleanly: a killed process, or a session that met a damaged page.
final class FullCheckTests: StoreTestCase {
    func testNewFileIsNotCheckedAndCleanReopeningIsNotCheckedEither() throws {
        let created = try openStore()
        XCTAssertNil(created.opening.fullCheck)
        created.close()

        let reopened = try openStore()

        XCTAssertNil(reopened.opening.fullCheck)
    }

    func testReopeningAfterAnAbandonedSessionRunsTheFullCheckOnceAndSaysWhy() throws {
        try openStore().close()
        let crashed = try openStore()
        try crashed.write { try $0.hits.insert([.sample("h1")]) }
        crashed.abandon()

        let afterCrash = try openStore()
        let reason = try XCTUnwrap(afterCrash.opening.fullCheck)
        XCTAssertTrue(reason.hasPrefix("the last session (pid \(getpid())) did not close the store cleanly"), reason)
        XCTAssertEqual(try afterCrash.read { try $0.hits.allIds() }, ["visitor-1:h1"], "the committed hit survived")
        afterCrash.close()

        XCTAssertNil(try openStore().opening.fullCheck, "the stale marker was cleared by the check")
    }

    func testSessionOfAnotherLiveProcessIsNotStaleButOneOfADeadProcessIs() throws {
        let store = try openStore()
        let live = Int(getppid())
        let dead = try deadProcessId()
        try store.database.write { connection in
            for pid in [live, dead] {
                try connection.execute("INSERT INTO sdk_state (key, value, updated_at) VALUES (?, '0', 0)",
                                       [.text("store.session.\(pid).0000")])
            }
        }
        store.close()

        let reopened = try openStore()

        XCTAssertEqual(reopened.opening.fullCheck, "the last session (pid \(dead)) did not close the store cleanly")
        let markers = try reopened.database.read { connection in
            try connection.query("SELECT key FROM sdk_state WHERE key LIKE 'store.session.%' ORDER BY key").compactMap { $0[0].text }
        }
        XCTAssertTrue(markers.contains("store.session.\(live).0000"), "a live process's session stays: \(markers)")
        XCTAssertFalse(markers.contains("store.session.\(dead).0000"), "a dead process's session goes: \(markers)")
        XCTAssertEqual(markers.count, 2, "the live one and this session: \(markers)")
    }

    func testFileFromBeforeTheMarkersIsCheckedOnce() throws {
        try openStore().close()
        let database = try rawDatabase()
        try database.write { try $0.execute("DELETE FROM sdk_state WHERE key LIKE 'store.%'") }
        database.close()

        let first = try openStore()
        XCTAssertEqual(first.opening.fullCheck, "no full check is recorded for this file yet")
        first.close()

        XCTAssertNil(try openStore().opening.fullCheck)
    }

    func testMarkersAreLeftOutOfTheSDKState() throws {
        let store = try openStore()
        try store.write { try $0.state.setValue("1", forKey: "first_init", now: 1) }

        XCTAssertEqual(try store.read { try $0.state.all() }.map(\.key), ["first_init"])
    }
}
