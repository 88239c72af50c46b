import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

final class DefaultVisitorCacheTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var database: FlagshipDatabase!
    private var log: LogCapture!
    private var cache: FSDefaultCacheVisitor!
    private let clock = TestClock()

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        database = try FlagshipDatabase.open(at: directory.file("flagship-env.sqlite"))
        log = LogCapture()
        cache = FSDefaultCacheVisitor(database: database, now: clock.function, logger: log.logger)
    }

    override func tearDown() {
        database.close()
        directory.remove()
    }

    func testFixturesRoundTripByteForByteWithQueryableColumns() throws {
        for (name, visitorId, anonymousId) in [("ios_visitorCache.json", "visitor_1", "anonym_0"),
                                               ("android_cache_visitor.json", "visitor_id", nil)] {
            let data = try Conformance.fixture(name)
            cache.cacheVisitor(visitorId: visitorId, data)

            XCTAssertEqual(cache.lookupVisitor(visitorId: visitorId), data, name)
            let row = try XCTUnwrap(database.read { try $0.visitors.visitor(id: visitorId) })
            XCTAssertEqual(row.anonymousId, anonymousId)
            XCTAssertTrue(row.consent)
            XCTAssertEqual(row.updatedAt, clock.now.unixMilliseconds)
        }
        XCTAssertEqual(log.entries, [])
    }

    func testSavingAgainReplacesTheDocument() throws {
        let first = VisitorCacheDocument(visitorId: "v1", consent: true, context: ["n": .int(1)]).jsonData()
        let second = VisitorCacheDocument(visitorId: "v1", anonymousId: "anon", consent: false, context: ["n": .int(2)]).jsonData()
        cache.cacheVisitor(visitorId: "v1", first)
        clock.advance(by: 10)
        cache.cacheVisitor(visitorId: "v1", second)

        XCTAssertEqual(cache.lookupVisitor(visitorId: "v1"), second)
        XCTAssertEqual(try database.read { try $0.visitors.count() }, 1)
        let row = try XCTUnwrap(database.read { try $0.visitors.visitor(id: "v1") })
        XCTAssertEqual(row.anonymousId, "anon")
        XCTAssertFalse(row.consent)
        XCTAssertEqual(row.updatedAt, clock.now.unixMilliseconds)
    }

    func testFlushForgetsOnlyThatVisitor() throws {
        cache.cacheVisitor(visitorId: "v1", VisitorCacheDocument(visitorId: "v1").jsonData())
        cache.cacheVisitor(visitorId: "v2", VisitorCacheDocument(visitorId: "v2").jsonData())

        cache.flushVisitor(visitorId: "v1")

        XCTAssertNil(cache.lookupVisitor(visitorId: "v1"))
        XCTAssertNotNil(cache.lookupVisitor(visitorId: "v2"))
    }

    func testUnknownVisitorIsNil() {
        XCTAssertNil(cache.lookupVisitor(visitorId: "nobody"))
    }

    func testInvalidDocumentsAreRefusedLoggedAndNothingIsOverwritten() throws {
        let good = VisitorCacheDocument(visitorId: "v1").jsonData()
        cache.cacheVisitor(visitorId: "v1", good)

        cache.cacheVisitor(visitorId: "v1", Data("{not json".utf8))
        cache.cacheVisitor(visitorId: "v1", VisitorCacheDocument(visitorId: "intruder").jsonData())
        cache.cacheVisitor(visitorId: "v1", Data(#"{"version":7,"data":{"visitorId":"v1"}}"#.utf8))

        XCTAssertEqual(cache.lookupVisitor(visitorId: "v1"), good)
        let errors = log.messages(at: .error)
        XCTAssertEqual(errors.count, 3)
        XCTAssertTrue(errors[0].hasPrefix("A visitor was not cached: the visitor cache document is not JSON"), errors[0])
        XCTAssertEqual(errors[1], "A visitor was not cached: the visitor cache document looked up for one visitor belongs to another")
        XCTAssertFalse(log.entries.contains { $0.level > .debug && ($0.message + $0.details).contains("intruder") }, "no id above debug")
        XCTAssertEqual(errors[2], "A visitor was not cached: the visitor cache document has version 7; only version 1 is read")
    }

    func testPublicInitialiserCreatesThePerEnvironmentFile() throws {
        let cacheDirectory = directory.url.appendingPathComponent("nested/cache", isDirectory: true)
        let publicCache = try FSDefaultCacheVisitor(envId: "env_42", cacheDirectory: cacheDirectory)
        publicCache.cacheVisitor(visitorId: "v1", VisitorCacheDocument(visitorId: "v1").jsonData())

        let file = cacheDirectory.appendingPathComponent("flagship-env_42.sqlite")
        let fileMode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int)
        let directoryMode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: cacheDirectory.path)[.posixPermissions] as? Int)
        XCTAssertEqual(fileMode & 0o777, 0o600)
        XCTAssertEqual(directoryMode & 0o777, 0o700)
        XCTAssertNotNil(publicCache.lookupVisitor(visitorId: "v1"))
    }

    func testPublicInitialiserReportsAFileItCannotUse() throws {
        let blocker = directory.file("not-a-directory")
        try Data("x".utf8).write(to: blocker)

        XCTAssertThrowsError(try FSDefaultCacheVisitor(envId: "env", cacheDirectory: blocker)) { error in
            XCTAssertTrue(String(describing: error).contains(blocker.path), "\(error)")
            XCTAssertEqual((error as? FSCacheError)?.code, .fileSystem, "\(error)")
        }
    }

    /// A caller can tell why a default cache cannot open its file, by kind, and which file it was.
    func testPublicInitialisersSayByKindWhyTheFileCannotBeUsed() throws {
        let newer = directory.url.appendingPathComponent("newer", isDirectory: true)
        let newerFile = StoreLocation.databaseFile(envId: "env", in: newer)
        let database = try FlagshipDatabase.open(at: newerFile)
        try database.database.write { try $0.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)") }
        database.close()
        let foreign = directory.url.appendingPathComponent("foreign", isDirectory: true)
        try FileManager.default.createDirectory(at: foreign, withIntermediateDirectories: true)
        let foreignFile = StoreLocation.databaseFile(envId: "env", in: foreign)
        let other = try Database(path: foreignFile.path)
        try other.write { try $0.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)") }
        other.close()

        for (folder, file, code) in [(newer, newerFile, FSCacheError.Code.schemaTooNew), (foreign, foreignFile, .notAFlagshipDatabase)] {
            XCTAssertThrowsError(try FSDefaultCacheHit(envId: "env", cacheDirectory: folder)) { error in
                XCTAssertEqual((error as? FSCacheError)?.code, code, "\(error)")
                XCTAssertEqual((error as? FSCacheError)?.path, file.path, "\(error)")
            }
            XCTAssertThrowsError(try FSDefaultCacheVisitor(envId: "env", cacheDirectory: folder)) { error in
                XCTAssertEqual((error as? FSCacheError)?.code, code, "\(error)")
            }
        }
    }
}
