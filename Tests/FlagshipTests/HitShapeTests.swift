import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// One shape for a hit (issue 19, point 3): the wire fields are encoded once, stored as the
/// content of the hit cache document, and sent from the stored bytes without parsing them.
final class HitShapeTests: XCTestCase {
    private let identity = OutgoingHit.Identity(visitorId: "v\"1\\é", anonymousId: "anon-\u{1F600}-\"q\"")

    private func click() -> OutgoingHit {
        OutgoingHit.hit(type: "EVENT", fields: ["t": .string("EVENT"), "ec": .string("Action Tracking"),
                                                "ea": .string("click"), "el": .string("a \"quoted\" {label}"), "ev": .int(3)],
                        identity: identity, envId: "env", createdAt: 1_763_700_000_123)
    }

    private func record(_ hit: OutgoingHit, document: String? = nil) -> HitRecord {
        HitRecord(hit, document: document)
    }

    func testTheStoredDocumentIsTheHitCacheDocumentByteForByte() throws {
        for hit in [click(), OutgoingHit.activate(identity: OutgoingHit.Identity(visitorId: "v2", anonymousId: nil),
                                                  variationGroupId: "vg", variationId: "var", createdAt: 5)] {
            XCTAssertEqual(CachedHit(hit).document, hit.cacheDocument.jsonValue.jsonString(),
                           "the layout custom caches and earlier versions wrote")
            let parsed = try HitCacheDocument(FSJSONValue(parsing: Data(CachedHit(hit).document.utf8)))
            XCTAssertEqual(parsed.visitorId, hit.visitorId)
            XCTAssertEqual(parsed.anonymousId, hit.anonymousId)
        }
    }

    func testAnActivateWrittenByHandIsTheJSONOfItsFields() throws {
        for identity in [identity, OutgoingHit.Identity(visitorId: "v\u{01}\n/2", anonymousId: nil)] {
            let activate = OutgoingHit.activate(identity: identity, variationGroupId: "vg \"x\"", variationId: "var\\é", createdAt: 9)
            var fields: [String: FSJSONValue] = ["vid": .string(identity.visitorId), "caid": .string("vg \"x\""), "vaid": .string("var\\é")]
            if let anonymousId = identity.anonymousId { fields["aid"] = .string(anonymousId) }
            XCTAssertEqual(activate.wire, FSJSONValue.object(fields).jsonString())
            XCTAssertEqual(try FSJSONValue(parsing: Data(activate.wire.utf8)), .object(fields))
            XCTAssertEqual(activate, OutgoingHit(id: activate.id, type: "ACTIVATE", createdAt: 9, fields: fields))
        }
    }

    func testAClaimedRowGivesBackTheSameHitFromItsBytes() throws {
        for hit in [click(), OutgoingHit.activate(identity: identity, variationGroupId: "vg", variationId: "var", createdAt: 7)] {
            let claimed = try XCTUnwrap(OutgoingHit(record: record(hit)), "a document this SDK wrote is cut, not parsed")
            XCTAssertEqual(claimed, hit)
            XCTAssertEqual(claimed.wire, hit.wire)
        }
    }

    /// The one mapping from a hit to its row, which every store writes, and back from a claim: an
    /// activate's provenance goes both ways.
    func testAHitMapsToItsRowAndBackProvenanceIncluded() throws {
        var activate = OutgoingHit.activate(identity: identity, variationGroupId: "vg", variationId: "var", createdAt: 7)
        activate.fileVersion = String(repeating: "ab", count: 32)
        activate.decidedAt = 3
        let consent = OutgoingHit.hit(type: "EVENT", fields: ["t": .string("EVENT"), "ec": .string("User Engagement"),
                                                              "ea": .string("fs_consent"), "el": .string("android:true")],
                                      identity: identity, envId: "env", createdAt: 8)
        for hit in [click(), activate, consent] {
            let row = HitRecord(hit)
            XCTAssertEqual(row, HitRecord(id: hit.id, visitorId: hit.visitorId, type: hit.type, isConsent: hit.isConsentHit,
                                          document: CachedHit(hit).document, createdAt: hit.createdAt,
                                          fileVersion: hit.fileVersion, decidedAt: hit.decidedAt))
            XCTAssertEqual(OutgoingHit(record: row), hit, "a claimed row gives back the hit, its provenance with it")
        }
        let row = HitRecord(activate)
        XCTAssertEqual([row.fileVersion, row.decidedAt.map(String.init)], [String(repeating: "ab", count: 32), "3"])
        XCTAssertEqual([row.attempts, row.leaseOwner == nil ? 0 : 1, row.leaseUntil == nil ? 0 : 1], [0, 0, 0], "written unclaimed")
        XCTAssertTrue(HitRecord(consent).isConsent)
        XCTAssertEqual(HitRecord(click(), document: "made before").document, "made before")
    }

    func testTheEntrySentIsTheWireTextWithItsQueueTime() throws {
        let hit = click()
        let entry = hit.wireEntry(queueTime: 1_200)
        var expected = try XCTUnwrap(FSJSONValue(parsing: Data(hit.wire.utf8)).objectValue)
        expected["qt"] = .int(1_200)
        XCTAssertEqual(try FSJSONValue(parsing: Data(entry.utf8)), .object(expected))
        XCTAssertEqual(OutgoingHit(id: "x", type: "EVENT", createdAt: 0, fields: [:]).wireEntry(queueTime: 5), #"{"qt":5}"#)
    }

    func testADocumentInAnotherLayoutOrForAnotherRowIsParsedNotCut() throws {
        let hit = click()
        let document = CachedHit(hit).document
        // Another writer's key order: the same document, parsed instead.
        let reordered = #"{"version":1,"data":{"visitorId":"v","type":"EVENT","time":1,"content":{"t":"EVENT"}}}"#
        XCTAssertNil(OutgoingHit(record: record(hit, document: reordered)))
        // The row's columns say another visitor or time than the document: not trusted as cut.
        let other = HitRecord(id: hit.id, visitorId: "someone-else", type: hit.type, isConsent: false, document: document,
                              createdAt: hit.createdAt)
        XCTAssertNil(OutgoingHit(record: other))
        // A content edited into two values side by side would corrupt a whole batch body.
        let spliced = document.replacingOccurrences(of: #","content":{"#, with: #","content":{"a":1},"b":{"#)
        XCTAssertNotEqual(spliced, document)
        XCTAssertNil(OutgoingHit(record: record(hit, document: spliced)))
    }
}
