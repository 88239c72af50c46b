import Flagship
import Foundation
import XCTest

import FlagshipLocalServer

/// With a bucketing file the server decides campaigns with the SDK's own bucketing engine and
/// serves the file at `GET /{envId}/bucketing.json`, with `Last-Modified` and `304 Not Modified`.
final class BucketingTests: ServerTestCase {
    /// Thu, 21 Nov 2024 06:00:00 GMT.
    private static let november21 = Date(timeIntervalSince1970: 1_732_168_800)

    override var initialDecision: DecisionSource { .bucketing }

    override func setUpWithError() throws {
        try super.setUpWithError()
        server.bucketingFile = ServedBucketingFile.sample(lastModified: Self.november21)
    }

    private func decide(visitorId: String, context: FSJSONValue = [:], history: FSJSONValue? = nil) async throws -> TestClient.Reply {
        var body: [String: FSJSONValue] = ["visitorId": .string(visitorId), "anonymousId": nil, "context": context,
                                        "trigger_hit": false, "visitor_consent": true]
        if let history { body["assignmentsHistory"] = history }
        return try await client.post(campaignsURL, json: .object(body), apiKey: Self.apiKey)
    }

    /// What the engine itself decides on the sample, as the wire JSON of its flags per campaign.
    private func engineFlags(visitorId: String, context: [String: FSJSONValue]) throws -> [FSJSONValue] {
        let decision = ServedBucketingFile.sample().file.decide(visitorId: visitorId, context: context, history: [:])
        return try decision.campaigns.map { try FSJSONValue(parsing: FSJSONValue.object($0.flags).jsonData()) }
    }

    // MARK: Campaigns decided by the engine

    func testCampaignsAreTheEnginesDecisionInTheDecisionAPIShape() async throws {
        let reply = try await decide(visitorId: "alice", context: ["isVip": true, "plan": "pro", "age": 32])

        XCTAssertEqual(reply.status, 200, reply.text)
        let json = try XCTUnwrap(reply.json)
        XCTAssertEqual(json["visitorId"], "alice")
        XCTAssertEqual(json["panic"], false)
        XCTAssertEqual(json["extras"], ["accountSettings": ["enabledXPC": false, "enabled1V1T": false]])
        let campaigns = try XCTUnwrap(json["campaigns"]?.arrayValue)
        XCTAssertEqual(campaigns.map { $0["id"] }, ["c-checkout-button", "c-vip-shipping", "c-plan-banner"])
        XCTAssertEqual(campaigns.map { $0["variationGroupId"] },
                       ["vg-checkout-button-everyone", "vg-vip-shipping-vips", "vg-plan-banner-paying"])
        XCTAssertEqual(campaigns.map { $0["variation"]?["modifications"]?["value"] },
                       try engineFlags(visitorId: "alice", context: ["isVip": .bool(true), "plan": .string("pro"), "age": .int(32)]))
        XCTAssertEqual(campaigns[1], [
            "id": "c-vip-shipping", "name": "VIP free shipping", "slug": "vip-free-shipping", "type": "toggle",
            "variationGroupId": "vg-vip-shipping-vips", "variationGroupName": "VIP visitors",
            "variation": ["id": "v-vip-shipping-on", "name": "Free shipping", "reference": false,
                          "modifications": ["type": "FLAG", "value": ["freeShipping": true]]],
        ])
        let checkout = try XCTUnwrap(campaigns[0]["variation"])
        let expectedColor: FSJSONValue = checkout["id"] == "v-checkout-button-blue" ? "blue" : "green"
        XCTAssertEqual(checkout["modifications"]?["value"], ["btnColor": expectedColor])
        XCTAssertEqual(checkout["reference"], .bool(checkout["id"] == "v-checkout-button-blue"))
    }

