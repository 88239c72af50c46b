import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

/// A locked or read-only store still serves what it has (issue 18, point 10): a current store
/// opens without its write lock, so cached flags are served while another process holds a write
/// transaction, and from a read-only directory. Before, the SDK waited 5 s, then ran in memory
/// and served no cached flag.
final class HostileUnwritableStoreTests: CommandTestCase {
    private var server: LocalFlagshipServer!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = LocalFlagshipServer(envId: "env", apiKey: "key", decision: .echoingVisitorId([
            "visitorId": "", "campaigns": [[
                "id": "c1", "name": "Home", "slug": "home", "type": "ab", "variationGroupId": "vg1", "variationGroupName": "All",
                "variation": ["id": "var1", "name": "Green", "reference": false,
                              "modifications": ["type": "FLAG", "value": ["btnColor": "green"]]],
            ]],
        ]))
        try server.start()
        // Online once: the visitor and its flags are cached.
        let online = try fetch([])
        XCTAssertEqual(online.status, 0, online.stderr)
        server.stop()
    }

    override func tearDownWithError() throws {
        server.stop()
        try super.tearDownWithError()
    }

    private func fetch(_ extra: [String], readOnlyDirectory: URL? = nil) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.run(
            ["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", "v1", "--db", storeFile.path,
             "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString,
             "--timeout", "500"] + extra,
            outputDirectory: outputDirectory, readOnlyDirectory: readOnlyDirectory)
    }

    private func cachedColor(_ result: FlagshipExecutable.Result, file: StaticString = #filePath, line: UInt = #line) throws -> String? {
        let output = try XCTUnwrap(try? parseJSON(result.stdout) as? [String: Any], result.stdout + result.stderr, file: file, line: line)
        XCTAssertEqual(output["fetchReason"] as? String, "FETCHED_FROM_CACHE", result.stderr, file: file, line: line)
        return ((output["flags"] as? [String: Any])?["btnColor"] as? [String: Any])?["value"] as? String
    }

    func testCachedFlagsAreServedWhileAnotherProcessHoldsTheWriteLock() throws {
        let lock = try Database(path: storeFile.path)
        defer { lock.close() }

        let (result, took) = try lock.withConnection { connection -> (FlagshipExecutable.Result, TimeInterval) in
            _ = try connection.execute("BEGIN IMMEDIATE")
            defer { _ = try? connection.execute("ROLLBACK") }
            let started = Date()
            let result = try fetch(["--offline"])
            return (result, Date().timeIntervalSince(started))
        }

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try cachedColor(result), "green", result.stderr)
        XCTAssertTrue(result.stderr.contains("another process holds its write lock"), result.stderr)
        XCTAssertLessThan(took, 4.5, "a current store is not waited for the whole busy timeout")
    }

    func testCachedFlagsAreServedFromAReadOnlyDirectory() throws {
        try XCTSkipUnless(getuid() == 0, "mounting a directory read-only needs root (CI runs as root)")
        let before = try storeDirectoryListing()

        let result = try fetch(["--offline"], readOnlyDirectory: storeDirectory)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try cachedColor(result), "green", result.stderr)
        XCTAssertTrue(result.stderr.contains("cannot be written"), result.stderr)
        XCTAssertEqual(try storeDirectoryListing(), before)
    }
}
