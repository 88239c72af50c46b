import Foundation
import XCTest

import FlagshipLocalServer

/// Injected faults spoil exactly the requests their share names, each the way its kind says,
/// can change while the server runs, and clear.
final class FaultTests: ServerTestCase {
    func testStatusFaultAnswersEveryRequestOfItsRouteOnly() async throws {
        server.injectFault(.status(500), on: .campaigns)

        let first = try await fetchDecision()
        let second = try await fetchDecision()
        let activate = try await activate([["vid": "a"]])

        XCTAssertEqual([first.status, second.status, activate.status], [500, 500, 204])
        XCTAssertEqual(first.json, ["message": "injected fault: status 500"])
        let recorded = server.received(.campaigns)
        XCTAssertEqual(recorded.map(\.outcome), [.answered(status: 500), .answered(status: 500)])
        XCTAssertEqual(recorded.map(\.faults), [[.status(500)], [.status(500)]])
    }

    func testNextNRequestsAreFaultedThenTheFaultIsGone() async throws {
        server.injectFault(.status(429), on: .events, share: .next(2))

        var statuses: [Int] = []
        for _ in 0..<4 { statuses.append(try await sendHits([["vid": "v", "t": "EVENT"]]).status) }

        XCTAssertEqual(statuses, [429, 429, 200, 200])
        XCTAssertEqual(server.hits.count, 2, "only accepted batches count")
    }

    func testEveryNthRequestIsFaulted() async throws {
        server.injectFault(.status(408), on: .activate, share: .everyNth(3))

        var statuses: [Int] = []
        for _ in 0..<7 { statuses.append(try await activate([["vid": "v"]]).status) }

        XCTAssertEqual(statuses, [204, 204, 408, 204, 204, 408, 204])
    }

    func testSeededFractionFaultsTheSameRequestsEveryRun() async throws {
        func pattern() async throws -> [Int] {
            let server = LocalFlagshipServer(envId: Self.envId, apiKey: Self.apiKey)
            try server.start()
            defer { server.stop() }
            server.injectFault(.status(503), share: .fraction(0.3, seed: 42))
            var statuses: [Int] = []
            for _ in 0..<40 {
                statuses.append(try await client.post(server.eventsBaseURL, json: ["h": []], apiKey: nil).status)
            }
            return statuses
        }

        let first = try await pattern()
        let second = try await pattern()

        XCTAssertEqual(first, second)
        let faulted = first.filter { $0 == 503 }.count
        XCTAssertTrue((6...18).contains(faulted), "about 30% of 40, got \(faulted): \(first)")
    }

    func testLatencyIsAddedBeforeTheUsualAnswer() async throws {
        server.injectFault(.latency(.milliseconds(300)), on: .campaigns, share: .next(1))

        let clock = ContinuousClock()
        var reply: TestClient.Reply?
        let delayed = try await clock.measure { reply = try await fetchDecision() }
        var undelayed: TestClient.Reply?
        let prompt = try await clock.measure { undelayed = try await fetchDecision() }

        XCTAssertEqual(reply?.status, 200)
        XCTAssertEqual(reply?.text, #"{"visitorId":"fixed","campaigns":[]}"#)
        XCTAssertGreaterThanOrEqual(delayed, .milliseconds(300))
        XCTAssertEqual(undelayed?.status, 200)
        XCTAssertLessThan(prompt, .milliseconds(300))
        XCTAssertEqual(server.received.map(\.faults), [[.latency(.milliseconds(300))], []])
    }

    func testLatencyDoesNotHoldOtherRequests() async throws {
        server.injectFault(.latency(.seconds(2)), on: .campaigns)
        let client: TestClient = self.client
        let url = campaignsURL
        let body = Self.decisionBody()
        let slow = Task { try await client.post(url, json: body, apiKey: "key_1") }
        _ = try await server.waitForRequests(route: .campaigns)

        let clock = ContinuousClock()
        let elapsed = try await clock.measure { _ = try await activate([["vid": "v"]]) }

        // Blocked, it would wait for the slow answer (2 s); 1 s leaves room for a busy machine.
        XCTAssertLessThan(elapsed, .seconds(1), "a delayed answer must not block the server")
        slow.cancel()
    }

    func testLatencyAddsUpAndCombinesWithAStatus() async throws {
        server.injectFault(.latency(.milliseconds(100)))
        server.injectFault(.latency(.milliseconds(100)), on: .events)
        server.injectFault(.status(502), on: .events)

        let clock = ContinuousClock()
        var reply: TestClient.Reply?
        let elapsed = try await clock.measure { reply = try await sendHits([]) }

        XCTAssertEqual(reply?.status, 502)
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(200))
        XCTAssertEqual(server.received.first?.faults, [.latency(.milliseconds(100)), .latency(.milliseconds(100)), .status(502)])
    }

