import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// The Decision API client against a real HTTP server on 127.0.0.1 (PROTOCOL.md sections 1 and 6).
final class NetworkDecisionClientTests: LocalServerTestCase {
    private let envId = "env_network"
    private let apiKey = "sk_live_4f9c2e1d_do_not_log"

    override func makeServer() -> LocalFlagshipServer {
        LocalFlagshipServer(envId: envId, apiKey: apiKey, decision: .fixed(Data(#"{"campaigns": []}"#.utf8)))
    }

    private func client(timeout: TimeInterval = 2, apiKey: String? = nil) -> DecisionAPIClient {
        DecisionAPIClient(envId: envId, apiKey: apiKey ?? self.apiKey, baseURL: server.decisionBaseURL,
                          timeout: timeout, sdkVersion: SDKInfo.version, transport: transport)
    }

    /// The error `fetchCampaigns` throws (fails the test when it returns).
    private func fetchError(_ client: DecisionAPIClient, file: StaticString = #filePath, line: UInt = #line) async -> DecisionError? {
        do {
            let response = try await client.fetchCampaigns(visitorId: "visitor_1", anonymousId: nil, context: [:], hasConsented: true)
            XCTFail("expected an error, got \(response)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    // MARK: The request

    func testFetchPostsTheDocumentedRequestToTheCampaignsRoute() async throws {
        _ = try await client().fetchCampaigns(visitorId: "visitor_1", anonymousId: nil,
                                              context: ["isVip": .bool(true), "age": .int(32), "plan": .string("pro"), "ratio": .double(0.5)],
                                              hasConsented: true)

        let requests = try await server.waitForRequests(route: .campaigns)
        XCTAssertEqual(requests.count, 1)
        let request = try XCTUnwrap(requests.first).request
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/v2/env_network/campaigns")
        XCTAssertEqual(request.envId, envId)
        XCTAssertEqual(request.query.map(\.name), ["exposeAllKeys", "extras[]"])
        XCTAssertEqual(request.query.map(\.value), ["true", "accountSettings"])
        XCTAssertEqual(request.headers["Content-Type"], "application/json")
        XCTAssertEqual(request.headers["Accept"], "application/json")
        XCTAssertEqual(request.headers["x-api-key"], apiKey)
        XCTAssertEqual(request.headers["x-sdk-client"], "swift-linux")
        XCTAssertEqual(request.headers["x-sdk-version"], SDKInfo.version)
        XCTAssertEqual(request.json, [
            "visitorId": "visitor_1", "anonymousId": nil,
            "context": ["isVip": true, "age": 32, "plan": "pro", "ratio": 0.5],
            "trigger_hit": false, "visitor_consent": true,
        ])
        XCTAssertEqual(requests.first?.status, 200)
    }

    func testAnAuthenticatedVisitorSendsItsAnonymousIdAndConsentAsGiven() async throws {
        _ = try await client().fetchCampaigns(visitorId: "user_42", anonymousId: "anon_7", context: [:], hasConsented: false)

        let requests = try await server.waitForRequests(route: .campaigns)
        let request = try XCTUnwrap(requests.first)
        XCTAssertEqual(request.json, [
            "visitorId": "user_42", "anonymousId": "anon_7", "context": [:], "trigger_hit": false, "visitor_consent": false,
        ])
    }

    // MARK: The answer

    func testTheServersDecisionIsReadAsAFixtureIsRead() async throws {
        let fixture = try Conformance.fixture("android_api_response_3.json")
        server.decision = .fixed(fixture)

        let response = try await client().fetchCampaigns(visitorId: "v", anonymousId: nil, context: [:], hasConsented: true)

        XCTAssertEqual(response, try DecisionResponse(json: fixture))
        XCTAssertEqual(response.campaigns.count, 7)
        XCTAssertEqual(response.accountSettings, AccountSettings(enabledXPC: false, enabled1V1T: false))
    }

    func testAPanicAnswerIsPanic() async throws {
        server.decision = .panic

        let response = try await client().fetchCampaigns(visitorId: "visitor_9", anonymousId: nil, context: [:], hasConsented: true)

        XCTAssertEqual(response, DecisionResponse(visitorId: "visitor_9", panic: true, campaigns: []))
    }

    func testALargeAnswerUnderTheCapIsReadWhole() async throws {
        let count = 8_000
        let campaigns = (0..<count).map { index -> String in
            let flags = (0..<8).map { #""f\#(index)_\#($0)": "\#(String(repeating: "v", count: 40))""# }.joined(separator: ",")
            return #"{"id": "c\#(index)", "variationGroupId": "vg\#(index)", "variation": {"id": "v\#(index)", "#
                + #""modifications": {"type": "FLAG", "value": {\#(flags)}}}}"#
        }
        let body = Data(#"{"campaigns": [\#(campaigns.joined(separator: ","))]}"#.utf8)
        XCTAssertGreaterThan(body.count, 4_000_000)
        server.decision = .fixed(body)

        let response = try await client(timeout: 10).fetchCampaigns(visitorId: "v", anonymousId: nil, context: [:], hasConsented: true)

        XCTAssertEqual(response.campaigns.count, count)
        XCTAssertEqual(response.campaigns.last?.flags["f7999_7"], .string(String(repeating: "v", count: 40)))
    }

    // MARK: Failures (PROTOCOL.md section 6)

    func testASlowServerGivesTimedOutWithinTheTimeout() async throws {
        server.injectFault(.latency(.seconds(5)), on: .campaigns)
        let clock = ContinuousClock()

        for timeout in [0.3, 1.2] {
            let started = clock.now
            let error = await fetchError(client(timeout: timeout))
            let elapsed = clock.now - started

            XCTAssertEqual(error, .timedOut(after: timeout))
            XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(Int(timeout * 1000)) - .milliseconds(5))
            // Ending at the timeout, not when the server answers (5 s): 1.5 s of room for a busy machine.
            XCTAssertLessThan(elapsed, .milliseconds(Int(timeout * 1000) + 1_500), "timeout \(timeout)")
        }
        XCTAssertEqual(DecisionError.timedOut(after: 0.3).description, "the Decision API did not answer within 300 ms")
    }

    func testTheDefaultTimeoutOf2000MillisecondsIsHonoured() async throws {
        server.injectFault(.latency(.seconds(6)), on: .campaigns)
        let clock = ContinuousClock()
        let started = clock.now

        let error = await fetchError(client(timeout: 2.0))

        XCTAssertEqual(error, .timedOut(after: 2.0))
        // At the 2 s timeout, not when the server answers (6 s).
        XCTAssertLessThan(clock.now - started, .milliseconds(3_500))
        XCTAssertEqual(error?.description, "the Decision API did not answer within 2000 ms")
    }

    func testServerErrorsGiveTheirHTTPStatus() async throws {
        for status in [500, 503, 429, 400] {
            let fault = server.injectFault(.status(status), on: .campaigns)
            let error = await fetchError(client())
            server.removeFault(fault)

            XCTAssertEqual(error, .httpStatus(status))
        }
        XCTAssertEqual(DecisionError.httpStatus(500).description, "the Decision API answered with HTTP status 500")
    }

    func testAWrongAPIKeyGivesStatus403() async throws {
        let error = await fetchError(client(apiKey: "wrong_key"))

        XCTAssertEqual(error, .httpStatus(403))
        let requests = try await server.waitForRequests(route: .campaigns)
        XCTAssertEqual(requests.map(\.status), [403])
    }

    func testADroppedConnectionGivesATransportError() async throws {
        server.injectFault(.dropConnection, on: .campaigns)

        let error = await fetchError(client())

        XCTAssertEqual(error, .transport("127.0.0.1:\(try XCTUnwrap(server.port)) closed the connection without a valid answer"))
        XCTAssertEqual(error?.description, "the Decision API could not be reached: 127.0.0.1:\(try XCTUnwrap(server.port)) closed the connection without a valid answer")
    }

    func testABodyCutOffMidwayGivesATransportError() async throws {
        server.decision = .fixed(Data(#"{"visitorId": "v", "campaigns": [{"id": "c1", "variationGroupId": "vg1", "variation": {"id": "v1"}}]}"#.utf8))
        server.injectFault(.cutOffBody, on: .campaigns)

        let error = await fetchError(client())

        XCTAssertEqual(error, .transport("the connection to 127.0.0.1:\(try XCTUnwrap(server.port)) was lost before the answer was complete (50 of 101 bytes received)"))
    }

    func testARefusedConnectionGivesATransportError() async throws {
        let port = try XCTUnwrap(server.port)
        server.stop()

        let error = await fetchError(client())

        XCTAssertEqual(error, .transport("could not connect to 127.0.0.1:\(port) (connection refused or unreachable)"))
    }

    func testMalformedBodiesGiveMalformedBody() async throws {
        let cases: [(MalformedBody, String)] = [
            (.truncatedJSON, "the body (33 bytes) is not valid JSON, or is truncated"),
            (.notJSON, "the body (50 bytes) is not valid JSON, or is truncated"),
            (.wrongShape, #""campaigns" is not an array"#),
            (.custom(Data("[1, 2, 3]".utf8)), "the body is JSON but not an object"),
            (.custom(Data()), "the body is empty"),
        ]
        for (body, reason) in cases {
            let fault = server.injectFault(.malformedBody(body), on: .campaigns)
            let error = await fetchError(client())
            server.removeFault(fault)

            XCTAssertEqual(error, .malformedBody(reason), "\(body)")
        }
        XCTAssertEqual(DecisionError.malformedBody("the body is empty").description, "the Decision API's answer could not be read: the body is empty")
    }

    func testAnAnswerOverTenMegabytesIsRefusedWithoutBeingKept() async throws {
        server.decision = .fixed(Data(repeating: UInt8(ascii: " "), count: 11 * 1024 * 1024))

        let error = await fetchError(client(timeout: 10))

        XCTAssertEqual(error, .malformedBody("the answer is larger than 10485760 bytes and was not read"))
    }

    func testCancellingTheCallerEndsTheCallAtOnce() async throws {
        server.injectFault(.latency(.seconds(5)), on: .campaigns)
        let client = client(timeout: 4)
        let clock = ContinuousClock()

        let call = Task { () async -> DecisionError? in
            do {
                _ = try await client.fetchCampaigns(visitorId: "v", anonymousId: nil, context: [:], hasConsented: true)
                return nil
            } catch let error as DecisionError {
                return error
            } catch {
                return nil
            }
        }
        _ = try await server.waitForRequests(route: .campaigns)
        let cancelled = clock.now
        call.cancel()
        let error = await call.value

        // The error says the cancellation ended the call (the 4 s timeout would say timedOut);
        // the time, from the cancel on, that it did so at once.
        XCTAssertEqual(error, .transport("the request was cancelled"))
        XCTAssertLessThan(clock.now - cancelled, .milliseconds(1_500))
    }

    func testATransportShutDownRefusesRequestsAndMayBeShutDownTwice() async throws {
        transport.shutdown()
        transport.shutdown()

        let error = await fetchError(client())

        XCTAssertEqual(error, .transport("the request was cancelled"))
        XCTAssertEqual(server.received.count, 0)
    }

    func testTheAPIKeyNeverAppearsInAnErrorDescription() async throws {
        var errors: [DecisionError] = []
        let faults: [FaultKind] = [.status(500), .status(403), .dropConnection, .cutOffBody, .malformedBody(.notJSON),
                                   .malformedBody(.custom(Data(apiKey.utf8))), .latency(.seconds(3))]
        for fault in faults {
            let id = server.injectFault(fault, on: .campaigns)
            if let error = await fetchError(client(timeout: 0.3)) { errors.append(error) }
            server.removeFault(id)
        }
        server.stop()
        if let error = await fetchError(client(timeout: 0.3)) { errors.append(error) }

        XCTAssertEqual(errors.count, faults.count + 1)
        for error in errors {
            XCTAssertFalse(error.description.contains(apiKey), error.description)
            XCTAssertFalse(String(describing: error).contains(apiKey), String(describing: error))
        }
    }
}
