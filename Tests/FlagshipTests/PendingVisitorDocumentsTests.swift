import FlagshipStore
import XCTest

@testable import Flagship

/// The visitor documents waiting for a group commit: a newer document of a visitor replaces the
/// waiting one, and the decisions of the one it replaces are never lost with it.
final class PendingVisitorDocumentsTests: XCTestCase {
    /// A document of `visitor`, written at `time`, with the assignments of `groups`.
    @discardableResult
    private func put(_ visitor: String, at time: Int64, decided groups: [String], into pending: PendingVisitorDocuments) -> Bool {
        pending.put(document: VisitorCacheDocument(visitorId: visitor), updatedAt: time,
                    decisions: groups.map { group in
                        DecisionRecord(visitorId: visitor, decidedAt: time, campaignId: "c-" + group, variationGroupId: group,
                                       variationId: "v", source: .bucketingFile, reason: "SPLIT", fileVersion: nil,
                                       context: "{}", flags: nil)
                    }, fromFile: false)
    }

    func testANewerDocumentReplacingAWaitingOneCarriesItsDecisions() {
        let pending = PendingVisitorDocuments()
        XCTAssertTrue(put("alice", at: 1, decided: ["g1"], into: pending))
        XCTAssertFalse(put("alice", at: 2, decided: ["g2"], into: pending), "one write already scheduled")

        let taken = pending.take()

        XCTAssertEqual(taken.map(\.record.updatedAt), [2], "the newest document")
        XCTAssertEqual(taken.first?.record.decisions.map(\.variationGroupId), ["g1", "g2"])
    }

    func testADocumentTakenByACommitKeepsItsDecisionsAndTheNextOneHasOnlyItsOwn() {
        let pending = PendingVisitorDocuments()
        put("bob", at: 1, decided: ["g1"], into: pending)
        let first = pending.take()
        put("bob", at: 2, decided: ["g2"], into: pending)
        pending.committed(first)

        let second = pending.take()

        XCTAssertEqual(first.first?.record.decisions.map(\.variationGroupId), ["g1"])
        XCTAssertEqual(second.first?.record.decisions.map(\.variationGroupId), ["g2"], "g1 was committed with the first")
    }

    func testAFailedCommitsDecisionsGoWithTheNewerDocumentThatReplacedIt() {
        let pending = PendingVisitorDocuments()
        put("carol", at: 1, decided: ["g1"], into: pending)
        let failed = pending.take()
        put("carol", at: 2, decided: ["g2"], into: pending)
        pending.putBack(failed)

        let retried = pending.take()

        XCTAssertEqual(retried.map(\.record.updatedAt), [2])
        XCTAssertEqual(retried.first?.record.decisions.map(\.variationGroupId), ["g1", "g2"], "nothing the failed commit held is lost")
    }

    func testAFailedCommitWithNoNewerDocumentWaitsAgainWhole() {
        let pending = PendingVisitorDocuments()
        put("dan", at: 1, decided: ["g1", "g2"], into: pending)
        let failed = pending.take()
        pending.putBack(failed)

        XCTAssertEqual(pending.take().first?.record.decisions.map(\.variationGroupId), ["g1", "g2"])
    }
}
