import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// An app's own HTTP client (`FSConfigBuilder.withHTTPTransport`): the SDK's requests go through
/// it, and the SDK keeps its deadline, its redirect rule and its bound on answers around it.
final class AppTransportTests: SDKTestCase {
    /// An app's client as an app would write one, here over URLSession; counts what it is asked.
    private final class CountingClient: FSHTTPTransport {
        private let base = URLSessionTransport()
        let requests = Locked<[FSHTTPRequest]>([])
        let shutdowns = Locked(0)

        func send(_ request: FSHTTPRequest) async throws -> FSHTTPResponse {
            requests.withLock { $0.append(request) }
            return try await base.send(request)
        }

        func shutdown() async {
            shutdowns.withLock { $0 += 1 }
            base.shutdown()
        }
    }

    /// A client that answers what a test says, without a network.
    private struct ScriptedClient: FSHTTPTransport {
        let answer: @Sendable (FSHTTPRequest) async throws -> FSHTTPResponse
        func send(_ request: FSHTTPRequest) async throws -> FSHTTPResponse { try await answer(request) }
    }

    /// Waits (up to 15 s) until `server` accepted the event of `action`.
    static func waitForEvent(_ action: String, on server: LocalFlagshipServer) async throws {
        for _ in 0..<300 {
            if server.hits.contains(where: { $0["ea"]?.stringValue == action }) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTFail("the event \(action) did not arrive")
    }

    private func request(_ url: URL, timeout: TimeInterval = 2, body: Data? = Data("{}".utf8)) -> FSHTTPRequest {
        FSHTTPRequest(method: body == nil ? .get : .post, url: url, headers: ["x-api-key": "key"], body: body, timeout: timeout)
    }

    // MARK: The SDK through the app's client

    func testTheSDKFetchesAndDeliversThroughTheAppsClientAndShutsItDownOnce() async throws {
        let client = CountingClient()
        flagship.start(envId: Self.envId, apiKey: Self.apiKey, config: configBuilder().DecisionApi().withHTTPTransport(client).build())
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.fetchStatus, .FETCHED)
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "through-the-app")
        try await visitor.sendHit(event)
        try await Self.waitForEvent("through-the-app", on: server)

        let asked = client.requests.withLock { $0 }
        XCTAssertTrue(asked.contains { $0.url.path.hasSuffix("/campaigns") }, "the decision went through the app's client")
        XCTAssertTrue(asked.filter { $0.url.path.hasSuffix("/campaigns") }.allSatisfy { $0.headers["x-api-key"] == Self.apiKey })
        XCTAssertTrue(asked.allSatisfy { $0.maximumResponseBytes == FSHTTPRequest.defaultMaximumResponseBytes })
        XCTAssertEqual(server.received.count, asked.count, "every request the server saw came through the app's client")

