import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

final class FetchCommandTests: CommandTestCase {
    private var server: LocalFlagshipServer!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = LocalFlagshipServer(envId: "env", apiKey: "key", decision: .echoingVisitorId([
            "visitorId": "", "campaigns": [[
                "id": "c1", "name": "Home", "slug": "home", "type": "ab", "variationGroupId": "vg1", "variationGroupName": "All",
                "variation": ["id": "var1", "name": "Green", "reference": false,
                              "modifications": ["type": "FLAG", "value": ["btnColor": "green", "discount": 0.1, "off": nil]]],
            ]],
        ]))
        try server.start()
    }

    override func tearDownWithError() throws {
        server.stop()
        try super.tearDownWithError()
    }

    private func fetch(_ extra: String...) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.run(
            ["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", "v1", "--db", storeFile.path,
             "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString,
             "--timeout", "500"] + extra,
            outputDirectory: outputDirectory)
    }

    private func object(_ result: FlagshipExecutable.Result) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout + result.stderr)
    }

    /// The flags of the fixture's decision; `reason`: why they hold their values (the `null`
    /// one gives its default whatever the reason).
    private static func expectedFlags(_ reason: String) -> [String: [String: Any]] { [
        "btnColor": ["value": "green", "reason": reason, "campaignId": "c1", "variationGroupId": "vg1", "variationId": "var1",
                     "variationName": "Green", "isReference": false, "campaignType": "ab", "slug": "home"],
        "discount": ["value": 0.1, "reason": reason, "campaignId": "c1", "variationGroupId": "vg1", "variationId": "var1",
                     "variationName": "Green", "isReference": false, "campaignType": "ab", "slug": "home"],
        "off": ["value": NSNull(), "reason": "DEFAULT", "campaignId": "c1", "variationGroupId": "vg1", "variationId": "var1",
                "variationName": "Green", "isReference": false, "campaignType": "ab", "slug": "home"],
    ] }

    func testFetchPrintsTheVisitorsFlagsAndCachesThem() throws {
        let result = try fetch("--context", #"{"plan": "pro"}"#)

        XCTAssertEqual(result.status, 0, result.stderr)
        let output = try object(result)
        XCTAssertEqual(output["visitorId"] as? String, "v1")
        XCTAssertEqual(output["fetchStatus"] as? String, "FETCHED")
        XCTAssertEqual(output["fetchReason"] as? String, "NONE")
        XCTAssertEqual(output["sdkStatus"] as? String, "SDK_INITIALIZED")
        XCTAssertEqual(try canonicalJSON(output["flags"] as Any), try canonicalJSON(Self.expectedFlags("SPLIT")))
        XCTAssertEqual(server.received(.campaigns).last?.json?["context"]?["plan"], "pro")
        let store = try FlagshipDatabase.openForInspection(at: storeFile)
        defer { store.close() }
        XCTAssertNotNil(try store.read { try $0.visitors.visitor(id: "v1") })
    }

    func testOfflineShowsWhatTheStoreAloneGives() throws {
        XCTAssertEqual(try fetch().status, 0)
        server.stop()

        let result = try fetch("--offline")

        XCTAssertEqual(result.status, 0, result.stderr)
        let output = try object(result)
        XCTAssertEqual(output["fetchStatus"] as? String, "FETCH_REQUIRED")
        XCTAssertEqual(output["fetchReason"] as? String, "FETCHED_FROM_CACHE")
        XCTAssertEqual(try canonicalJSON(output["flags"] as Any), try canonicalJSON(Self.expectedFlags("CACHED")))
    }

    func testAFailedFetchKeepsTheCachedFlagsAndSaysWhy() throws {
        XCTAssertEqual(try fetch().status, 0)
        server.injectFault(.status(500), on: .campaigns)

        let output = try object(try fetch())

        XCTAssertEqual(output["fetchReason"] as? String, "FETCH_ERROR")
        XCTAssertEqual(try canonicalJSON(output["flags"] as Any), try canonicalJSON(Self.expectedFlags("CACHED")))
        XCTAssertTrue((output["error"] as? String)?.contains("500") ?? false, "\(output)")
    }

    /// No stored file, no bucketing server: the bootstrap decides, and says so.
    func testABootstrapFileDecidesWhenNothingElseCanWithReasonStatic() throws {
        let bootstrap = outputDirectory.appendingPathComponent("bootstrap.json")
        try Data(FlagsCommandTests.fixture.utf8).write(to: bootstrap)

        let output = try object(try fetch("--mode", "bucketing", "--bucketing-url", "http://127.0.0.1:1", "--bootstrap", bootstrap.path))

        XCTAssertEqual(output["fetchStatus"] as? String, "FETCHED")
        let flags = try XCTUnwrap(output["flags"] as? [String: [String: Any]])
        XCTAssertEqual(flags["btnColor"]?["reason"] as? String, "STATIC")
        XCTAssertEqual(flags["btnColor"]?["campaignId"] as? String, "c_checkout")
    }

    /// A FIFO (what `--bootstrap <(curl …)` gives) is read to its end once, and decides.
    func testABootstrapFIFOIsReadOnceAndDecides() throws {
        let source = outputDirectory.appendingPathComponent("bootstrap.json")
        try Data(FlagsCommandTests.fixture.utf8).write(to: source)
        let fifo = outputDirectory.appendingPathComponent("bootstrap.fifo")
        XCTAssertEqual(mkfifo(fifo.path, 0o600), 0)
        // The writer blocks until the tool opens the FIFO, and closes it once the file is written.
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", "cat \"$0\" > \"$1\"", source.path, fifo.path]
        try writer.run()

        let result = try fetch("--mode", "bucketing", "--bucketing-url", "http://127.0.0.1:1", "--offline", "--bootstrap", fifo.path)
        writer.waitUntilExit()

        XCTAssertEqual(result.status, 0, result.stderr)
        let flags = try XCTUnwrap(try object(result)["flags"] as? [String: [String: Any]], result.stdout)
        XCTAssertEqual(flags["btnColor"]?["reason"] as? String, "STATIC")
        XCTAssertEqual(writer.terminationStatus, 0)
    }

    func testABootstrapFileOverTheLimitIsRefusedNamingTheLimit() throws {
        let big = outputDirectory.appendingPathComponent("big.json")
        XCTAssertTrue(FileManager.default.createFile(atPath: big.path, contents: nil))
        let handle = try FileHandle(forWritingTo: big)
        try handle.truncate(atOffset: 10 * 1024 * 1024 + 1)
        try handle.close()

        let result = try fetch("--mode", "bucketing", "--bootstrap", big.path)

        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("cannot read the bucketing file \(big.path): it is 10485761 bytes, over the 10485760 bytes (10 MiB) a bucketing file may be"),
                      result.stderr)
    }

    func testABootstrapFileThatIsNotThereIsAnError() throws {
        let result = try fetch("--mode", "bucketing", "--bootstrap", "/nonexistent/bootstrap.json")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("cannot read the bucketing file /nonexistent/bootstrap.json"), result.stderr)
    }

    func testWithoutConsentNothingIsCached() throws {
        let output = try object(try fetch("--no-consent"))

        XCTAssertEqual(output["fetchStatus"] as? String, "FETCHED")
        let store = try FlagshipDatabase.openForInspection(at: storeFile)
        defer { store.close() }
        XCTAssertEqual(try store.read { try $0.visitors.count() }, 0)
    }

    /// As for a file written by a newer SDK: the SDK keeps working in memory, says why, and
    /// leaves the file as it was.
    func testAStoreWhoseStepsAreNotThisBuildsIsLeftUntouchedAndTheSDKSaysItRunsInMemory() throws {
        try withStore { store in
            _ = try store.database.write { try $0.execute("UPDATE schema_migrations SET name = 'initial' WHERE version = 1") }
        }
        let before = try Data(contentsOf: storeFile)

        let result = try fetch()

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try object(result)["fetchStatus"] as? String, "FETCHED")
        XCTAssertTrue(result.stderr.contains("Cannot use the cache database: \(storeFile.path) records schema step 1 as 'initial', "
            + "but this build's step 1 is 'initial_schema'"), result.stderr)
        XCTAssertTrue(result.stderr.contains("Running with an in-memory cache"), result.stderr)
        XCTAssertEqual(try Data(contentsOf: storeFile), before)
    }

    func testAContextThatIsNotAJSONObjectIsRefused() throws {
        let result = try fetch("--context", "[1, 2]")

        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("--context must be a JSON object"), result.stderr)
    }
}
