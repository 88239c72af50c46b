import Flagship
import FlagshipStore
import Foundation
import XCTest

import FlagshipLocalServer

/// What arrived is readable by tests and, when asked, appended to a JSON Lines file.
final class RecordingTests: ServerTestCase {
    func testDecisionRequestIsRecordedWithItsBodyHeadersAndQuery() async throws {
        let before = Date()
        let body: FSJSONValue = [
            "visitorId": "alice", "anonymousId": "anon-1", "context": ["plan": "pro", "age": 34, "fs_client": "swift"],
            "trigger_hit": false, "visitor_consent": true,
        ]
        _ = try await client.post(campaignsURL, json: body, apiKey: Self.apiKey)

        let recorded = try XCTUnwrap(server.received.first)
        XCTAssertEqual(server.received.count, 1)
        XCTAssertEqual(recorded.sequence, 1)
        XCTAssertEqual(recorded.route, .campaigns)
        XCTAssertEqual(recorded.request.method, "POST")
        XCTAssertEqual(recorded.request.path, "/v2/env_1/campaigns")
        XCTAssertEqual(recorded.request.envId, "env_1")
        XCTAssertEqual(recorded.request.queryValues("exposeAllKeys"), ["true"])
        XCTAssertEqual(recorded.request.queryValues("extras[]"), ["accountSettings"])
        XCTAssertEqual(recorded.headers["content-type"], "application/json")
        XCTAssertEqual(recorded.headers["x-api-key"], "key_1")
        XCTAssertEqual(recorded.json, body)
        XCTAssertEqual(recorded.json?["visitor_consent"], true)
        XCTAssertEqual(recorded.json?["context"]?["age"], 34)
        XCTAssertEqual(recorded.outcome, .answered(status: 200))
        XCTAssertEqual(recorded.faults, [])
        XCTAssertGreaterThanOrEqual(recorded.receivedAt, before.addingTimeInterval(-0.001))
        XCTAssertLessThanOrEqual(recorded.receivedAt, Date())
    }

    func testActivatesAndHitsAreFlattenedFromTheAcceptedRequestsInOrder() async throws {
        _ = try await activate([["vid": "a", "caid": "vg1", "vaid": "v1"], ["vid": "a", "caid": "vg2", "vaid": "v2"]])
        _ = try await activate([["vid": "b", "caid": "vg1", "vaid": "v1"]])
        _ = try await sendHits([["vid": "a", "t": "SCREENVIEW", "dl": "home"]])
        _ = try await sendHits([["vid": "a", "t": "EVENT", "ea": "click"], ["vid": "b", "t": "PAGEVIEW", "dl": "https://x.io"]])

        XCTAssertEqual(server.activates.map { $0["caid"] }, ["vg1", "vg2", "vg1"])
        XCTAssertEqual(server.activates.map { $0["vid"] }, ["a", "a", "b"])
        XCTAssertEqual(server.hits.map { $0["t"] }, ["SCREENVIEW", "EVENT", "PAGEVIEW"])
        XCTAssertEqual(server.received.map(\.sequence), [1, 2, 3, 4])
    }

    func testClearReceivedForgetsWhatArrived() async throws {
        _ = try await sendHits([["vid": "a", "t": "EVENT"]])
        server.clearReceived()
        _ = try await sendHits([["vid": "b", "t": "EVENT"]])

        XCTAssertEqual(server.hits, [["vid": "b", "t": "EVENT"]])
        XCTAssertEqual(server.received.count, 1)
    }

    func testARecordLimitKeepsTheNewestRequestsWhileTheTotalsCountEveryOne() async throws {
        let bounded = LocalFlagshipServer(.init(envId: "e", apiKey: "k", recordLimit: 3))
        try bounded.start()
        defer { bounded.stop() }
        let activateURL = bounded.decisionBaseURL.appendingPathComponent("activate")

        for batch in 0..<7 {
            _ = try await client.post(bounded.eventsBaseURL, json: ["h": [["vid": .string("v\(batch)"), "t": "EVENT"], ["vid": .string("v\(batch)"), "t": "PAGEVIEW"]]], apiKey: nil)
        }
        _ = try await client.post(activateURL, json: ["batch": [["vid": "a", "caid": "vg1", "vaid": "v1"]]], apiKey: "k")
        _ = try await client.post(bounded.eventsBaseURL, body: Data("not json".utf8))
        _ = try await client.post(activateURL, json: ["batch": [["vid": "b", "caid": "vg1", "vaid": "v1"], ["vid": "c", "caid": "vg2", "vaid": "v2"]]], apiKey: "k")

        XCTAssertEqual(bounded.received.map(\.sequence), [8, 9, 10], "the newest three, in order")
        XCTAssertEqual(bounded.activates.map { $0["vid"] }, ["a", "b", "c"])
        XCTAssertEqual(bounded.hits, [], "the accepted hit batches are older than the three kept")
        XCTAssertEqual(bounded.totals, ReceivedTotals(requests: 10, hits: 14, activates: 3))

        bounded.clearReceived()
        _ = try await client.post(bounded.eventsBaseURL, json: ["h": [["vid": "d", "t": "EVENT"]]], apiKey: nil)
        XCTAssertEqual(bounded.received.map(\.sequence), [11])
        XCTAssertEqual(bounded.totals, ReceivedTotals(requests: 11, hits: 15, activates: 3), "forgetting records keeps the totals")
    }

