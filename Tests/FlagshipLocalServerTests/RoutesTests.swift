import Flagship
import Foundation
import XCTest

import FlagshipLocalServer

/// Each route answers as configured, and refuses what the real backend refuses.
final class RoutesTests: ServerTestCase {
    func testCampaignsAnswersTheFixedDecisionByteForByte() async throws {
        let reply = try await fetchDecision()

        XCTAssertEqual(reply.status, 200)
        XCTAssertEqual(reply.text, #"{"visitorId":"fixed","campaigns":[]}"#)
    }

    func testPanicAnswersTheRequestsVisitorWithNoCampaigns() async throws {
        server.decision = .panic

        let reply = try await fetchDecision(visitorId: "alice")

        XCTAssertEqual(reply.status, 200)
        XCTAssertEqual(reply.json, ["visitorId": "alice", "panic": true, "campaigns": []])
    }

    func testHandlerSeesTheBodyAndHeadersAndChoosesTheStatus() async throws {
        server.decision = .handler { request in
            let visitor = request.json?["visitorId"]?.stringValue ?? "?"
            let key = request.headers["X-API-KEY"] ?? "?"
            let extras = request.queryValues("extras[]").joined(separator: ",")
            return .json(["seen": .string("\(visitor)/\(key)/\(extras)")], status: 201)
        }

        let reply = try await fetchDecision(visitorId: "bob")

        XCTAssertEqual(reply.status, 201)
        XCTAssertEqual(reply.json, ["seen": "bob/key_1/accountSettings"])
    }

    func testSampleDecisionEchoesTheVisitorAndHoldsFlagsOfEveryJSONKind() async throws {
        server.decision = .sample

        let reply = try await fetchDecision(visitorId: "carol")

        let json = try XCTUnwrap(reply.json)
        XCTAssertEqual(json["visitorId"], "carol")
        XCTAssertEqual(json["panic"], false)
        let campaigns = try XCTUnwrap(json["campaigns"]?.arrayValue)
        XCTAssertEqual(campaigns.count, 2)
        let flags = campaigns.compactMap { $0["variation"]?["modifications"]?["value"]?.objectValue }
            .reduce(into: [String: FSJSONValue]()) { $0.merge($1) { _, later in later } }
        XCTAssertEqual(flags["btnColor"], "green")
        XCTAssertEqual(flags["btnSize"], 14)
        XCTAssertEqual(flags["price"], 9.99)
        XCTAssertEqual(flags["showBanner"], true)
        XCTAssertEqual(flags["checkout"], ["steps": 2, "express": true])
        XCTAssertEqual(flags["paymentMethods"], ["card", "paypal"])
        XCTAssertEqual(flags["promoCode"], .null)
        XCTAssertEqual(json["extras"]?["accountSettings"]?["enabledXPC"], false)
    }

    func testDecisionChangedWhileRunningAppliesFromTheNextRequest() async throws {
        let before = try await fetchDecision()
        server.decision = .panic
        let after = try await fetchDecision()

        XCTAssertEqual(before.json?["panic"], nil)
        XCTAssertEqual(after.json?["panic"], true)
    }

    func testUnknownEnvironmentIdIs404WithAJSONError() async throws {
        let url = server.decisionBaseURL.appendingPathComponent("other_env/campaigns")

        let reply = try await client.post(url, json: Self.decisionBody(), apiKey: Self.apiKey)

        XCTAssertEqual(reply.status, 404)
        XCTAssertEqual(reply.json, ["message": "unknown environment id 'other_env'"])
        XCTAssertEqual(server.received.map(\.status), [404])
    }

    func testBodyThatIsNotJSONIs400OnEveryFlagshipRoute() async throws {
        for url in [campaignsURL, activateURL, eventsURL] {
            let reply = try await client.post(url, body: Data("visitorId=1".utf8), headers: ["x-api-key": Self.apiKey])
            XCTAssertEqual(reply.status, 400, url.absoluteString)
            XCTAssertEqual(reply.json, ["message": "the body is not a JSON object"])
        }
    }

    func testActivateEventsAndTelemetryAreAcceptedWithAnEmptyBody() async throws {
        let activate = try await activate([["vid": "v", "caid": "vg1", "vaid": "v1"]])
        let events = try await sendHits([["vid": "v", "t": "SCREENVIEW", "dl": "home"]])
        let analytics = try await client.post(eventsURL.appendingPathComponent("analytics"), json: ["t": "USAGE"], apiKey: nil)
        let troubleshooting = try await client.post(eventsURL.appendingPathComponent("troubleshooting"), json: ["t": "TROUBLESHOOTING"], apiKey: nil)

        XCTAssertEqual([activate.status, events.status, analytics.status, troubleshooting.status], [204, 200, 200, 200])
        XCTAssertEqual([activate.body, events.body, analytics.body, troubleshooting.body], [Data(), Data(), Data(), Data()])
        XCTAssertEqual(server.received.map(\.route), [.activate, .events, .analytics, .troubleshooting])
    }

    /// The official Python SDK asks `/v2/{envId}/campaigns/?exposeAllKeys=true`: the trailing
    /// slash is the same route, as on the Decision API.
    func testCampaignsWithATrailingSlashAndAQueryIsTheCampaignsRoute() async throws {
        let url = try XCTUnwrap(URL(string: server.baseURL.absoluteString + "/v2/\(Self.envId)/campaigns/?exposeAllKeys=true"))

        let reply = try await client.post(url, json: ["visitorId": "py", "context": [:]], apiKey: Self.apiKey)

        XCTAssertEqual(reply.status, 200, reply.text)
        XCTAssertEqual(reply.text, #"{"visitorId":"fixed","campaigns":[]}"#)
        XCTAssertEqual(server.received(.campaigns).count, 1)
        XCTAssertEqual(server.received(.unknown).count, 0)
        // Two slashes are not one route.
        let doubled = try XCTUnwrap(URL(string: server.baseURL.absoluteString + "/v2/\(Self.envId)/campaigns//"))
        let refused = try await client.post(doubled, json: [:], apiKey: Self.apiKey)
        XCTAssertEqual(refused.status, 404)
    }

    func testUnknownPathIs404AndRecordedSoAWrongURLShows() async throws {
        let reply = try await client.post(server.baseURL.appendingPathComponent("v1/activate"), json: [:], apiKey: Self.apiKey)

        XCTAssertEqual(reply.status, 404)
        XCTAssertEqual(reply.json, ["message": "no Flagship endpoint at /v1/activate"])
        XCTAssertEqual(server.received(.unknown).map(\.request.path), ["/v1/activate"])
    }

    func testGETOnAFlagshipRouteIs405() async throws {
        let reply = try await client.send(activateURL, method: "GET")

        XCTAssertEqual(reply.status, 405)
        XCTAssertEqual(reply.json, ["message": "/v2/activate takes POST, not GET"])
    }
}
