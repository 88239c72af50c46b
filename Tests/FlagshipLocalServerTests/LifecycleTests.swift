import Foundation
import XCTest

import FlagshipLocalServer

/// Servers start on their own ephemeral ports, stop cleanly (twice is fine), restart on the
/// same port, and stop when released.
final class LifecycleTests: XCTestCase {
    private let client = TestClient()

    override func tearDown() {
        client.invalidate()
        super.tearDown()
    }

    func testStartReturnsTheBaseURLAndTheSDKBaseURLsFollowIt() throws {
        let server = LocalFlagshipServer()
        defer { server.stop() }

        let base = try server.start()

        let port = try XCTUnwrap(server.port)
        XCTAssertNotEqual(port, 0)
        XCTAssertEqual(base.absoluteString, "http://127.0.0.1:\(port)")
        XCTAssertEqual(server.baseURL, base)
        XCTAssertEqual(server.decisionBaseURL.absoluteString, "http://127.0.0.1:\(port)/v2")
        XCTAssertEqual(server.eventsBaseURL.absoluteString, "http://127.0.0.1:\(port)")
        XCTAssertEqual(try server.start(), base, "starting a running server changes nothing")
    }

    func testTwoServersRunSideBySideOnDifferentPorts() async throws {
        let first = LocalFlagshipServer(envId: "env_a", apiKey: "key_a", decision: .fixed(Data(#"{"campaigns":[],"n":1}"#.utf8)))
        let second = LocalFlagshipServer(envId: "env_b", apiKey: "key_b", decision: .fixed(Data(#"{"campaigns":[],"n":2}"#.utf8)))
        try first.start()
        try second.start()
        defer {
            first.stop()
            second.stop()
        }

        XCTAssertNotEqual(first.port, second.port)
        let a = try await client.post(first.decisionBaseURL.appendingPathComponent("env_a/campaigns"), json: ["visitorId": "v"], apiKey: "key_a")
        let b = try await client.post(second.decisionBaseURL.appendingPathComponent("env_b/campaigns"), json: ["visitorId": "v"], apiKey: "key_b")

        XCTAssertEqual(a.json?["n"], 1)
        XCTAssertEqual(b.json?["n"], 2)
        XCTAssertEqual(first.received.count, 1)
        XCTAssertEqual(second.received.count, 1)
    }

    func testStopTwiceAndBeforeStartIsHarmless() throws {
        let never = LocalFlagshipServer()
        never.stop()

        let server = LocalFlagshipServer()
        try server.start()
        server.stop()
        server.stop()

        XCTAssertFalse(server.isRunning)
    }

    func testStoppedServerRefusesConnectionsAndRestartsOnTheSamePortKeepingWhatArrived() async throws {
        let server = LocalFlagshipServer()
        let base = try server.start()
        defer { server.stop() }
        _ = try await client.post(server.eventsBaseURL, json: ["h": [["t": "EVENT"]]], apiKey: nil)

        server.stop()
        XCTAssertThrowsError(try RawConnection(port: try XCTUnwrap(server.port)), "nothing listens any more")

        XCTAssertEqual(try server.start(), base)
        let fresh = TestClient()
        defer { fresh.invalidate() }
        let reply = try await fresh.post(server.eventsBaseURL, json: ["h": [["t": "PAGEVIEW"]]], apiKey: nil)
        XCTAssertEqual(reply.status, 200)
        XCTAssertEqual(server.hits, [["t": "EVENT"], ["t": "PAGEVIEW"]])
    }

    func testStopClosesOpenKeepAliveConnections() throws {
        let server = LocalFlagshipServer()
        try server.start()
        let connection = try RawConnection(port: try XCTUnwrap(server.port))
        try connection.write(rawPost("/", body: "{}"))
        XCTAssertTrue(connection.receive { $0.hasSuffix("\r\n\r\n") }.hasPrefix("HTTP/1.1 200 OK"))

        server.stop()

        XCTAssertEqual(connection.receiveAll(), "", "the kept-alive connection ends at stop")
    }

    func testAReleasedServerStopsListening() throws {
        var server: LocalFlagshipServer? = LocalFlagshipServer()
        try server?.start()
        let port = try XCTUnwrap(server?.port)
        XCTAssertNoThrow(try RawConnection(port: port))

        server = nil

        XCTAssertThrowsError(try RawConnection(port: port))
    }

    func testStopAndReleaseLeaveNoServerThreadBehind() throws {
        let stopped = LocalFlagshipServer()
        try stopped.start()
        var released: LocalFlagshipServer? = LocalFlagshipServer()
        try released?.start()
        XCTAssertEqual(serverThreadCount(), 2)

        stopped.stop()
        released = nil

        XCTAssertEqual(serverThreadCount(), 0)
    }

    /// The servers' threads, by the name they give themselves.
    private func serverThreadCount() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return name == "flagship-server\n"
        }.count
    }

    func testAPortInUseIsAClearError() throws {
        let first = LocalFlagshipServer()
        try first.start()
        defer { first.stop() }
        let port = try XCTUnwrap(first.port)

        let second = LocalFlagshipServer(.init(port: port))
        XCTAssertThrowsError(try second.start()) { error in
            XCTAssertEqual(error as? LocalServerError, .portUnavailable(port: port, errno: EADDRINUSE))
            XCTAssertEqual("\(error)", "cannot listen on 127.0.0.1:\(port): Address already in use")
            XCTAssertEqual((error as? LocalServerError)?.code, .portUnavailable)
            XCTAssertEqual((error as? LocalServerError)?.port, port)
        }
    }

    /// The server's error is a struct with a code to switch on (a `default` for codes added
    /// later), its details as properties, and the same log line as when it was an enum.
    func testTheServerErrorHasACodeToSwitchOnItsDetailsAndItsLine() {
        func kind(_ error: LocalServerError) -> String {
            switch error.code {
            case .portUnavailable: "portUnavailable"
            case .socket: "socket"
            case .recordFile: "recordFile"
            case .decisionFile: "decisionFile"
            case .bucketingFile: "bucketingFile"
            case .waitTimedOut: "waitTimedOut"
            default: "unknown"
            }
        }
        let port = LocalServerError.portUnavailable(port: 8080, errno: EADDRINUSE)
        let socket = LocalServerError.socket(call: "listen", errno: EBADF)
        let record = LocalServerError.recordFile(path: "/tmp/r.jsonl", reason: "cannot create it")
        let decision = LocalServerError.decisionFile(path: "/tmp/d.json", reason: "is not JSON")
        let bucketingFromFile = LocalServerError.bucketingFile(path: "/tmp/b.json", reason: "cannot be read")
        let bucketing = LocalServerError.bucketingFile(path: nil, reason: #""campaigns" is not a list"#)
        let wait = LocalServerError.waitTimedOut(waitingFor: "2 hit(s)", timeout: .milliseconds(50), arrived: "1 arrived")
        let all = [port, socket, record, decision, bucketingFromFile, bucketing, wait]

        XCTAssertEqual(all.map(kind), ["portUnavailable", "socket", "recordFile", "decisionFile", "bucketingFile", "bucketingFile", "waitTimedOut"])
        XCTAssertEqual(all.map(\.description), [
            "cannot listen on 127.0.0.1:8080: Address already in use",
            "listen failed: Bad file descriptor",
            "cannot append to the record file /tmp/r.jsonl: cannot create it",
            "the decision file /tmp/d.json is not JSON",
            "the bucketing file /tmp/b.json: cannot be read",
            #"not a usable bucketing file: "campaigns" is not a list"#,
            "timed out after 0.05 seconds waiting for 2 hit(s); 1 arrived",
        ])

        XCTAssertEqual(port.port, 8080)
        XCTAssertEqual(port.errno, EADDRINUSE)
        XCTAssertEqual(socket.call, "listen")
        XCTAssertEqual(socket.errno, EBADF)
        XCTAssertNil(socket.port)
        XCTAssertEqual([record.path, decision.path, bucketingFromFile.path, bucketing.path], ["/tmp/r.jsonl", "/tmp/d.json", "/tmp/b.json", nil])
        XCTAssertEqual(decision.reason, "is not JSON")
        XCTAssertEqual(wait.waitingFor, "2 hit(s)")
        XCTAssertEqual(wait.timeout, .milliseconds(50))
        XCTAssertEqual(wait.arrived, "1 arrived")
        XCTAssertNil(wait.path)

        XCTAssertTrue(wait.code == .waitTimedOut)
        XCTAssertEqual(bucketing.code, bucketingFromFile.code)
        XCTAssertNotEqual(record.code, decision.code)
        XCTAssertEqual(Set(all.map(\.code)).count, 6)
        XCTAssertEqual("\(LocalServerError.Code.portUnavailable)", "portUnavailable")
        XCTAssertNotEqual(bucketing, bucketingFromFile)
    }
}
