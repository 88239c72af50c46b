import Foundation
import XCTest

@testable import flagship_torture

/// The crash torture's short run (`make torture` runs 50+ kill points): a worker process fetching
/// and sending hits is killed with SIGKILL five times and restarted on the same store. Seed 16
/// gives one kill point of each kind (`flagship-torture crash --kills 5 --seed 16 --dry-run`).
final class CrashTortureTests: CommandTestCase {
    func testFiveKillPointsLoseNoAcknowledgedHitAndLeaveASoundFile() throws {
        let result = try FlagshipExecutable.run(
            ["crash", "--kills", "5", "--seed", "16", "--json", "--directory", storeDirectory.path],
            outputDirectory: outputDirectory, timeout: 240, executable: "flagship-torture"
        )

        XCTAssertEqual(result.status, 0, "\(result.stdout)\n\(result.stderr)")
        let line = try XCTUnwrap(result.stdout.split(separator: "\n").last, result.stderr)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        XCTAssertEqual(report["kills"] as? Int, 5)
        XCTAssertEqual(report["killPoints"] as? [String: Int], ["at start": 1, "batch in flight": 1, "mid-traffic": 2, "timed": 1])
        XCTAssertEqual(report["lost"] as? Int, 0)
        XCTAssertEqual(report["unexplainedDuplicates"] as? Int, 0)
        // One check after each kill and one after the drain.
        XCTAssertEqual(report["integrityChecks"] as? Int, 6)
        XCTAssertEqual(report["problems"] as? [String], [])
        let acknowledged = try XCTUnwrap(report["acknowledged"] as? Int)
        let delivered = try XCTUnwrap(report["delivered"] as? Int)
        XCTAssertGreaterThan(acknowledged, 0, "the workers must have sent hits before their kills")
        XCTAssertGreaterThanOrEqual(delivered, acknowledged)
        print("crash torture, 5 kill points: \(line)")
    }
}

/// The rules the torture judges by, on made-up runs: each must be able to say "fail".
final class CrashLedgerTests: XCTestCase {
    func testAnAcknowledgedHitNeverDeliveredIsLost() {
        let ledger = CrashLedger(runs: [
            .init(acknowledged: ["r1-1", "r1-2"], acceptedBatches: [["r1-1"]], killed: true),
            .init(acknowledged: [], acceptedBatches: [], killed: false),
        ])

        XCTAssertEqual(ledger.tally().lost, ["r1-2"])
    }

    func testAHitDeliveredAgainAfterItsBatchWasTheLastOfAKilledProcessIsAnExplainedDuplicate() {
        let ledger = CrashLedger(runs: [
            .init(acknowledged: ["r1-1", "r1-2", "r1-3"], acceptedBatches: [["r1-1"], ["r1-2", "r1-3"]], killed: true),
            .init(acknowledged: [], acceptedBatches: [["r1-2", "r1-3"]], killed: false),
        ])

        let tally = ledger.tally()

        XCTAssertEqual(tally.lost, [])
        XCTAssertEqual(tally.duplicated, 2)
        XCTAssertEqual(tally.unexplainedDuplicates, [])
        XCTAssertEqual(tally.delivered, 3)
    }

    func testAHitDeliveredAgainFromAnEarlierBatchIsUnexplained() {
        let ledger = CrashLedger(runs: [
            .init(acknowledged: ["r1-1", "r1-2"], acceptedBatches: [["r1-1"], ["r1-2"]], killed: true),
            .init(acknowledged: [], acceptedBatches: [["r1-1"]], killed: false),
        ])

        XCTAssertEqual(ledger.tally().unexplainedDuplicates, ["r1-1"])
    }

    func testAHitDeliveredTwiceByAProcessThatWasNotKilledIsUnexplained() {
        let ledger = CrashLedger(runs: [
            .init(acknowledged: ["r1-1"], acceptedBatches: [["r1-1"], ["r1-1"]], killed: false),
        ])

        XCTAssertEqual(ledger.tally().unexplainedDuplicates, ["r1-1"])
        XCTAssertEqual(ledger.tally().duplicated, 1)
    }

    func testAHitCommittedButKilledBeforeItsAckLineCountsAsDeliveredUnacknowledged() {
        let ledger = CrashLedger(runs: [
            .init(acknowledged: ["r1-1"], acceptedBatches: [], killed: true),
            .init(acknowledged: [], acceptedBatches: [["r1-1", "r1-2"]], killed: false),
        ])

        let tally = ledger.tally()

        XCTAssertEqual(tally.deliveredUnacknowledged, 1)
        XCTAssertEqual(tally.acknowledged, 1)
        XCTAssertEqual(tally.lost, [])
    }
}
