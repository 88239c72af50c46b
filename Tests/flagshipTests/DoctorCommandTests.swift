import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

/// `flagship doctor`: one line per check, exit 0 only when all pass, every failure named.
final class DoctorCommandTests: SampleServerCommandTestCase {
    private func doctor(envId: String = "env", key: String = "key", decisionURL: String? = nil, eventsURL: String? = nil,
                        _ extra: [String] = [], readOnlyDirectory: URL? = nil) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.start(
            ["doctor", "--env-id", envId, "--api-key", key, "--db", storeFile.path,
             "--decision-url", decisionURL ?? server.decisionBaseURL.absoluteString,
             "--events-url", eventsURL ?? server.eventsBaseURL.absoluteString, "--timeout", "2000"] + extra,
            outputDirectory: outputDirectory, readOnlyDirectory: readOnlyDirectory)
            .waitForExit(timeout: 60)
    }

    private func line(_ check: String, in result: FlagshipExecutable.Result) -> String? {
        result.stdout.split(separator: "\n").map(String.init).first { $0.dropFirst(5).hasPrefix(check + ":") }
    }

    func testAGoodConfigurationPassesEveryCheckInBucketingMode() throws {
        // A store the SDK made and filled with the bucketing file.
        let fetch = try FlagshipExecutable.run(
            ["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", "v1", "--db", storeFile.path, "--mode", "bucketing",
             "--bucketing-url", server.bucketingBaseURL.absoluteString, "--decision-url", server.decisionBaseURL.absoluteString,
             "--events-url", server.eventsBaseURL.absoluteString],
            outputDirectory: outputDirectory)
        XCTAssertEqual(fetch.status, 0, fetch.stderr)

        let result = try doctor(["--mode", "bucketing", "--bucketing-url", server.bucketingBaseURL.absoluteString])

        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        for check in ["env id and key", "Decision API accepts the key", "events endpoint reachable", "bucketing file",
                      "store writable", "store schema", "stored bucketing file"] {
            let found = try XCTUnwrap(line(check, in: result), "no line for \(check): \(result.stdout)")
            XCTAssertTrue(found.hasPrefix("ok   "), found)
        }
        XCTAssertTrue(line("Decision API accepts the key", in: result)?.contains(" ms") == true, "how fast: \(result.stdout)")
        XCTAssertTrue(line("store schema", in: result)?.contains("current") == true, result.stdout)
        XCTAssertTrue(line("stored bucketing file", in: result)?.contains("downloaded") == true, result.stdout)
        // The decision request is for a visitor of its own, and no hit is sent.
        XCTAssertEqual(server.received(.campaigns).last?.json?["visitorId"]?.stringValue, "flagship-doctor")
        XCTAssertEqual(server.hits.filter { $0["vid"]?.stringValue == "flagship-doctor" }.count, 0)
    }

    func testEveryFailureIsNamedAndTheExitIsNonZero() throws {
        let result = try doctor(envId: "env", key: "wrong_key", eventsURL: "http://127.0.0.1:1")

        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(line("Decision API accepts the key", in: result)?.hasPrefix("FAIL") == true, result.stdout)
        XCTAssertTrue(line("Decision API accepts the key", in: result)?.contains("403") == true, result.stdout)
        XCTAssertTrue(line("events endpoint reachable", in: result)?.hasPrefix("FAIL") == true, result.stdout)
        XCTAssertTrue(line("env id and key", in: result)?.hasPrefix("ok") == true, result.stdout)
        XCTAssertTrue(result.stderr.contains("2 check(s) failed: Decision API accepts the key, events endpoint reachable"), result.stderr)
        XCTAssertFalse(result.stdout.contains("wrong_key") || result.stderr.contains("wrong_key"), "the key is never printed")
    }

    func testAnEnvIdOfNoEnvironmentAndAMissingBucketingFileFail() throws {
        let result = try doctor(envId: "other", ["--mode", "bucketing", "--bucketing-url", server.bucketingBaseURL.absoluteString])

        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(line("Decision API accepts the key", in: result)?.contains("404") == true, result.stdout)
        XCTAssertTrue(line("bucketing file", in: result)?.hasPrefix("FAIL") == true, result.stdout)
    }

    func testAMalformedEnvIdFailsItsCheck() throws {
        let result = try doctor(envId: "my env")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(line("env id and key", in: result)?.hasPrefix("FAIL") == true, result.stdout)
    }

    func testAStoreOfANewerSchemaFailsAndIsLeftAlone() throws {
        let latest = Migrator().latestVersion
        let future = Migration(version: latest + 1, name: "future", sql: "CREATE TABLE future_things (id INTEGER PRIMARY KEY);")
        try FlagshipDatabase.open(at: storeFile, migrator: Migrator(migrations: Migration.embedded + [future])).close()
        let before = try Data(contentsOf: storeFile)

        let result = try doctor()

        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(line("store schema", in: result)?.hasPrefix("FAIL") == true, result.stdout)
        XCTAssertEqual(try Data(contentsOf: storeFile), before, "doctor writes nothing")
    }

    func testAStoreInAReadOnlyDirectoryFailsTheWritableCheck() throws {
        try withStore { _ in }
        let result = try doctor(readOnlyDirectory: storeDirectory)

        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(line("store writable", in: result)?.hasPrefix("FAIL") == true, result.stdout)
    }
}