        await flagship.close()
        XCTAssertEqual(client.shutdowns.withLock { $0 }, 1)
    }

    func testTheBucketingFileComesThroughTheAppsClientWithTheBoundRaised() async throws {
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
        let client = CountingClient()
        let config = configBuilder().Bucketing().withBucketingBaseURL(server.bucketingBaseURL)
            .withBucketingFileMaximumBytes(32 * 1024 * 1024).withHTTPTransport(client).build()
        flagship.start(envId: Self.envId, apiKey: Self.apiKey, config: config)
        let visitor = await flagship.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        XCTAssertEqual(flagship.getStatus(), .SDK_INITIALIZED)
        let download = try XCTUnwrap(client.requests.withLock { $0 }.first { $0.url.path.hasSuffix("/bucketing.json") })
        XCTAssertEqual(download.method, .get)
        XCTAssertEqual(download.maximumResponseBytes, 32 * 1024 * 1024)
    }

    func testTheStartLineSaysWhichHTTPClientRuns() async throws {
        for (transport, expected) in [
            (nil, "; HTTP through URLSession, its host check the SDK's (frees what it allocates)"),
            (CountingClient() as (any FSHTTPTransport)?, "; HTTP through the app's CountingClient"),
        ] {
            var builder = configBuilder().DecisionApi()
            if let transport { builder = builder.withHTTPTransport(transport) }
            flagship.start(envId: Self.envId, apiKey: Self.apiKey, config: builder.build())
            await flagship.close()
            let line = log.entries.last { $0.message.contains("started for environment \(Self.envId)") }?.message ?? ""
            XCTAssertTrue(line.hasSuffix(expected), line)
        }
    }

    // MARK: What the SDK keeps around any client

    func testAClientThatDoesNotAnswerIsCutAtTheDeadlineAndCancelled() async throws {
        let cancelled = Locked(false)
        let client = ScriptedClient { _ in
            do {
                try await Task.sleep(for: .seconds(60))
            } catch {
                cancelled.withLock { $0 = true }
                throw error
            }
            return FSHTTPResponse(status: 200)
        }
        let transport = AppTransport(base: client, maximumResponseBytes: 1024)
        let started = ContinuousClock.now
        do {
            _ = try await transport.send(request(server.decisionBaseURL, timeout: 0.2))
            XCTFail("answered")
        } catch {
            XCTAssertEqual(error, .timedOut(after: 0.2))
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(30), "cut at the deadline, not at the client's 60 s")
        XCTAssertTrue(cancelled.withLock { $0 }, "the client's task was cancelled")
    }

    func testAnyErrorOfTheClientIsAFailedConnectionAndItsOwnReasonsAreKept() async throws {
        struct Refused: Error, CustomStringConvertible { var description: String { "refused by the proxy" } }
        let cases: [(thrown: any Error, expected: TransportError)] = [
            (Refused(), .connectionFailed("the HTTP client failed: refused by the proxy")),
            (FSTransportError.timedOut(after: 3), .timedOut(after: 2)),
            (FSTransportError.connectionFailed("no route to host"), .connectionFailed("no route to host")),
            (FSTransportError.responseTooLarge(limit: 10), .responseTooLarge(limit: 10)),
            (CancellationError(), .cancelled),
        ]
        for (thrown, expected) in cases {
            let transport = AppTransport(base: ScriptedClient { _ in throw thrown }, maximumResponseBytes: 1024)
            do {
                _ = try await transport.send(request(server.decisionBaseURL))
                XCTFail("answered for \(thrown)")
            } catch {
                XCTAssertEqual(error, expected, "\(thrown)")
            }
        }
    }

    func testAnAnswerOverTheBoundFailsEvenWhenTheClientReadItAndAStatusIsAnAnswer() async throws {
        let big = AppTransport(base: ScriptedClient { _ in FSHTTPResponse(status: 200, body: Data(count: 1025)) },
                               maximumResponseBytes: 1024)
        do {
            _ = try await big.send(request(server.decisionBaseURL))
            XCTFail("a body over the bound was taken")
        } catch {
            XCTAssertEqual(error, .responseTooLarge(limit: 1024))
        }
        let failing = AppTransport(base: ScriptedClient { _ in FSHTTPResponse(status: 500, headers: ["X-Reason": "down"]) },
                                   maximumResponseBytes: 1024)
        let answer = try await failing.send(request(server.decisionBaseURL))
        XCTAssertEqual(answer.status, 500)
        XCTAssertEqual(answer.headers["x-reason"], "down", "header names lowered")
    }

    /// A client that answers a redirect first, then 200, and keeps every URL it was asked.
    private func redirecting(_ status: Int, to location: String, asked: Locked<[FSHTTPRequest]>) -> ScriptedClient {
        ScriptedClient { request in
            let count = asked.withLock { asked in
                asked.append(request)
                return asked.count
            }
            return count == 1 ? FSHTTPResponse(status: status, headers: ["Location": location]) : FSHTTPResponse(status: 200)
        }
    }

    func testARedirectToAnotherOriginIsRefusedAndTheKeyNeverGoesThere() async throws {
        for status in [301, 302, 303, 307, 308] {
            let asked = Locked<[FSHTTPRequest]>([])
            let client = redirecting(status, to: "https://elsewhere.example/v2/env/campaigns", asked: asked)
            let transport = AppTransport(base: client, maximumResponseBytes: 1024)
            do {
                _ = try await transport.send(request(URL(string: "https://decision.example/v2/env/campaigns")!))
                XCTFail("\(status) followed to another origin")
            } catch {
                XCTAssertEqual(error, .redirectRefused(from: "https://decision.example:443", to: "https://elsewhere.example:443"))
            }
            XCTAssertEqual(asked.withLock { $0.map(\.url.host) }, ["decision.example"], "the key never left for another origin")
        }
    }

    func testA307WithinTheOriginIsFollowedWithItsBodyAndA302OfAPostIsNot() async throws {
        let body = Data(#"{"visitorId":"v1","context":{}}"#.utf8)
        let origin = URL(string: "https://decision.example/v2/env/campaigns")!
        let asked = Locked<[FSHTTPRequest]>([])
        let followed = AppTransport(base: redirecting(307, to: "/v2/env/campaigns?again=1", asked: asked), maximumResponseBytes: 1024)
        let answer = try await followed.send(request(origin, body: body))
        XCTAssertEqual(answer.status, 200)
        let requests = asked.withLock { $0 }
        XCTAssertEqual(requests.map(\.url.absoluteString), [origin.absoluteString, origin.absoluteString + "?again=1"])
        XCTAssertEqual(requests.last?.body, body, "a 307 keeps the body")
        XCTAssertEqual(requests.last?.headers["x-api-key"], "key", "within the origin, with its headers")

        let refused = AppTransport(base: redirecting(302, to: "/elsewhere", asked: Locked([])), maximumResponseBytes: 1024)
        do {
            _ = try await refused.send(request(origin, body: body))
            XCTFail("a 302 of a POST was followed")
        } catch {
            XCTAssertEqual(error, .redirectNotFollowed(status: 302, to: "https://decision.example:443/elsewhere"))
        }
    }

    func testARedirectLoopEndsAfterFiveRedirects() async throws {
        let loop = ScriptedClient { _ in FSHTTPResponse(status: 307, headers: ["location": "/again"]) }
        do {
            _ = try await AppTransport(base: loop, maximumResponseBytes: 1024).send(request(URL(string: "https://decision.example/v2")!))
            XCTFail("a loop answered")
        } catch {
            XCTAssertEqual(error, .connectionFailed("decision.example redirected the request more than 5 times"))
        }
    }

    func testTheErrorsCodeCanBeSwitchedOn() {
        func name(_ error: FSTransportError) -> String {
            switch error.code {
            case .timedOut: "timed out"
            case .connectionFailed: "connection failed"
            case .responseTooLarge: "too large"
            case .cancelled: "cancelled"
            default: "other: \(error.code)"
            }
        }
        XCTAssertEqual(name(.timedOut(after: 1)), "timed out")
        XCTAssertEqual(name(.connectionFailed("x")), "connection failed")
        XCTAssertEqual(name(.responseTooLarge(limit: 1)), "too large")
        XCTAssertEqual(name(.cancelled), "cancelled")
        XCTAssertEqual(name(FSTransportError(.networkDisabled)), "other: networkDisabled")
        XCTAssertEqual(FSTransportError.timedOut(after: 2).description, "no complete answer within 2000 ms")
    }
}
