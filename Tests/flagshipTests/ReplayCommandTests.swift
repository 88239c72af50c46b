import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

final class ReplayCommandTests: HitCommandTestCase {
    func testReplayDeliversWhatAnOfflineRunLeft() throws {
        serverDown()
        XCTAssertEqual(try sendHit(["--event", "click", "--count", "5", "--durable"]).status, 0)
        try serverUp()

        let result = try replay()

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, #"{"replayed": 6, "expired": 0, "remaining": 0}"# + "\n")
        XCTAssertEqual(receivedNumbers(action: "click"), [1, 2, 3, 4, 5])
        XCTAssertEqual(server.hits.filter { $0["ea"] == "fs_consent" }.count, 1)
        XCTAssertEqual(try storedHits(), [:])
    }

    /// Hits remain: the summary, then the failure, and exit 1, so that a script can tell.
    func testReplayWithTheServerStillDownKeepsEveryHitAndExitsOne() throws {
        serverDown()
        XCTAssertEqual(try sendHit(["--screen", "home", "--count", "2"]).status, 0)

        let result = try replay()

        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertEqual(result.stdout, #"{"replayed": 0, "expired": 0, "remaining": 3}"# + "\n")
        XCTAssertTrue(result.stderr.hasSuffix("Error: 3 hit(s) remain in \(storeFile.path): the next start (or replay) sends them\n"),
                      result.stderr)
        XCTAssertEqual(try storedHits(), [Self.consentHit: 1, StoredHit(type: "SCREENVIEW", action: nil, label: nil): 2])
    }

    /// An earlier run's failed sends left the hits under backoff (NEXT TRY an hour ahead): a
    /// replay is a request to send now, and sends them all.
    func testReplaySendsHitsWhoseBackoffHasNotEndedAndExitsZero() throws {
        serverDown()
        XCTAssertEqual(try sendHit(["--event", "late", "--count", "3", "--durable"]).status, 0)
        let later = Date().unixMilliseconds + 3_600_000
        try withStore { store in
            try store.write { db in
                let ids = try db.hits.page(limit: 100).map(\.id)
                XCTAssertEqual(ids.count, 4, "three events and the consent hit")
                try db.hits.recordFailedAttempt(ids: ids, nextAttemptAt: later)
            }
        }
        try serverUp()

        let result = try replay()

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, #"{"replayed": 4, "expired": 0, "remaining": 0}"# + "\n")
        XCTAssertEqual(receivedNumbers(action: "late"), [1, 2, 3])
        XCTAssertEqual(try storedHits(), [:])
    }

    func testReplayRefusesAStoreThatDoesNotExist() throws {
        let stderr = try stderrOfFailureLeavingStoreUntouched(["replay"] + sdkOptions())

        XCTAssertEqual(stderr, "Error: no store at \(storeFile.path): nothing to replay\n")
        XCTAssertEqual(try storeDirectoryListing(), [])
    }

    /// Two processes replay one store at once: each hit is claimed by one of them before it is
    /// sent, so the server gets every hit exactly once.
    func testTwoReplaysAtOnceDeliverEveryHitExactlyOnce() throws {
        let count = 3_000
        serverDown()
        let filled = try sendHit(["--event", "shared", "--count", "\(count)", "--durable"])
        XCTAssertEqual(filled.status, 0, filled.stderr)
        try serverUp()
        // Each batch (500 hits) takes 200 ms to be answered: the two replays overlap for sure.
        server.injectFault(.latency(.milliseconds(200)), on: .events)

        let replays = try (0..<2).map { _ in try FlagshipExecutable.start(["replay"] + sdkOptions(), outputDirectory: outputDirectory) }
        let results = try replays.map { try $0.waitForExit() }

        // The first to finish may see hits the other still holds: they remain, it says so (exit 1).
        for result in results {
            XCTAssertEqual(result.status, try summary(result)["remaining"] == 0 ? 0 : 1, result.stderr)
        }
        let replayed = try results.map { try summary($0)["replayed"] ?? -1 }
        let numbers = receivedNumbers(action: "shared")
        XCTAssertEqual(numbers.count, count, "hits received, duplicates included")
        XCTAssertEqual(Set(numbers), Set(1...count))
        XCTAssertEqual(replayed.reduce(0, +), count + 1, "the consent hit too")
        XCTAssertTrue(replayed.allSatisfy { $0 > 0 }, "each replay sent some: \(replayed)")
        XCTAssertEqual(try storedHits(), [:])
        print("two replays at once: \(count + 1) hits, replayed \(replayed), received \(numbers.count), duplicates \(numbers.count - Set(numbers).count)")
    }
}
