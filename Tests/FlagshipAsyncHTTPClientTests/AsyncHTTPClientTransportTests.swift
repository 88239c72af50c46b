#if AsyncHTTPClient
import AsyncHTTPClient
import Flagship
import FlagshipAsyncHTTPClient
import FlagshipLocalServer
import Foundation
import XCTest

/// The SDK's requests through async-http-client, against the local server on 127.0.0.1: both
/// modes, the app's shared client left running, and what the SDK's words are for its failures.
final class AsyncHTTPClientTransportTests: XCTestCase {
    private var directory: URL!
    private var server: LocalFlagshipServer!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-ahc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        server = LocalFlagshipServer(envId: "env", apiKey: "key")
        try server.start()
    }

    override func tearDown() async throws {
        await Flagship.sharedInstance.close()
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func builder(_ transport: AsyncHTTPClientTransport) -> FSConfigBuilder {
        FSConfigBuilder()
            .withDecisionBaseURL(server.decisionBaseURL).withEventsBaseURL(server.eventsBaseURL)
            .withBucketingBaseURL(server.bucketingBaseURL)
            .withCacheFile(directory.appendingPathComponent("flagship.sqlite")).withLogLevel(.NONE)
            .withHTTPTransport(transport)
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 1, batchIntervalTimer: 0.1))
    }

    /// Waits (up to 15 s) until the server accepted the event of `action`.
    private func waitForEvent(_ action: String) async throws {
        for _ in 0..<300 {
            if server.hits.contains(where: { $0["ea"]?.stringValue == action }) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTFail("the event \(action) did not arrive")
    }

    private func visitSendingAnEvent(_ action: String) async throws -> FSVisitor {
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "v1", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["plan": "vip"]).buildAsync()
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: action))
        return visitor
    }

    func testDecisionAPIModeFetchesAndDeliversThroughTheSDKsOwnClient() async throws {
        Flagship.sharedInstance.start(envId: "env", apiKey: "key",
                                      config: builder(AsyncHTTPClientTransport()).DecisionApi().build())
        let visitor = try await visitSendingAnEvent("ahc-decision")
        XCTAssertEqual(visitor.fetchStatus, .FETCHED)
        try await waitForEvent("ahc-decision")
        XCTAssertFalse(server.received(.campaigns).isEmpty)
        XCTAssertTrue(server.received(.campaigns).allSatisfy { $0.headers["x-api-key"] == "key" })
    }

    func testBucketingModeDownloadsTheFileThroughTheClient() async throws {
        try server.setBucketingFile(ServedBucketingFile.sampleData)
        Flagship.sharedInstance.start(envId: "env", apiKey: "key",
                                      config: builder(AsyncHTTPClientTransport()).Bucketing().build())
        _ = try await visitSendingAnEvent("ahc-bucketing")
        XCTAssertEqual(Flagship.sharedInstance.getStatus(), .SDK_INITIALIZED)
        XCTAssertFalse(server.received(.bucketing).isEmpty, "the file came through async-http-client")
        try await waitForEvent("ahc-bucketing")
    }

    func testTheAppsSharedClientIsLeftRunningWhenTheSDKCloses() async throws {
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup,
                                configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        Flagship.sharedInstance.start(envId: "env", apiKey: "key",
                                      config: builder(AsyncHTTPClientTransport(client: client)).DecisionApi().build())
        _ = try await visitSendingAnEvent("ahc-shared")
        await Flagship.sharedInstance.close()
        try server.setBucketingFile(ServedBucketingFile.sampleData)
        let after = try await client.execute(HTTPClientRequest(url: server.bucketingBaseURL.appendingPathComponent("env/bucketing.json").absoluteString),
                                             timeout: .seconds(5))
        XCTAssertEqual(after.status.code, 200, "the app's client still serves the app")
        try await client.shutdown()
    }

    // MARK: Failures in the SDK's words

    private func send(_ url: URL, timeout: TimeInterval = 2, maximumResponseBytes: Int = 1024 * 1024) async throws -> FSHTTPResponse {
        let transport = AsyncHTTPClientTransport()
        defer { Task { await transport.shutdown() } }
        return try await transport.send(FSHTTPRequest(method: .get, url: url, timeout: timeout, maximumResponseBytes: maximumResponseBytes))
    }

    func testAStatusIsAnAnswerNotAnError() async throws {
        _ = server.injectFault(.status(500), on: .bucketing)
        try server.setBucketingFile(ServedBucketingFile.sampleData)
        let answer = try await send(server.bucketingBaseURL.appendingPathComponent("env/bucketing.json"))
        XCTAssertEqual(answer.status, 500)
    }

    func testAnAnswerOverTheBoundIsNotReadFurther() async throws {
        try server.setBucketingFile(ServedBucketingFile.sampleData)
        do {
            _ = try await send(server.bucketingBaseURL.appendingPathComponent("env/bucketing.json"), maximumResponseBytes: 64)
            XCTFail("a body over 64 bytes was read")
        } catch let error as FSTransportError {
            XCTAssertEqual(error.code, .responseTooLarge)
        }
    }

    func testASilentServerTimesOutAndANoListenerFailsTheConnection() async throws {
        _ = server.injectFault(.latency(.seconds(5)), on: .bucketing)
        try server.setBucketingFile(ServedBucketingFile.sampleData)
        do {
            _ = try await send(server.bucketingBaseURL.appendingPathComponent("env/bucketing.json"), timeout: 0.3)
            XCTFail("answered")
        } catch let error as FSTransportError {
            XCTAssertEqual(error.code, .timedOut)
        }
        do {
            _ = try await send(URL(string: "http://127.0.0.1:1/env/bucketing.json")!)
            XCTFail("answered")
        } catch let error as FSTransportError {
            XCTAssertEqual(error.code, .connectionFailed)
            XCTAssertTrue(error.description.contains("127.0.0.1:1"), error.description)
        }
    }

    func testTheSDKsOwnClientDoesNotFollowARedirect() async throws {
        _ = server.injectFault(.redirect(302, location: "/elsewhere"), on: .bucketing)
        try server.setBucketingFile(ServedBucketingFile.sampleData)
        let answer = try await send(server.bucketingBaseURL.appendingPathComponent("env/bucketing.json"))
        XCTAssertEqual(answer.status, 302, "handed to the SDK, which judges it")
        XCTAssertEqual(answer.headers["location"], "/elsewhere")
    }
}
#endif
