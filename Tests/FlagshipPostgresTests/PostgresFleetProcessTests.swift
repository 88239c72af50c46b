#if Postgres
import FlagshipLocalServer
import FlagshipStore
import Foundation
import PostgresTestSupport
import XCTest

@testable import Flagship
@testable import FlagshipPostgres

/// Instances of a fleet as processes of their own (`flagship-fleet-probe`) on one PostgreSQL
/// store: a visitor keeps its variation from one process to the next, a consent withdrawal in
/// one erases the visitor for all, and a process killed with SIGKILL mid-batch loses nothing.
final class PostgresFleetProcessTests: PostgresTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-fleet-processes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A checkout test for everyone: `greenShare` % of visitors to green, the rest to blue.
    static func bucketingFile(greenShare: Int) -> Data {
        let file: [String: Any] = [
            "panic": false,
            "campaigns": [[
                "id": "c_checkout", "name": "Checkout button", "type": "ab",
                "variationGroups": [[
                    "id": "vg_checkout", "name": "Everyone",
                    "targeting": ["targetingGroups": [["targetings": [["key": "fs_all_users", "operator": "EQUALS", "value": ""]]]]],
                    "variations": [
                        ["id": "v_blue", "name": "Original", "reference": true, "allocation": 100 - greenShare,
                         "modifications": ["type": "FLAG", "value": ["btnColor": "blue"]]],
                        ["id": "v_green", "name": "Green", "allocation": greenShare,
                         "modifications": ["type": "FLAG", "value": ["btnColor": "green"]]],
                    ],
                ]],
            ]],
        ]
        // A literal of plain values always serializes.
        return try! JSONSerialization.data(withJSONObject: file, options: [.sortedKeys])
    }

    /// Instance A decides for a visitor on a 50/50 file; the file moves to 10/90, which would move
    /// that visitor; instance B, another process with a local store of its own, gives the same
    /// variation: the assignment history it read is the one A wrote to PostgreSQL.
    func testVisitorDecidedOnOneProcessKeepsItsVariationInAnotherAfterTheAllocationsChange() async throws {
        let postgres = try postgres()
        let database = try await migratedDatabase(postgres)
        let before = Self.bucketingFile(greenShare: 50), after = Self.bucketingFile(greenShare: 90)
        // A visitor the new split moves from blue to green (the engine is the oracle).
        let (beforeFile, afterFile) = (try BucketingFile(json: before), try BucketingFile(json: after))
        let moved = try XCTUnwrap((0..<1000).map { "visitor-\($0)" }.first { id in
            beforeFile.decide(visitorId: id, context: [:], history: [:]).campaigns.first?.variationId == "v_blue"
                && afterFile.decide(visitorId: id, context: [:], history: [:]).campaigns.first?.variationId == "v_green"
        })
        let server = try startedFleetServer()
        defer { server.stop() }
        try server.setBucketingFile(before)

        let onA = try await ProbeProcess.run(["decide", postgres.url(database), server.baseURL.absoluteString,
                                              directory.appendingPathComponent("a").path, moved], password: postgres.password)
        XCTAssertEqual(onA.lines, ["variation c_checkout v_blue"], onA.errors)
        try server.setBucketingFile(after)
        // B must decide on the new file: the fleet's copy of the old one is removed.
        _ = try postgres.psql(database, "DELETE FROM flagship.bucketing")
        let onB = try await ProbeProcess.run(["decide", postgres.url(database), server.baseURL.absoluteString,
                                              directory.appendingPathComponent("b").path, moved], password: postgres.password)
        XCTAssertEqual(onB.lines, ["variation c_checkout v_blue"], "kept by the shared assignment history: \(onB.errors)")
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.visitors WHERE visitor_id = '\(moved)'"), "1")
        // A visitor nobody decided before follows the new split on B's file, read back from the fleet.
        let stored = try postgres.psql(database, "SELECT document FROM flagship.bucketing WHERE env_id = 'fleet_env'")
        XCTAssertEqual(try BucketingFile(json: Data(stored.utf8)).campaignCount, 1, "B shared the file it downloaded")
    }

    /// A visitor's hits wait in the shared table (the events endpoint fails) and its document is
    /// there too; another process withdraws the visitor's consent: its row and its hits go for
    /// every instance (one statement), its consent hits stay, and instance A no longer finds it.
    func testConsentWithdrawnInOneProcessErasesTheVisitorForEveryInstance() async throws {
        let postgres = try postgres()
        let database = try await migratedDatabase(postgres)
        let server = try startedFleetServer()
        defer { server.stop() }
        let failing = server.injectFault(.status(500), on: .events)
        let store = store(postgres, database: database)
        try await store.prepare()
        let flagship = Flagship()
        // Seconds added to instance A's clock: how the test moves past its hot visitors' lifetime.
        let offset = Locked(0.0)
        flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
            .withDecisionBaseURL(server.decisionBaseURL).withEventsBaseURL(server.eventsBaseURL)
            .withCacheDirectory(directory.appendingPathComponent("a"))
            .withLogLevel(.NONE)
            .withClock { Date().addingTimeInterval(offset.withLock { $0 }) }
            .withPostgresStore(store).build())
        let visitor = await flagship.newVisitor(visitorId: "leaving", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()
        for number in 1...5 {
            try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "click-\(number)"))
        }
        await flagship.currentRuntime?.flushCaches()
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.visitors WHERE visitor_id = 'leaving'"), "1")
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE visitor_id = 'leaving' AND NOT is_consent"), "5")

        let erasing = try await ProbeProcess.run(["erase", postgres.url(database), server.baseURL.absoluteString,
                                                  directory.appendingPathComponent("b").path, "leaving"], password: postgres.password)
        XCTAssertEqual(erasing.lines, [], erasing.errors)
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.visitors WHERE visitor_id = 'leaving'"), "0")
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE visitor_id = 'leaving' AND NOT is_consent"), "0")
        XCTAssertNotEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE visitor_id = 'leaving' AND is_consent"), "0",
                          "the withdrawal's own consent hit waits to be sent")
        // Instance A keeps the visitor it served in memory for the hot visitors' lifetime (2 s), the
        // documented bound; past it, it reads the shared store: the visitor is gone there too.
        offset.withLock { $0 += 2 }
        let lookup = await flagship.currentRuntime?.caches?.lookupVisitor("leaving")
        XCTAssertEqual(lookup, CacheService.VisitorLookup.notFound, "instance A reads the shared store: the visitor is gone there too")
        server.removeFault(failing)
        await flagship.close()
        await store.close()
    }

    /// Three processes send 150 awaited events each while the events endpoint answers slowly;
    /// one is killed with SIGKILL mid-flow. Every acknowledged hit reaches the server (the
    /// killed process's claims lapse and the others send them), each once but for the batch the
    /// killed process had in flight.
    func testProcessKilledMidBatchLeavesItsAcknowledgedHitsToTheOthers() async throws {
        let postgres = try postgres()
        let database = try await migratedDatabase(postgres)
        let server = try startedFleetServer()
        defer { server.stop() }
        let slow = server.injectFault(.latency(.milliseconds(200)), on: .events)
        let probes = try (0..<3).map { number in
            try ProbeProcess(["send", postgres.url(database), server.baseURL.absoluteString,
                              directory.appendingPathComponent("p\(number)").path, "p\(number)", "150", "2"], password: postgres.password)
        }
        defer { for probe in probes { probe.kill() } }
        // A connection open before the kill: the claims are counted at once after it. Counted by
        // `psql`, a process started after the kill, they were once counted more than the lease
        // (2 s) later on a loaded machine, when the others had taken them over already: 0 held,
        // and the duplicates of what the killed process sent seemed to come from nowhere.
        let observer = try await connect(postgres, database: database)
        try await probes[0].waitForLine(timeout: .seconds(60)) { _ in probes[0].acknowledged.count >= 60 }
        probes[0].kill()
        // What the killed process held: sent or not, the others send it again once the claims lapse.
        let heldRows = try await observer.query("SELECT count(*) FROM flagship.hits WHERE lease_owner LIKE \("% pid \(probes[0].pid) %")",
                                                logger: logger).collect()
        let held = Int(try heldRows.first?.decode(Int64.self) ?? -1)
        try await observer.close()
        for probe in probes.dropFirst() { try await probe.waitForLine(timeout: .seconds(60)) { $0 == "sent" } }
        server.removeFault(slow)
        let acknowledged = probes.map(\.acknowledged).reduce(into: Set<String>()) { $0.formUnion($1) }
        XCTAssertGreaterThanOrEqual(acknowledged.count, 360)

        // The killed process's claims lapse after 2 s; the others take its hits then, and the
        // shared table empties.
        let deadline = ContinuousClock.now + .seconds(60)
        var delivered: [String] = []
        while ContinuousClock.now < deadline {
            delivered = server.hits.compactMap { $0["ea"]?.stringValue }.filter { $0.hasPrefix("p") }
            if acknowledged.isSubset(of: Set(delivered)), try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE NOT is_consent") == "0" {
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        for probe in probes.dropFirst() { probe.closeInput() }
        for probe in probes.dropFirst() { try await probe.waitForLine(timeout: .seconds(30)) { $0 == "closed" } }
        let lost = acknowledged.subtracting(delivered)
        let duplicated = delivered.count - Set(delivered).count
        print("fleet kill test: 3 processes, 1 killed holding \(held) hit(s), \(acknowledged.count) acknowledged, \(lost.count) lost, \(duplicated) duplicated")
        XCTAssertEqual(lost, [], "every acknowledged hit is delivered")
        XCTAssertLessThanOrEqual(duplicated, held, "duplicates only among the hits the killed process held")
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE NOT is_consent"), "0")
    }
}

