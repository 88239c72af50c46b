import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Group commits are spaced: work that arrives while one is under way goes in one transaction
/// once the spacing after it has passed; work that finds the writer idle is committed at once, so
/// a caller awaiting each hit is never held, and a barrier (close, a flush) never waits.
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

    func testHitsAcceptedWhileACommitIsUnderWayGoTogetherOnceTheSpacingHasPassed() async throws {
        let commits = Commits()
        start(spacing: 0.5, commits: commits)
        let visitor = makeVisitor()
        try await waitForCommittedRows(1, in: commits)  // the consent hit, alone
        // Its delivery settled first: a settlement is a write on the store's queue, and one that
        // met the lock below would hold the click's commit behind it, not under way.
        _ = try await server.waitForHits(count: 1)
        await flagship.waitUntilTrackingIsIdle()
        // Another connection holds the write lock: the commit of the first click waits for it,
        // and the next nineteen arrive while it is under way.
        let holder = try Database(path: StoreLocation.databaseFile(envId: Self.envId, in: directory.url).path)
        defer { holder.close() }
        try holder.withConnection { _ = try $0.execute("BEGIN IMMEDIATE") }
        fireAndForget(visitor, click(1))
        try await waitUntil("the first click's commit waits for the lock") { visitor.runtime?.tracking.writerIsCommitting == true }
        for number in 2...20 { fireAndForget(visitor, click(number)) }
        try holder.withConnection { _ = try $0.execute("ROLLBACK") }

        try await waitForCommittedRows(21, in: commits)
        XCTAssertEqual(commits.all, [1, 1, 19], "the nineteen gathered during the commit and its spacing, then went in one transaction")
        _ = try await server.waitForHits(count: 21)
        XCTAssertEqual(deliveredClickLabels(), labels(1...20), "in the order they were accepted")
    }

    func testACallerThatAwaitsEachHitIsNeverHeldForTheSpacing() async throws {
        let commits = Commits()
        // A spacing no test could wait out: each of these commits started at once.
        start(spacing: 3_600, commits: commits)
        let visitor = makeVisitor()
        try await waitForCommittedRows(1, in: commits)  // the consent hit: the writer was idle
        for number in 1...5 { try await visitor.sendHit(click(number)) }
        XCTAssertEqual(commits.all, [1, 1, 1, 1, 1, 1], "each awaited hit found the writer idle")

        // Accepted while nothing commits: written at once too; close, a barrier, finds it written.
        fireAndForget(visitor, click(6))
        await flagship.close()
        XCTAssertEqual(commits.all.reduce(0, +), 7)
        XCTAssertEqual(deliveredClickLabels(), labels(1...6))
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
