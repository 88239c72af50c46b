#if ServiceLifecycle
import Flagship
import FlagshipLocalServer
import FlagshipServiceLifecycle
import FlagshipStore
import Foundation
import ServiceLifecycle
import XCTest

/// `FlagshipService` under a real `ServiceGroup` in a child process (`flagship-service-probe`),
/// stopped by SIGTERM while a flow of awaited hits runs: every hit whose `try await sendHit`
/// returned is delivered or in the store, and the process exits 0 within close()'s deadline.
final class FlagshipServiceTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-service-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func testSIGTERMMidTrafficLeavesEveryAcknowledgedHitDeliveredOrStored() async throws {
        let server = LocalFlagshipServer(envId: "lifecycle_env", apiKey: "lifecycle_key")
        try server.start()
        defer { server.stop() }
        let run = try await runProbeUntilSIGTERM(server: server, acknowledgedAtLeast: 200)

        XCTAssertEqual(run.status, 0, "the probe's output: \(run.output)")
        XCTAssertTrue(run.output.contains("closed"), run.output)
        XCTAssertTrue(run.output.contains("SDK status: SDK_NOT_INITIALIZED"), "the SDK was closed before the group ended: \(run.output)")
        XCTAssertLessThan(run.secondsAfterSIGTERM, 5 + 3, "close() keeps its 5 s deadline (plus the group's own shutdown)")
        let delivered = Set(server.hits.compactMap { $0["ea"]?.stringValue }.compactMap(Self.number))
        let stored = try storedHitNumbers()
        let missing = run.acknowledged.subtracting(delivered).subtracting(stored)
        XCTAssertTrue(missing.isEmpty, "acknowledged, then neither delivered nor in the store: \(missing.sorted().prefix(20))")
        XCTAssertFalse(delivered.isEmpty, "the server took hits while the traffic ran")
    }

    func testSIGTERMWithTheEventsEndpointNotAnsweringClosesInTimeAndKeepsTheHitsInTheStore() async throws {
        let server = LocalFlagshipServer(envId: "lifecycle_env", apiKey: "lifecycle_key")
        try server.start()
        defer { server.stop() }
        // Every batch hangs: nothing is confirmed, so every acknowledged hit must be in the store.
        server.injectFault(.latency(.seconds(60)), on: .events)
        let run = try await runProbeUntilSIGTERM(server: server, acknowledgedAtLeast: 100)

        XCTAssertEqual(run.status, 0, "the probe's output: \(run.output)")
        XCTAssertLessThan(run.secondsAfterSIGTERM, 5 + 3, "close() gives up on the hanging batch at its deadline")
        XCTAssertTrue(run.output.contains("unsent hit(s) stay in the hit cache"), "counted in one line at close: \(run.output)")
        let stored = try storedHitNumbers()
        let missing = run.acknowledged.subtracting(stored)
        XCTAssertTrue(missing.isEmpty, "acknowledged and not in the store: \(missing.sorted().prefix(20))")
    }

    func testACredentialThatCannotBeUsedFailsTheServiceAtOnce() async throws {
        let flagship = Flagship.sharedInstance
        let service = FlagshipService(flagship: flagship, envId: "lifecycle_env", apiKey: "")
        do {
            try await service.run()
            XCTFail("an empty API key must fail the service")
        } catch let error as FlagshipServiceError {
            XCTAssertEqual(error, .refused("the API key is empty"))
        }
        do {
            try await service.started()
            XCTFail("a service that refused its credentials never starts")
        } catch let error as FlagshipServiceError {
            XCTAssertEqual(error, .refused("the API key is empty"))
            XCTAssertEqual(error.code, .refused)
            XCTAssertEqual(error.reason, "the API key is empty")
        }
        XCTAssertEqual(flagship.getStatus(), .SDK_NOT_INITIALIZED)
    }

    /// The error is a struct with a code to switch on (a `default` for codes added later), its
    /// reason as a property, and the same log line as when it was an enum.
    func testTheServiceErrorHasACodeToSwitchOnItsReasonAndItsLine() {
        let error = FlagshipServiceError.refused("the env id is empty")
        switch error.code {
        case .refused: break
        default: XCTFail("a refusal has the code refused, not \(error.code)")
        }
        XCTAssertEqual(error.description, "Flagship not started: the env id is empty")
        XCTAssertEqual(error.reason, "the env id is empty")
        XCTAssertTrue(error.code == .refused)
        XCTAssertEqual(FlagshipServiceError.Code.refused, FlagshipServiceError.refused("another reason").code)
        XCTAssertEqual("\(error.code)", "refused")
        XCTAssertNotEqual(error, .refused("another reason"))
    }

    func testACancelledGroupStillClosesTheSDK() async throws {
        let server = LocalFlagshipServer(envId: "lifecycle_env", apiKey: "lifecycle_key")
        try server.start()
        defer { server.stop() }
        let config = FSConfigBuilder().DecisionApi()
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(directory.appendingPathComponent("flagship.sqlite"))
            .withLogLevel(.NONE)
            .build()
        let flagship = Flagship.sharedInstance
        let service = FlagshipService(flagship: flagship, envId: "lifecycle_env", apiKey: "lifecycle_key", config: config)
        let running = Task { try await service.run() }
        try await service.started()
        XCTAssertNotEqual(flagship.getStatus(), .SDK_NOT_INITIALIZED)
        let visitor = await flagship.newVisitor(visitorId: "cancelled", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "before-cancel"))
        running.cancel()
        try await running.value
        XCTAssertEqual(flagship.getStatus(), .SDK_NOT_INITIALIZED, "closed")
        XCTAssertTrue(server.hits.contains { $0["ea"]?.stringValue == "before-cancel" }, "the last flush sent the hit")
    }

    /// `run()` opens the store on a thread started for it (`io.flagship.start`), not on the
    /// task's: opening blocks (here a second, waiting for another connection's write lock before
    /// it reads the store instead), and the cooperative pool runs other tasks meanwhile. With the
    /// pool narrowed to one thread (`FLAGSHIP_ONE_COOPERATIVE_THREAD=1`, a job of `make test`), a
    /// start on the task's thread would leave the ticker still.
    func testTheCooperativePoolRunsOtherTasksWhileTheStoreOpens() async throws {
        let url = directory.appendingPathComponent("flagship.sqlite")
        try FlagshipDatabase.open(at: url).close()
        let holder = try Database(path: url.path)
        defer { holder.close() }
        try holder.withConnection { _ = try $0.execute("BEGIN IMMEDIATE") }
        let config = FSConfigBuilder().DecisionApi().withCacheFile(url).withLogLevel(.NONE).build()
        let service = FlagshipService(flagship: Flagship(), envId: "lifecycle_env", apiKey: "lifecycle_key", config: config)
        let ticks = Locked(0)
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(10))
                ticks.withLock { $0 += 1 }
            }
        }
        let started = ContinuousClock.now
        let running = Task { try await service.run() }
        try await service.started()
        let took = ContinuousClock.now - started
        let ticked = ticks.withLock { $0 }
        ticker.cancel()
        running.cancel()
        try await running.value
        try holder.withConnection { _ = try $0.execute("ROLLBACK") }
        XCTAssertGreaterThan(took, .milliseconds(800), "the start waited for the write lock")
        XCTAssertGreaterThan(ticked, 20, "other tasks ran while the store opened")
    }

    func testWaitingForTheStartEndsWithTheWaitersCancellation() async throws {
        let service = FlagshipService(envId: "lifecycle_env", apiKey: "lifecycle_key")
        let waiting = Task { try await service.started() }
        waiting.cancel()
        do {
            try await waiting.value
            XCTFail("a service never run does not start")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
    }

    // MARK: The child process

    private struct ProbeRun {
        let status: Int32
        let output: String
        let acknowledged: Set<Int>
        let secondsAfterSIGTERM: Double
    }

    /// Starts the probe, waits until it has acknowledged `count` hits, sends SIGTERM, waits for it.
    private func runProbeUntilSIGTERM(server: LocalFlagshipServer, acknowledgedAtLeast count: Int) async throws -> ProbeRun {
        let process = Process()
        process.executableURL = try Self.probe()
        process.arguments = [server.decisionBaseURL.absoluteString, server.eventsBaseURL.absoluteString,
                             directory.appendingPathComponent("flagship.sqlite").path]
        let stdoutURL = directory.appendingPathComponent("probe.stdout")
        let stderrURL = directory.appendingPathComponent("probe.stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        let startedAt = ContinuousClock.now
        while Self.acknowledged(in: try String(contentsOf: stdoutURL, encoding: .utf8)).count < count {
            guard process.isRunning, ContinuousClock.now - startedAt < .seconds(30) else {
                let output = (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? ""
                let errors = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
                throw ProbeFailure(description: "the probe did not acknowledge \(count) hits: \(output.suffix(500)) \(errors.suffix(2_000))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        kill(process.processIdentifier, SIGTERM)
        let signalled = ContinuousClock.now
        while process.isRunning {
            guard ContinuousClock.now - signalled < .seconds(30) else {
                throw ProbeFailure(description: "the probe did not exit within 30 s of SIGTERM")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let elapsed = ContinuousClock.now - signalled
        let output = try String(contentsOf: stdoutURL, encoding: .utf8)
        let errors = try String(contentsOf: stderrURL, encoding: .utf8)
        return ProbeRun(status: process.terminationStatus, output: output + errors, acknowledged: Self.acknowledged(in: output),
                        secondsAfterSIGTERM: elapsed.inSeconds)
    }

    /// The numbers of the hits left in the store after the probe exited (read without writing).
    private func storedHitNumbers() throws -> Set<Int> {
        let store = try FlagshipDatabase.openForInspection(at: directory.appendingPathComponent("flagship.sqlite"))
        let documents = try store.read { try $0.hits.page(limit: 1_000_000) }.map(\.document)
        var numbers = Set<Int>()
        for document in documents {
            guard let range = document.range(of: #""ea":"hit-[0-9]+""#, options: .regularExpression) else { continue }
            let text = document[range].dropFirst(#""ea":""#.count).dropLast()
            if let number = Self.number(String(text)) { numbers.insert(number) }
        }
        return numbers
    }

    private static func acknowledged(in output: String) -> Set<Int> {
        Set(output.split(separator: "\n").compactMap { line in
            line.hasPrefix("ack ") ? Int(line.dropFirst(4)) : nil
        })
    }

    /// `hit-12` → 12.
    private static func number(_ action: String) -> Int? {
        action.hasPrefix("hit-") ? Int(action.dropFirst(4)) : nil
    }

    private static func probe() throws -> URL {
        var directories = [Bundle.main.bundleURL, Bundle.main.executableURL?.deletingLastPathComponent()].compactMap { $0 }
        directories += Bundle.allBundles.filter { $0.bundlePath.hasSuffix(".xctest") }.map { $0.bundleURL.deletingLastPathComponent() }
        for directory in directories {
            let candidate = directory.appendingPathComponent("flagship-service-probe")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw ProbeFailure(description: "no flagship-service-probe in \(directories.map(\.path)); build it (swift build --build-tests)")
    }

    private struct ProbeFailure: Error, CustomStringConvertible {
        let description: String
    }
}
#endif
