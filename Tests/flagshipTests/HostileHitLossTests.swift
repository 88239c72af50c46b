import FlagshipStore
import Foundation
import XCTest

/// `send-hit` never reports success after losing a hit (issue 18, points 8, 9 and 18): a full
/// disk, a store locked or deleted while it runs, and hits acknowledged under periodic caching.
final class HostileHitLossTests: HitCommandTestCase {
    /// Under a file-size limit the store stops growing: the hits it could not take are counted as
    /// lost, the summary says so, and the command exits 1; every hit is delivered, waiting in the
    /// file, or lost, and what waits is in the file.
    func testAFileSizeLimitIsALossAndAFailure() throws {
        // The thread sanitizer's runtime itself dies under a 1000-block file-size limit.
        try XCTSkipIf(dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil, "the thread sanitizer cannot run under `ulimit -f`")
        serverDown()

        let result = try FlagshipExecutable.run(
            ["send-hit", "--visitor-id", "v1"] + sdkOptions() + ["--event", "fill", "--count", "5000"],
            // SIGXFSZ ignored, as a process manager (or Python's subprocess) leaves it: writes past the
            // limit then fail with EFBIG instead of killing the process.
            outputDirectory: outputDirectory, shellPrefix: "trap '' XFSZ; ulimit -f 1000")

        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertFalse(result.signaled)
        let counts = try summary(result)
        let lost = try XCTUnwrap(counts["lost"], result.stdout)
        XCTAssertGreaterThan(lost, 0)
        XCTAssertEqual(counts["delivered"], 0)
        XCTAssertEqual(try XCTUnwrap(counts["sent"]) + 1, try XCTUnwrap(counts["waiting"]) + lost, "the consent hit included")
        XCTAssertEqual(try storedHits().values.reduce(0, +), counts["waiting"], "what is waiting is in the file")
        XCTAssertTrue(result.stderr.contains("hit(s) are lost"), result.stderr)
    }

    /// A store another process keeps locked while `send-hit` runs: it stops within a bounded time
    /// and exits 1, and no hit is counted as waiting that the file does not hold.
    func testAStoreLockedMidRunStopsTheCommandWithinBoundedTime() throws {
        serverDown()
        let running = try FlagshipExecutable.start(
            ["send-hit", "--visitor-id", "v1"] + sdkOptions() + ["--event", "locked", "--count", "1000000"],
            outputDirectory: outputDirectory)
        try waitUntil(running, hasStored: 2_000)
        let lock = try Database(path: storeFile.path)
        defer { lock.close() }
        let locked = Date()

        let result = try lock.withConnection { connection -> FlagshipExecutable.Result in
            _ = try connection.execute("BEGIN IMMEDIATE")
            defer { _ = try? connection.execute("ROLLBACK") }
            return try running.waitForExit(timeout: 60)
        }

        let took = Date().timeIntervalSince(locked)
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertLessThan(took, 20, "bounded: one busy wait (5 s), then close with short waits")
        XCTAssertTrue(result.stderr.contains("stopped taking hits"), result.stderr)
        let counts = try summary(result)
        XCTAssertLessThan(try XCTUnwrap(counts["sent"]), 1_000_000)
        XCTAssertEqual(try XCTUnwrap(counts["sent"]) + 1, try XCTUnwrap(counts["waiting"]) + (counts["lost"] ?? -1))
        XCTAssertEqual(try storedHits().values.reduce(0, +), counts["waiting"], "what is waiting is in the file")
    }

    /// A store another process keeps locked when `send-hit` starts: it stops at once (after the
    /// 1 s opening wait), sending nothing, rather than acknowledge hits it cannot store.
    func testAStoreLockedAtStartStopsTheCommandBeforeSending() throws {
        try withStore { _ in }
        let lock = try Database(path: storeFile.path)
        defer { lock.close() }

        let result = try lock.withConnection { connection -> FlagshipExecutable.Result in
            _ = try connection.execute("BEGIN IMMEDIATE")
            defer { _ = try? connection.execute("ROLLBACK") }
            return try sendHit(["--event", "locked", "--count", "10"])
        }

        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("cannot be written now: another process holds its write lock"), result.stderr)
        XCTAssertEqual(server.received.count, 0, "nothing sent")
    }

    /// The store file deleted while `send-hit` runs: the hits written to it exist nowhere a
    /// restart looks, so they are lost, not waiting, and the command exits 1.
    func testAStoreDeletedMidRunIsALossNotWaitingHits() throws {
        serverDown()
        let running = try FlagshipExecutable.start(
            ["send-hit", "--visitor-id", "v1"] + sdkOptions() + ["--event", "deleted", "--count", "1000000"],
            outputDirectory: outputDirectory)
        try waitUntil(running, hasStored: 2_000)

        try FileManager.default.removeItem(at: storeFile)
        let result = try running.waitForExit(timeout: 60)

        XCTAssertEqual(result.status, 1, result.stderr)
        let counts = try summary(result)
        XCTAssertEqual(counts["waiting"], 0, "nothing waits in a deleted file")
        XCTAssertEqual(try XCTUnwrap(counts["sent"]) + 1, counts["lost"])
        XCTAssertTrue(result.stderr.contains("deleted or replaced"), result.stderr)
    }

    /// `--durable --strategy periodic`: each hit acknowledged is committed, so a kill right after
    /// the acknowledgements loses none of them (before, periodic caching acknowledged hits still
    /// in memory, and the option was refused).
    func testHitsAcknowledgedAsCommittedUnderPeriodicCachingSurviveAKill() throws {
        serverDown()
        let running = try FlagshipExecutable.start(
            ["send-hit", "--visitor-id", "v1"] + sdkOptions()
                + ["--event", "periodic", "--count", "2000", "--durable", "--strategy", "periodic"],
            outputDirectory: outputDirectory)
        let deadline = Date().addingTimeInterval(30)
        while try running.stdoutSoFar().filter({ $0 == "\n" }).count < 300 {
            guard running.process.isRunning, Date() < deadline else {
                running.kill()
                let result = try running.waitForExit()
                return XCTFail("send-hit ended or stalled before 300 acknowledgements: \(result.status) \(result.stderr)")
            }
            Thread.sleep(forTimeInterval: 0.001)
        }
        running.kill(SIGKILL)
        let killed = try running.waitForExit()

        XCTAssertTrue(killed.signaled)
        let acknowledged = killed.stdout.split(separator: "\n").filter { $0.hasPrefix("acknowledged ") }
            .compactMap { Int($0.dropFirst("acknowledged ".count)) }
        XCTAssertGreaterThanOrEqual(acknowledged.count, 300)
        let labels = Set(try storedHits().keys.compactMap(\.label))
        let missing = acknowledged.filter { !labels.contains("\($0)") }
        XCTAssertEqual(missing, [], "acknowledged under periodic caching, not in the store after kill -9")
    }

    /// Polls the store (read-only, beside the writer) until it holds `rows` hits.
    private func waitUntil(_ running: FlagshipExecutable.Running, hasStored rows: Int) throws {
        let deadline = Date().addingTimeInterval(30)
        while true {
            if FileManager.default.fileExists(atPath: storeFile.path) {
                let reader = try Database(path: storeFile.path, options: DatabaseOptions(readOnly: true))
                let count = try? reader.read { Int(try $0.scalar("SELECT count(*) FROM hits")?.int64 ?? 0) }
                reader.close()
                if let count, count >= rows { return }
            }
            guard running.process.isRunning, Date() < deadline else {
                running.kill()
                throw FlagshipExecutable.Failure("send-hit ended or stalled before \(rows) stored hits")
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }
}