    func testTargetingLeavesOutCampaignsTheContextDoesNotMatch() async throws {
        let reply = try await decide(visitorId: "bob", context: ["isVip": false, "plan": "free"])

        XCTAssertEqual(reply.json?["campaigns"]?.arrayValue?.map { $0["id"] }, ["c-checkout-button"])
    }

    func testTheCheckoutTestSplitsVisitorsBetweenBothColours() async throws {
        var colors: [FSJSONValue: Int] = [:]
        for index in 0..<40 {
            let reply = try await decide(visitorId: "visitor-\(index)")
            let color = try XCTUnwrap(reply.json?["campaigns"]?[0]?["variation"]?["modifications"]?["value"]?["btnColor"])
            colors[color, default: 0] += 1
        }

        XCTAssertEqual(Set(colors.keys), ["blue", "green"], "\(colors)")
    }

    func testAssignmentHistoryInTheRequestKeepsTheVisitorsVariation() async throws {
        for (variation, color) in [("v-checkout-button-blue", "blue"), ("v-checkout-button-green", "green")] {
            let reply = try await decide(visitorId: "alice", history: ["vg-checkout-button-everyone": .string(variation)])

            let chosen = reply.json?["campaigns"]?[0]?["variation"]
            XCTAssertEqual(chosen?["id"], .string(variation))
            XCTAssertEqual(chosen?["modifications"]?["value"], ["btnColor": .string(color)])
        }
    }