    func testDropClosesTheConnectionWithoutAnAnswer() async throws {
        server.injectFault(.dropConnection, on: .campaigns, share: .next(1))

        do {
            _ = try await fetchDecision()
            XCTFail("a dropped connection is an error for the client")
        } catch {
            XCTAssertFalse(error is TestFailure, "\(error)")
        }
        XCTAssertEqual(server.received.map(\.outcome), [.dropped])
        let retried = try await fetchDecision()
        XCTAssertEqual(retried.status, 200)
    }

    func testDroppedConnectionSendsNoByte() throws {
        server.injectFault(.dropConnection)
        let connection = try RawConnection(port: try XCTUnwrap(server.port))

        try connection.write(rawPost("/", body: "{}"))

        XCTAssertEqual(connection.receiveAll(), "")
    }

    func testMalformedBodiesAreAnswered200AsGiven() async throws {
        let cases: [(MalformedBody, String)] = [
            (.truncatedJSON, #"{"visitorId": "v", "campaigns": ["#),
            (.notJSON, "<html><body><h1>502 Bad Gateway</h1></body></html>"),
            (.wrongShape, #"{"visitorId": 42, "panic": "no", "campaigns": {"id": "c1"}}"#),
            (.custom(Data("[1,2".utf8)), "[1,2"),
        ]
        for (body, expected) in cases {
            let id = server.injectFault(.malformedBody(body), on: .campaigns)
            let reply = try await fetchDecision()
            server.removeFault(id)

            XCTAssertEqual(reply.status, 200, "\(body)")
            XCTAssertEqual(reply.text, expected)
        }
    }

    func testCutOffBodySendsTheHeadAndHalfTheBodyThenCloses() throws {
        server.decision = .fixed(Data("0123456789".utf8))
        server.injectFault(.cutOffBody, on: .campaigns)
        let connection = try RawConnection(port: try XCTUnwrap(server.port))

        try connection.write(rawPost("/v2/env_1/campaigns", body: #"{"visitorId":"v"}"#, headers: ["x-api-key: key_1"]))

        let received = connection.receiveAll()
        XCTAssertTrue(received.hasPrefix("HTTP/1.1 200 OK\r\n"), received)
        XCTAssertTrue(received.contains("Content-Length: 10\r\n"), received)
        XCTAssertTrue(received.contains("Connection: close\r\n"), received)
        XCTAssertTrue(received.hasSuffix("\r\n\r\n01234"), received)
        XCTAssertEqual(server.received.map(\.outcome), [.cutOff(status: 200)])
    }

    func testRedirectFaultAnswersItsStatusWithTheLocationAndAnEmptyBody() throws {
        server.injectFault(.redirect(307, location: "http://127.0.0.1:9/v2/env_1/campaigns"), on: .campaigns, share: .next(1))
        let connection = try RawConnection(port: try XCTUnwrap(server.port))

        try connection.write(rawPost("/v2/env_1/campaigns", body: #"{"visitorId":"v"}"#, headers: ["x-api-key: key_1"]))

        let received = connection.receive { $0.hasSuffix("\r\n\r\n") }
        XCTAssertEqual(received, "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:9/v2/env_1/campaigns\r\n"
                                 + "Content-Length: 0\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(server.received.map(\.outcome), [.answered(status: 307)])
        XCTAssertEqual(server.received.map(\.faults), [[.redirect(307, location: "http://127.0.0.1:9/v2/env_1/campaigns")]])
    }

    func testCutOffBodyIsAnErrorForURLSession() async throws {
        server.injectFault(.cutOffBody, on: .campaigns)

        do {
            let reply = try await fetchDecision()
            XCTFail("a cut-off body is an error for the client, got \(reply.status) \(reply.text)")
        } catch {
            XCTAssertFalse(error is TestFailure, "\(error)")
        }
    }

    func testFaultOnAllRoutes() async throws {
        server.injectFault(.status(500))

        let statuses = [
            try await fetchDecision().status,
            try await activate([]).status,
            try await sendHits([]).status,
            try await client.post(eventsURL.appendingPathComponent("analytics"), json: [:], apiKey: nil).status,
        ]

        XCTAssertEqual(statuses, [500, 500, 500, 500])
    }

    func testClearFaultsAndRemoveFaultRestoreNormalAnswers() async throws {
        let onCampaigns = server.injectFault(.status(500), on: .campaigns)
        server.injectFault(.status(503), on: .events)
        let faulted = try await fetchDecision().status

        server.removeFault(onCampaigns)
        let afterRemove = [try await fetchDecision().status, try await sendHits([]).status]

        server.clearFaults()
        let afterClear = try await sendHits([]).status

        XCTAssertEqual(faulted, 500)
        XCTAssertEqual(afterRemove, [200, 503])
        XCTAssertEqual(afterClear, 200)
    }

    func testFirstFaultInInjectionOrderDecidesAndLaterOnesAreNotConsumed() async throws {
        server.injectFault(.status(500), on: .events, share: .next(1))
        server.injectFault(.status(429), on: .events, share: .next(1))

        let statuses = [try await sendHits([]).status, try await sendHits([]).status, try await sendHits([]).status]

        XCTAssertEqual(statuses, [500, 429, 200])
    }
}