/// A `flagship-fleet-probe` process: its output lines as they come, its standard input held open.
final class ProbeProcess: @unchecked Sendable {
    // `@unchecked`: `output` and `errorOutput` are read and written under `lock` only.
    private let process = Process()
    private let input = Pipe()
    private let lock = NSLock()
    private var output = ""
    private var errorOutput = ""

    init(_ arguments: [String], password: String) throws {
        process.executableURL = try Self.executable()
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PGPASSWORD"] = password
        process.environment = environment
        let (stdout, stderr) = (Pipe(), Pipe())
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = input
        stdout.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            self?.lock.withLock { self?.output += String(decoding: data, as: UTF8.self) }
        }
        stderr.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            self?.lock.withLock { self?.errorOutput += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
    }

    /// Runs a probe to its end (standard input closed at once); its lines and its errors.
    static func run(_ arguments: [String], password: String, timeout: Duration = .seconds(60)) async throws -> (lines: [String], errors: String) {
        let probe = try ProbeProcess(arguments, password: password)
        probe.closeInput()
        try await probe.waitForLine(timeout: timeout) { $0 == "closed" }
        return (probe.lines.filter { $0 != "closed" }, probe.errors)
    }

    var lines: [String] {
        lock.withLock { output.split(separator: "\n").map(String.init) }
    }