    func testAPanicFileAnswersPanicWithNoCampaign() async throws {
        try server.setBucketingFile(Data(#"{"panic": true}"#.utf8))

        let reply = try await decide(visitorId: "carol", context: ["isVip": true])

        XCTAssertEqual(reply.status, 200)
        XCTAssertEqual(reply.json, ["visitorId": "carol", "panic": true, "campaigns": []])
    }

    func testABadRequestIs400WithTheReason() async throws {
        let cases: [(FSJSONValue, String)] = [
            (["visitorId": "v", "context": "isVip"], #""context" must be a JSON object"#),
            (["visitorId": "v", "context": ["plan": ["pro"]]], #"the context value of "plan" must be a string, a number or a boolean"#),
            (["visitorId": "v", "context": ["gone": nil]], #"the context value of "gone" must be a string, a number or a boolean"#),
            (["context": [:]], #""visitorId" must be a string"#),
            (["visitorId": "v", "assignmentsHistory": ["vg": 1]], #""assignmentsHistory" must map variation group ids to variation id strings"#),
        ]
        for (body, message) in cases {
            let reply = try await client.post(campaignsURL, json: body, apiKey: Self.apiKey)

            XCTAssertEqual(reply.status, 400, "\(body)")
            XCTAssertEqual(reply.json, ["message": .string(message)], "\(body)")
        }
    }

    func testBucketingDecisionWithoutAFileIs500() async throws {
        server.bucketingFile = nil

        let reply = try await decide(visitorId: "v")

        XCTAssertEqual(reply.status, 500)
        XCTAssertEqual(reply.json, ["message": "the decision comes from the bucketing file, and the server has none"])
    }

    func testAFileTheEngineCannotUseIsRefusedAndTheServedOneKept() throws {
        XCTAssertThrowsError(try server.setBucketingFile(Data(#"{"campaigns": {}}"#.utf8))) { error in
            XCTAssertEqual(error as? LocalServerError, .bucketingFile(path: nil, reason: #""campaigns" is not a list"#))
        }
        XCTAssertEqual(server.bucketingFile?.data, ServedBucketingFile.sampleData)
    }

    func testTheSampleIsAUsableFileWithThreeCampaignsAndNoWarning() {
        let sample = ServedBucketingFile.sample()

        XCTAssertEqual(sample.campaignCount, 3)
        XCTAssertFalse(sample.isPanic)
        XCTAssertEqual(sample.warnings, [])
    }

    // MARK: The file, for bucketing mode

    func testGETServesTheFilesBytesWithLastModified() throws {
        let response = try get("/env_1/bucketing.json")

        XCTAssertEqual(response.status, "HTTP/1.1 200 OK")
        XCTAssertEqual(response.headers["Last-Modified"], "Thu, 21 Nov 2024 06:00:00 GMT")
        XCTAssertEqual(response.headers["Content-Type"], "application/json")
        XCTAssertEqual(Data(response.body.utf8), ServedBucketingFile.sampleData)
        XCTAssertEqual(server.received.map(\.route), [.bucketing])
        XCTAssertEqual(server.received.map(\.request.method), ["GET"])
        XCTAssertEqual(server.received.map(\.request.envId), ["env_1"])
    }

    func testIfModifiedSinceTheSameTimeOrLaterIs304WithNoBody() throws {
        for since in ["Thu, 21 Nov 2024 06:00:00 GMT", "Thu, 21 Nov 2024 06:00:01 GMT", "Fri, 22 Nov 2024 00:00:00 GMT",
                      "Thursday, 21-Nov-24 06:00:00 GMT", "Thu Nov 21 06:00:00 2024"] {
            let response = try get("/env_1/bucketing.json", headers: ["If-Modified-Since: \(since)"])

            XCTAssertEqual(response.status, "HTTP/1.1 304 Not Modified", since)
            XCTAssertEqual(response.body, "", since)
            XCTAssertNil(response.headers["Content-Length"], since)
            XCTAssertEqual(response.headers["Last-Modified"], "Thu, 21 Nov 2024 06:00:00 GMT", since)
        }
        XCTAssertEqual(server.received.map(\.status), [304, 304, 304, 304, 304])
    }

    func testIfModifiedSinceEarlierOrUnreadableIs200() throws {
        for since in ["Thu, 21 Nov 2024 05:59:59 GMT", "yesterday", ""] {
            let response = try get("/env_1/bucketing.json", headers: ["If-Modified-Since: \(since)"])

            XCTAssertEqual(response.status, "HTTP/1.1 200 OK", since)
            XCTAssertEqual(Data(response.body.utf8), ServedBucketingFile.sampleData, since)
        }
    }

    func testLastModifiedDropsTheFractionOfASecond() throws {
        server.bucketingFile = ServedBucketingFile.sample(lastModified: Self.november21.addingTimeInterval(0.75))

        let response = try get("/env_1/bucketing.json", headers: ["If-Modified-Since: Thu, 21 Nov 2024 06:00:00 GMT"])

        XCTAssertEqual(response.status, "HTTP/1.1 304 Not Modified", "the client cannot name a time it was not told")
    }

    func testAReplacedFileIsServedWithItsLastModifiedAndDecides() async throws {
        let replacement = Data(#"{"campaigns": [{"id": "c-new", "type": "toggle", "variationGroups": [{"id": "vg-new", "targeting": {"targetingGroups": [{"targetings": [{"key": "fs_all_users", "operator": "EQUALS", "value": ""}]}]}, "variations": [{"id": "v-new", "allocation": 100, "modifications": {"type": "FLAG", "value": {"newFlag": 1}}}]}]}]}"#.utf8)

        try server.setBucketingFile(replacement, lastModified: Self.november21.addingTimeInterval(3_600))
        let stale = try await get("/env_1/bucketing.json", headers: ["If-Modified-Since: Thu, 21 Nov 2024 06:00:00 GMT"])
        let current = try await get("/env_1/bucketing.json", headers: ["If-Modified-Since: Thu, 21 Nov 2024 07:00:00 GMT"])
        let decision = try await decide(visitorId: "alice")

        XCTAssertEqual(stale.status, "HTTP/1.1 200 OK")
        XCTAssertEqual(stale.headers["Last-Modified"], "Thu, 21 Nov 2024 07:00:00 GMT")
        XCTAssertEqual(Data(stale.body.utf8), replacement)
        XCTAssertEqual(current.status, "HTTP/1.1 304 Not Modified")
        XCTAssertEqual(decision.json?["campaigns"]?.arrayValue?.map { $0["variation"]?["modifications"]?["value"] }, [["newFlag": 1]])
    }

    func testAnotherEnvironmentOrNoFileIs404() async throws {
        let otherEnvironment = try await get("/other_env/bucketing.json")
        server.bucketingFile = nil
        let noFile = try await get("/env_1/bucketing.json")

        XCTAssertEqual(otherEnvironment.status, "HTTP/1.1 404 Not Found")
        XCTAssertEqual(otherEnvironment.body, #"{"message":"unknown environment id 'other_env'"}"#)
        XCTAssertEqual(noFile.status, "HTTP/1.1 404 Not Found")
        XCTAssertEqual(noFile.body, #"{"message":"no bucketing file on this server"}"#)
        XCTAssertEqual(server.received.map(\.route), [.bucketing, .bucketing])
    }

    func testTheFileRouteTakesGETOnly() async throws {
        let url = server.bucketingBaseURL.appendingPathComponent("env_1/bucketing.json")

        let reply = try await client.post(url, json: [:], apiKey: nil)

        XCTAssertEqual(reply.status, 405)
        XCTAssertEqual(reply.json, ["message": "/env_1/bucketing.json takes GET, not POST"])
    }

    func testFaultsOnTheFileRouteSpoilOnlyIt() async throws {
        server.injectFault(.status(503), on: .bucketing, share: .next(1))
        server.injectFault(.cutOffBody, on: .bucketing, share: .everyNth(2))

        let faulted = try await get("/env_1/bucketing.json")
        let decision = try await decide(visitorId: "alice")
        let whole = try await get("/env_1/bucketing.json")
        let cutOff = try await get("/env_1/bucketing.json")

        XCTAssertEqual(faulted.status, "HTTP/1.1 503 Service Unavailable")
        XCTAssertEqual(decision.status, 200)
        XCTAssertEqual(Data(whole.body.utf8), ServedBucketingFile.sampleData)
        XCTAssertEqual(cutOff.status, "HTTP/1.1 200 OK")
        XCTAssertEqual(cutOff.body.utf8.count, ServedBucketingFile.sampleData.count / 2)
        XCTAssertEqual(server.received(.bucketing).map(\.outcome), [.answered(status: 503), .answered(status: 200), .cutOff(status: 200)])
        XCTAssertEqual(server.received(.campaigns).map(\.faults), [[]])
    }

    // MARK: Raw GET

    private struct RawResponse {
        let status: String
        let headers: [String: String]
        let body: String
    }

    /// `get` from a test's task: its blocking socket read runs off the cooperative pool, whose
    /// thread the server needs to answer (a pool of one thread, `FLAGSHIP_ONE_COOPERATIVE_THREAD`).
    private func get(_ path: String, headers: [String] = []) async throws -> RawResponse {
        let port = try XCTUnwrap(server.port)
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try Self.get(path, headers: headers, port: port) })
            }
        }
    }

    /// `GET path` on a connection of its own, read until the server closes it.
    private func get(_ path: String, headers: [String] = []) throws -> RawResponse {
        try Self.get(path, headers: headers, port: try XCTUnwrap(server.port))
    }

    private static func get(_ path: String, headers: [String], port: UInt16) throws -> RawResponse {
        let connection = try RawConnection(port: port)
        try connection.write((["GET \(path) HTTP/1.1", "Host: 127.0.0.1", "Connection: close"] + headers).joined(separator: "\r\n") + "\r\n\r\n")
        let received = connection.receiveAll()
        guard let headEnd = received.range(of: "\r\n\r\n") else { throw TestFailure("no whole head in \(received)") }
        var lines = received[..<headEnd.lowerBound].components(separatedBy: "\r\n")
        let status = lines.removeFirst()
        var fields: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw TestFailure("malformed header line \(line)") }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return RawResponse(status: status, headers: fields, body: String(received[headEnd.upperBound...]))
    }
}
