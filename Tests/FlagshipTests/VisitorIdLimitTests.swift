import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// A visitor id longer than `FSVisitor.maximumIdBytes` (a JWT passed as the id) once reached the
/// stores, whose indexes refuse it on PostgreSQL and failed a fleet's whole group commit. Now it
/// is stopped where it enters: the hit is refused naming the field, and nothing of it is kept.
final class VisitorIdLimitTests: TrackingTestCase {
    /// 1,026 bytes in UTF-8 (513 two-byte characters): past the limit by bytes, not by characters.
    private let tooLong = String(repeating: "é", count: FSVisitor.maximumIdBytes / 2 + 1)

    private func refusal(_ visitor: FSVisitor) async -> FSHitValidationError? {
        do {
            try await visitor.sendHit(click(9))
            return nil
        } catch let error as FlagshipError where error.code == .invalidHit {
            return error.hitValidation
        } catch {
            XCTFail("not an invalid hit: \(error)")
            return nil
        }
    }

    func testHitsOfAVisitorWhoseIdIsPastTheLimitAreRefusedNamingTheFieldAndNothingOfItIsKept() async throws {
        start(trackingBuilder())
        let longest = makeVisitor(String(repeating: "a", count: FSVisitor.maximumIdBytes))
        try await longest.sendHit(click(1))

        let anonymous = makeVisitor(tooLong)
        let asAnonymous = await refusal(anonymous)
        let authenticated = makeVisitor("anonymous-1")
        authenticated.authenticate(visitorId: tooLong)
        let asCustomer = await refusal(authenticated)
        try await anonymous.fetchFlags()
        _ = anonymous.getFlag(key: "btnColor").value(defaultValue: "blue")
        await flagship.waitUntilTrackingIsIdle()
        await flagship.flushCaches()

        let detail = "must be at most 1024 bytes in UTF-8 (got 1026)"
        guard let asAnonymous, asAnonymous.code == .invalidValue, asAnonymous.hitType == "EVENT", asAnonymous.field == "vid",
              let reason = asAnonymous.why, reason.hasPrefix(detail) else {
            return XCTFail("\(String(describing: asAnonymous))")
        }
        guard let asCustomer, asCustomer.code == .invalidValue, asCustomer.hitType == "EVENT", asCustomer.field == "cuid",
              let reason = asCustomer.why, reason.hasPrefix(detail) else {
            return XCTFail("\(String(describing: asCustomer))")
        }
        // Nothing of the long id reached the server, nor stayed in the store; the id of exactly
        // the limit went through.
        let received = server.hits + server.activates
        let ids = received.flatMap { wire in ["vid", "cuid", "aid"].compactMap { wire[$0]?.stringValue } }
        XCTAssertEqual(ids.filter { $0.utf8.count > FSVisitor.maximumIdBytes }, [])
        XCTAssertTrue(ids.contains { $0.utf8.count == FSVisitor.maximumIdBytes }, "an id of exactly the limit is taken")
        let store = try inspectStore()
        defer { store.close() }
        let kept = try await store.read { db in
            try db.scalar("""
                SELECT (SELECT count(*) FROM hits WHERE length(CAST(visitor_id AS BLOB)) > 1024)
                     + (SELECT count(*) FROM visitors WHERE length(CAST(visitor_id AS BLOB)) > 1024)
                """)?.int64
        }
        XCTAssertEqual(kept, 0, "no hit or visitor document of the long id was kept")
        let text = log.allText
        XCTAssertTrue(text.contains("Consent hit not sent: EVENT hit refused: field vid"), text)
        XCTAssertTrue(text.contains("Exposure of flag 'btnColor' not sent: ACTIVATE hit refused: field vid"), text)
        XCTAssertTrue(text.contains("not cached: an id of 1026 bytes in UTF-8 is over the 1024 the store keeps"), text)
    }
}
