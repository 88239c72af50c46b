import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

final class LocalStoreTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
    }

    override func tearDown() {
        directory.remove()
    }

    func testTheDefaultDirectoryFollowsTheEnvironment() {
        XCTAssertEqual(StoreLocation.defaultDirectory(environment: ["FLAGSHIP_CACHE_DIR": "/srv/fs", "XDG_CACHE_HOME": "/x", "HOME": "/h"]).path, "/srv/fs")
        XCTAssertEqual(StoreLocation.defaultDirectory(environment: ["XDG_CACHE_HOME": "/x", "HOME": "/h"]).path, "/x/flagship")
        XCTAssertEqual(StoreLocation.defaultDirectory(environment: ["HOME": "/h"]).path, "/h/.cache/flagship")
        XCTAssertEqual(StoreLocation.defaultDirectory(environment: ["FLAGSHIP_CACHE_DIR": "", "HOME": "/h"]).path, "/h/.cache/flagship")
    }

    func testAnEnvIdCannotEscapeTheDirectory() {
        let base = URL(fileURLWithPath: "/cache", isDirectory: true)
        XCTAssertEqual(StoreLocation.databaseFile(envId: "bk87t3jggr10c6l6sdog", in: base).path, "/cache/flagship-bk87t3jggr10c6l6sdog.sqlite")
        XCTAssertEqual(StoreLocation.databaseFile(envId: "../../etc/passwd", in: base).path, "/cache/flagship-______etc_passwd.sqlite")
    }

    func testANewerDatabaseFallsBackToMemoryAndSaysSo() throws {
        let url = StoreLocation.databaseFile(envId: "env", in: directory.url)
        let newer = try FlagshipDatabase.open(at: url)
        try newer.database.write { try $0.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)") }
        newer.close()
        let log = LogCapture()

        let store = try XCTUnwrap(LocalStore.openOrFallBack(envId: "env", directory: directory.url, logger: log.logger))

        XCTAssertEqual(store.database.path, ":memory:")
        let errors = log.messages(at: .error)
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors[0].contains("schema version 99, newer than version \(Migrator().latestVersion)"), errors[0])
        XCTAssertTrue(errors[0].contains("in-memory cache"), errors[0])
        store.close()
    }

    func testADamagedFileIsMovedAsideAndTheErrorLogged() throws {
        let url = StoreLocation.databaseFile(envId: "env", in: directory.url)
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try garbage.write(to: url)
        let log = LogCapture()

        let store = try LocalStore.open(envId: "env", directory: directory.url, logger: log.logger)
        defer { store.close() }

        let movedAside = try XCTUnwrap(store.opening.movedAside)
        XCTAssertEqual(try Data(contentsOf: movedAside.url), garbage)
        XCTAssertEqual(log.messages(at: .error).count, 1)
        XCTAssertTrue(log.messages(at: .error)[0].contains(movedAside.url.path))
        XCTAssertEqual(store.schemaVersion, Migrator().latestVersion)
    }
}