    func testWithoutARecordLimitEveryRequestIsKept() async throws {
        for batch in 0..<40 {
            _ = try await sendHits([["vid": .string("v\(batch)"), "t": "EVENT"]])
        }

        XCTAssertEqual(server.received.map(\.sequence), Array(1...40))
        XCTAssertEqual(server.totals, ReceivedTotals(requests: 40, hits: 40, activates: 0))
    }

    func testOnRequestIsCalledWithEveryRecord() async throws {
        let seen = Locked<[Int?]>([])
        let observed = LocalFlagshipServer(.init(envId: "e", apiKey: "k", onRequest: { record in
            seen.withLock { $0.append(record.status) }
        }))
        try observed.start()
        defer { observed.stop() }

        _ = try await client.post(observed.eventsBaseURL, json: ["h": []], apiKey: nil)
        _ = try await client.post(observed.decisionBaseURL.appendingPathComponent("activate"), json: [:], apiKey: "wrong")

        XCTAssertEqual(seen.withLock { $0 }, [200, 403])
    }

    func testRecordFileGetsOneJSONObjectPerRequestWithTheKeyMasked() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("local-server-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("{\"earlier\":\"run\"}\n".utf8).write(to: file)
        let recording = LocalFlagshipServer(envId: "env_r", apiKey: "secret_key", recordFile: file)
        try recording.start()
        defer { recording.stop() }
        let campaigns = recording.decisionBaseURL.appendingPathComponent("env_r/campaigns")

        _ = try await client.post(campaigns, json: ["visitorId": "v1"], apiKey: "secret_key")
        _ = try await client.post(recording.eventsBaseURL, body: Data("not json".utf8))
        recording.injectFault(.dropConnection, on: .activate)
        // A new connection: URLSession retries a request dropped on a reused one, without its body.
        let fresh = TestClient()
        defer { fresh.invalidate() }
        _ = try? await fresh.post(recording.decisionBaseURL.appendingPathComponent("activate"), json: ["batch": []], apiKey: "secret_key")

        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertFalse(text.contains("secret_key"), "the API key never reaches the file")
        let lines = text.split(separator: "\n").map { try? FSJSONValue(parsing: Data($0.utf8)) }
        XCTAssertEqual(lines.count, 4, text)
        XCTAssertEqual(lines[0], ["earlier": "run"], "appended, not overwritten")
        let first = try XCTUnwrap(lines[1])
        XCTAssertEqual(first["sequence"], 1)
        XCTAssertEqual(first["route"], "campaigns")
        XCTAssertEqual(first["method"], "POST")
        XCTAssertEqual(first["path"], "/v2/env_r/campaigns")
        XCTAssertEqual(first["status"], 200)
        XCTAssertEqual(first["outcome"], "answered")
        XCTAssertEqual(first["body"], ["visitorId": "v1"])
        XCTAssertEqual(first["headers"]?["x-api-key"], "<redacted>")
        XCTAssertEqual(first["faults"], [])
        XCTAssertNotNil(first["receivedAt"]?.stringValue.flatMap { try? Date($0, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) })
        let second = try XCTUnwrap(lines[2])
        XCTAssertEqual(second["route"], "events")
        XCTAssertEqual(second["status"], 400)
        XCTAssertEqual(second["bodyText"], "not json")
        let third = try XCTUnwrap(lines[3])
        XCTAssertEqual(third["route"], "activate")
        XCTAssertEqual(third["status"], .null)
        XCTAssertEqual(third["outcome"], "dropped")
        XCTAssertEqual(third["faults"], ["drop connection"])
    }

    func testAnUnwritableRecordFileFailsStart() throws {
        let server = LocalFlagshipServer(envId: "e", apiKey: "k", recordFile: URL(fileURLWithPath: "/nonexistent-dir/requests.jsonl"))

        XCTAssertThrowsError(try server.start()) { error in
            XCTAssertEqual(error as? LocalServerError, .recordFile(path: "/nonexistent-dir/requests.jsonl", reason: "cannot create it"))
        }
        XCTAssertFalse(server.isRunning)
    }
}