    var errors: String {
        lock.withLock { errorOutput }
    }

    /// The events whose `sendHit` returned.
    var acknowledged: Set<String> {
        Set(lines.compactMap { $0.hasPrefix("ack ") ? String($0.dropFirst(4)) : nil })
    }

    /// Waits until a line satisfies `condition`; fails when the process ends first or the time is up.
    func waitForLine(timeout: Duration, _ condition: @escaping (String) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if lines.contains(where: condition) { return }
            if !process.isRunning {
                try await Task.sleep(for: .milliseconds(50))   // the last output may still be on its way
                if lines.contains(where: condition) { return }
                throw ProbeFailure(description: "the probe ended (status \(process.terminationStatus)) first: \(lines.suffix(5)) \(errors)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ProbeFailure(description: "no such line within \(timeout): \(lines.suffix(5)) \(errors)")
    }

    var pid: Int32 { process.processIdentifier }

    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// SIGKILL: no chance to close anything.
    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    private static func executable() throws -> URL {
        var directories = [Bundle.main.bundleURL, Bundle.main.executableURL?.deletingLastPathComponent()].compactMap { $0 }
        directories += Bundle.allBundles.filter { $0.bundlePath.hasSuffix(".xctest") }.map { $0.bundleURL.deletingLastPathComponent() }
        for directory in directories {
            let candidate = directory.appendingPathComponent("flagship-fleet-probe")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw ProbeFailure(description: "no flagship-fleet-probe in \(directories.map(\.path)); build it (swift build --build-tests)")
    }

    struct ProbeFailure: Error, CustomStringConvertible {
        let description: String
    }
}
#endif
