import FlagshipStore
import XCTest

@testable import Flagship

/// The visitor documents waiting for a group commit: a newer document of a visitor replaces the
/// waiting one, and the decisions of the one it replaces are never lost with it.
final class PendingVisitorDocumentsTests: XCTestCase {
    private func record(_ visitor: String, at time: Int64, decided groups: [String]) -> VisitorRecord {
        VisitorRecord(visitorId: visitor, anonymousId: nil, consent: true, document: "{}", updatedAt: time,
                      decisions: groups.map { group in
                          DecisionRecord(visitorId: visitor, decidedAt: time, campaignId: "c-" + group, variationGroupId: group,
                                         variationId: "v", source: .bucketingFile, reason: "SPLIT", fileVersion: nil,
                                         context: "{}", flags: nil)
                      })
    }

    func testANewerDocumentReplacingAWaitingOneCarriesItsDecisions() {
        let pending = PendingVisitorDocuments()
        XCTAssertTrue(pending.put(record("alice", at: 1, decided: ["g1"])))
        XCTAssertFalse(pending.put(record("alice", at: 2, decided: ["g2"])), "one write already scheduled")

        let taken = pending.take()

        XCTAssertEqual(taken.map(\.record.updatedAt), [2], "the newest document")
        XCTAssertEqual(taken.first?.record.decisions.map(\.variationGroupId), ["g1", "g2"])
    }

    func testADocumentTakenByACommitKeepsItsDecisionsAndTheNextOneHasOnlyItsOwn() {
        let pending = PendingVisitorDocuments()
        pending.put(record("bob", at: 1, decided: ["g1"]))
        let first = pending.take()
        pending.put(record("bob", at: 2, decided: ["g2"]))
        pending.committed(first)

        let second = pending.take()

        XCTAssertEqual(first.first?.record.decisions.map(\.variationGroupId), ["g1"])
        XCTAssertEqual(second.first?.record.decisions.map(\.variationGroupId), ["g2"], "g1 was committed with the first")
    }

    func testAFailedCommitsDecisionsGoWithTheNewerDocumentThatReplacedIt() {
        let pending = PendingVisitorDocuments()
        pending.put(record("carol", at: 1, decided: ["g1"]))
        let failed = pending.take()
        pending.put(record("carol", at: 2, decided: ["g2"]))
        pending.putBack(failed)

        let retried = pending.take()

        XCTAssertEqual(retried.map(\.record.updatedAt), [2])
        XCTAssertEqual(retried.first?.record.decisions.map(\.variationGroupId), ["g1", "g2"], "nothing the failed commit held is lost")
    }

    func testAFailedCommitWithNoNewerDocumentWaitsAgainWhole() {
        let pending = PendingVisitorDocuments()
        pending.put(record("dan", at: 1, decided: ["g1", "g2"]))
        let failed = pending.take()
        pending.putBack(failed)

        XCTAssertEqual(pending.take().first?.record.decisions.map(\.variationGroupId), ["g1", "g2"])
    }
}
