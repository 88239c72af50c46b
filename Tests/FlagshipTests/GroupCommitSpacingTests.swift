import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// Group commits are spaced: work that arrives while one is under way, or within the spacing
/// after it, goes in one transaction once the spacing has passed; an idle writer commits at
/// once, and a barrier (close, a flush) is never held for the spacing.
final class GroupCommitSpacingTests: TrackingTestCase {
    /// Each group commit's rows, in order (`FlagshipInstrumentation.committed`).
    private final class Commits: FlagshipInstrumentation, @unchecked Sendable {
        private let lock = NSLock()
        private var rows: [Int] = []

        func committed(rows: Int, duration: Duration) {
            lock.withLock { self.rows.append(rows) }
        }

        var all: [Int] { lock.withLock { rows } }
    }

    private func start(spacing: TimeInterval, commits: Commits) {
        start(trackingBuilder().withInstrumentation(commits).withTrackingSettings { settings in
            settings.commitSpacing = spacing
        })
    }

    /// Waits (on the wall clock: the spacing is not the SDK's clock) until `rows` hits are committed.
    private func waitForCommittedRows(_ rows: Int, in commits: Commits, within seconds: TimeInterval = 20) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while commits.all.reduce(0, +) < rows {
            guard Date() < deadline else {
                XCTFail("\(commits.all.reduce(0, +)) of \(rows) hits committed after \(seconds) s: \(commits.all)")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func testHitsAcceptedWithinTheSpacingGoInOneTransaction() async throws {
        let commits = Commits()
        // Two seconds: the twenty hits below are accepted within microseconds of each other,
        // far within it even on a loaded machine.
        start(spacing: 2, commits: commits)
        let visitor = makeVisitor()
        try await waitForCommittedRows(1, in: commits)  // the consent hit, alone
        for number in 1...20 { fireAndForget(visitor, click(number)) }

        try await waitForCommittedRows(21, in: commits)
        XCTAssertEqual(commits.all, [1, 20], "the twenty hits gathered during the spacing, then went in one transaction")
        _ = try await server.waitForHits(count: 21)
        XCTAssertEqual(deliveredClickLabels(), labels(1...20), "in the order they were accepted")
    }

    func testAnIdleWriterCommitsAtOnceAndAnAwaitedHitIsNotHeldLonger() async throws {
        let commits = Commits()
        // A spacing no test could wait out: what commits here did not wait for it.
        start(spacing: 3_600, commits: commits)
        let started = Date()
        let visitor = makeVisitor()
        try await waitForCommittedRows(1, in: commits)  // the consent hit: the writer was idle
        XCTAssertLessThan(Date().timeIntervalSince(started), 60)
        XCTAssertEqual(commits.all, [1])

        // Accepted within the spacing: it waits for it, or for a barrier. Close is one, and
        // writes it at once; the hit is then delivered by close's last send.
        fireAndForget(visitor, click(1))
        await flagship.close()
        XCTAssertEqual(commits.all, [1, 1])
        XCTAssertEqual(deliveredClickLabels(), labels(1...1))
        XCTAssertEqual(try storedHits(), [])
    }

    func testWithoutSpacingEveryCommitStartsAsSoonAsTheLastEnds() async throws {
        let commits = Commits()
        start(spacing: 0, commits: commits)
        let visitor = makeVisitor()
        try await waitForCommittedRows(1, in: commits)  // the consent hit
        for number in 1...50 { try await visitor.sendHit(click(number)) }  // each awaited: one commit apiece
        try await waitForCommittedRows(51, in: commits)
        XCTAssertEqual(commits.all.count, 51, "\(commits.all)")
    }
}
