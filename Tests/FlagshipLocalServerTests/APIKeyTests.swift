import Foundation
import XCTest

import FlagshipLocalServer

/// The campaigns route takes only the configured `x-api-key`, the activate route refuses a wrong
/// one; a refusal is recorded with its status, so a test sees that the SDK sent the wrong key.
final class APIKeyTests: ServerTestCase {
    func testMissingOrWrongKeyOnCampaignsIs403AndRecorded() async throws {
        let missing = try await client.post(campaignsURL, json: Self.decisionBody(), apiKey: nil)
        let wrong = try await client.post(campaignsURL, json: Self.decisionBody(), apiKey: "key_2")

        XCTAssertEqual(missing.status, 403)
        XCTAssertEqual(missing.json, ["message": "missing x-api-key header"])
        XCTAssertEqual(wrong.status, 403)
        XCTAssertEqual(wrong.json, ["message": "invalid x-api-key"])
        let recorded = server.received(.campaigns)
        XCTAssertEqual(recorded.map(\.outcome), [.answered(status: 403), .answered(status: 403)])
        XCTAssertEqual(recorded.map { $0.headers["x-api-key"] }, [nil, "key_2"])
        XCTAssertEqual(recorded.map(\.isAccepted), [false, false])
    }

    /// As the platform: an activate without a key is taken (the official Python SDK sends none),
    /// one with a wrong key is refused and its entries not counted.
    func testWrongKeyOnActivateIs403AndTheEntriesAreNotCountedAMissingOneIsTaken() async throws {
        let missing = try await activate([["vid": "u"]], apiKey: nil)
        let wrong = try await activate([["vid": "v"]], apiKey: "key_2")
        let right = try await activate([["vid": "w"]])

        XCTAssertEqual([missing.status, wrong.status, right.status], [204, 403, 204])
        XCTAssertEqual(server.received(.activate).map(\.status), [204, 403, 204])
        XCTAssertEqual(server.activates, [["vid": "u"], ["vid": "w"]])
    }

    func testEventsAndTelemetryNeedNoKey() async throws {
        let events = try await sendHits([["vid": "v", "t": "EVENT"]])
        let analytics = try await client.post(eventsURL.appendingPathComponent("analytics"), json: [:], apiKey: nil)

        XCTAssertEqual(events.status, 200)
        XCTAssertEqual(analytics.status, 200)
    }
}
