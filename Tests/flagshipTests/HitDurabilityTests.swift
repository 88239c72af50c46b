import FlagshipStore
import Foundation
import XCTest

/// `send-hit --durable` killed with SIGKILL at chosen points: the store must stay sound, and every
/// hit it acknowledged must reach the server once a replay runs.
final class HitDurabilityTests: HitCommandTestCase {
    /// After how many `acknowledged` lines the process is killed: at its first hits, during the
    /// first send attempts and their backoff, and late in the run.
    private static let killPoints = [1, 37, 200, 650, 1_500]
    private static let hitsPerRun = 2_000

    func testEveryAcknowledgedHitSurvivesAKillAndIsReplayed() throws {
        var report: [String] = []
        for killPoint in Self.killPoints {
            let db = storeDirectory.appendingPathComponent("killed-at-\(killPoint).sqlite")
            serverDown()

            let killed = try runKilled(after: killPoint, db: db)

            XCTAssertTrue(killed.signaled, "killed at \(killPoint): \(killed.stderr)")
            let acknowledged = try acknowledgedNumbers(killed.stdout)
            XCTAssertGreaterThanOrEqual(acknowledged.count, killPoint)
            XCTAssertEqual(acknowledged, Array(1...max(1, acknowledged.count)), "acknowledged in order, none skipped")
            XCTAssertEqual(try integrityCheck(db), ["ok"], "killed at \(killPoint)")
            let stranded = try claimedRows(db)

            try serverUp()
            let replayed = try replay(db: db)

            XCTAssertEqual(replayed.status, 0, replayed.stderr)
            XCTAssertEqual(try summary(replayed)["remaining"], 0, "killed at \(killPoint)")
            let received = receivedNumbers(action: "durable")
            let lost = Set(acknowledged).subtracting(received)
            XCTAssertEqual(lost.sorted(), [], "acknowledged but never delivered, killed at \(killPoint)")
            let stored = Set(received).subtracting(acknowledged)
            report.append("kill after \(killPoint) line(s): acknowledged \(acknowledged.count), lost \(lost.count), "
                + "duplicated \(received.count - Set(received).count), committed but not yet acknowledged \(stored.count), "
                + "claims left by the killed process \(stranded)")
        }
        print(report.joined(separator: "\n"))
    }

    /// Starts `send-hit --durable --count 2000` and kills it with SIGKILL once it has printed at
    /// least `killPoint` acknowledgements.
    private func runKilled(after killPoint: Int, db: URL) throws -> FlagshipExecutable.Result {
        let arguments = ["send-hit", "--visitor-id", "v1"] + sdkOptions(db: db)
            + ["--event", "durable", "--label", "k\(killPoint)", "--count", "\(Self.hitsPerRun)", "--durable"]
        let running = try FlagshipExecutable.start(arguments, outputDirectory: outputDirectory)
        let deadline = Date().addingTimeInterval(30)
        while try running.stdoutSoFar().split(separator: "\n").count < killPoint {
            guard running.process.isRunning, Date() < deadline else {
                running.kill()
                throw FlagshipExecutable.Failure("send-hit ended or stalled before \(killPoint) acknowledgements")
            }
            Thread.sleep(forTimeInterval: 0.001)
        }
        running.kill(SIGKILL)
        return try running.waitForExit()
    }

    /// The numbers of the complete `acknowledged <n>` lines.
    private func acknowledgedNumbers(_ stdout: String) throws -> [Int] {
        var lines = stdout.split(separator: "\n", omittingEmptySubsequences: false)
        // After the last newline: nothing, or half a line the kill cut short.
        lines.removeLast()
        return try lines.map { line in
            guard line.hasPrefix("acknowledged "), let number = Int(line.dropFirst("acknowledged ".count)) else {
                throw FlagshipExecutable.Failure("unexpected line '\(line)'")
            }
            return number
        }
    }

    /// `PRAGMA integrity_check` on the file as the killed process left it (its WAL included).
    private func integrityCheck(_ db: URL) throws -> [String] {
        let database = try Database(path: db.path, options: DatabaseOptions(readOnly: true))
        defer { database.close() }
        return try database.read { try $0.query("PRAGMA integrity_check").compactMap { $0[0].text } }
    }

    /// A process killed while sending leaves its claim on the rows it was sending; the replay
    /// must release them itself (their owner no longer runs), not wait a minute for them to
    /// lapse. Returns how many rows it held.
    private func claimedRows(_ db: URL) throws -> Int {
        let database = try Database(path: db.path, options: DatabaseOptions(readOnly: true))
        defer { database.close() }
        return try database.read { Int(try $0.scalar("SELECT count(*) FROM hits WHERE lease_owner IS NOT NULL")?.int64 ?? 0) }
    }
}
