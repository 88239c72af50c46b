import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// A redirect never costs a hit: a hit leaves the cache only after a 2xx answer to a request that
/// carried it. A 301, 302 or 303 would turn the batch into a GET without its body, whose answer
/// says nothing about the hits: such a redirect is not followed, same origin or not, and the
/// batch stays cached for a retry, the redirect's status and target in the log. A 307 or 308
/// re-sends the same body, within the origin only.
final class HostileRedirectTests: TrackingTestCase {
    private var elsewhere: LocalFlagshipServer!

    override func setUpWithError() throws {
        try super.setUpWithError()
        elsewhere = LocalFlagshipServer(envId: Self.envId, apiKey: Self.apiKey)
        try elsewhere.start()
        // A GET on this server's bucketing path answers 200: a batch turned into a GET there
        // would look delivered.
        try server.setBucketingFile(BucketingModeTests.bucketingFile())
    }

    override func tearDown() async throws {
        try await super.tearDown()
        elsewhere?.stop()
    }

    private var bucketingPath: String { "/\(Self.envId)/bucketing.json" }

    private func batchRequest(_ body: String) -> FSHTTPRequest {
        FSHTTPRequest.flagshipPOST(url: server.eventsBaseURL.flagshipEndpoint(path: [""]), body: Data(body.utf8),
                                 apiKey: nil, sdkVersion: "9.9.9", timeout: 2)
    }

    // MARK: The transport

    /// (A redirect to another origin is refused whatever its status: NetworkRedirectTests.)
    func testAPostRedirectedBy301302Or303WithinTheOriginIsNotFollowed() async throws {
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        let origin = "http://127.0.0.1:\(try XCTUnwrap(server.port))"
        let targets = [
            (bucketingPath, origin + bucketingPath),
            ("/", origin + "/"),
            ("/?token=secret#part", origin + "/"),
        ]
        for status in [301, 302, 303] {
            for (location, named) in targets {
                server.injectFault(.redirect(status, location: location), on: .events, share: .next(1))
                do {
                    let response = try await transport.send(batchRequest(#"{"h":[]}"#))
                    XCTFail("\(status) to \(location) was followed to an answer with status \(response.status)")
                } catch {
                    XCTAssertEqual(error, .redirectNotFollowed(status: status, to: named), "\(status) to \(location)")
                    XCTAssertFalse(error.description.contains("secret"), "no query in a message: \(error)")
                }
            }
        }

        XCTAssertEqual(server.received.map(\.request.method), Array(repeating: "POST", count: 9), "no GET followed")
        XCTAssertEqual(server.received(.bucketing).count, 0)
    }

    func testAPostRedirectedBy307Or308WithinTheOriginSendsTheSameBodyAgain() async throws {
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        let body = #"{"cid":"env_test","h":[{"t":"EVENT","ea":"é \u00e9"}],  "qt":1}"#
        for status in [307, 308] {
            server.injectFault(.redirect(status, location: "/"), on: .events, share: .next(1))

            let response = try await transport.send(batchRequest(body))

            XCTAssertEqual(response.status, 200)
        }
        let requests = server.received(.events)
        XCTAssertEqual(requests.map(\.status), [307, 200, 308, 200])
        XCTAssertEqual(requests.map(\.request.method), ["POST", "POST", "POST", "POST"])
        XCTAssertEqual(Set(requests.map(\.request.body)), [Data(body.utf8)])
    }

    func testAGetIsStillFollowedWithinTheOriginBy302() async throws {
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        server.injectFault(.redirect(302, location: bucketingPath + "?moved=1"), on: .bucketing, share: .next(1))
        let url = server.bucketingBaseURL.flagshipEndpoint(path: [Self.envId, "bucketing.json"])

        let response = try await transport.send(FSHTTPRequest(method: .get, url: url, timeout: 2))

        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(server.received.map(\.status), [302, 200])
        XCTAssertEqual(server.received.last?.request.queryValues("moved"), ["1"])
    }

    // MARK: The SDK

    func testHitsRedirectedBy301WithinTheOriginStayCached() async throws {
        try await assertHitKept(redirectedBy: 301, to: bucketingPath)
    }

    func testHitsRedirectedBy302WithinTheOriginStayCached() async throws {
        try await assertHitKept(redirectedBy: 302, to: bucketingPath)
    }

    func testHitsRedirectedBy303ToTheEventsPathItselfStayCached() async throws {
        try await assertHitKept(redirectedBy: 303, to: "/")
    }

    func testHitsRedirectedBy302ToAnotherOriginStayCached() async throws {
        let origin = "http://127.0.0.1:\(try XCTUnwrap(elsewhere.port))"
        try await assertHitKept(redirectedBy: 302, to: origin + "/", logged: "redirected the request to another origin, \(origin)")
    }

    func testActivatesRedirectedBy303WithinTheOriginStayCached() async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        try await visitor.fetchFlags()
        await flagship.waitUntilTrackingIsIdle()
        server.injectFault(.redirect(303, location: bucketingPath), on: .activate, share: .next(1))

        XCTAssertEqual(visitor.getFlag(key: "banner").value(defaultValue: "none"), "summer")
        try await waitUntil("the redirected activate") { self.server.received(.activate).count == 1 }
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(try storedHits().filter { $0.type == "ACTIVATE" }.map(\.attempts), [1], "kept for a retry")
        XCTAssertEqual(server.received(.bucketing).count, 0)
        try assertLogNames("redirect (HTTP 303) to http://127.0.0.1:\(try XCTUnwrap(server.port))\(bucketingPath)")

        clock.advance(by: 1)
        let activates = try await server.waitForActivates(count: 1)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(activates.map { $0["vaid"]?.stringValue }, ["var2"])
        XCTAssertEqual(try storedHits().filter { $0.type == "ACTIVATE" }, [])
    }

    /// A click redirected by `status` to `location` stays cached (one failed attempt), nothing
    /// follows the redirect, the log names the status and the target; the retry delivers it.
    private func assertHitKept(redirectedBy status: Int, to location: String, logged: String? = nil,
                               file: StaticString = #filePath, line: UInt = #line) async throws {
        start(trackingBuilder())
        let visitor = makeVisitor()
        _ = try await server.waitForHits(count: 1)  // the consent hit
        await flagship.waitUntilTrackingIsIdle()
        server.injectFault(.redirect(status, location: location), on: .events, share: .next(1))

        try await visitor.sendHit(click(1))
        await flagship.waitUntilTrackingIsIdle()

        XCTAssertEqual(try storedClickLabels(), ["hit-1"], "kept", file: file, line: line)
        XCTAssertEqual(try storedHits().map(\.attempts), [1], file: file, line: line)
        XCTAssertEqual(server.received.filter { $0.request.method != "POST" }.count, 0, "no GET followed", file: file, line: line)
        XCTAssertEqual(elsewhere.received.count, 0, file: file, line: line)
        let expected = try logged ?? "redirect (HTTP \(status)) to http://127.0.0.1:\(XCTUnwrap(server.port))\(location)"
        try assertLogNames(expected, file: file, line: line)

        clock.advance(by: 1)
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(deliveredClickLabels(), ["hit-1"], file: file, line: line)
        XCTAssertEqual(try storedHits(), [], file: file, line: line)
    }

    /// A warning names the redirect (its status and where it pointed) and says the hits are kept.
    private func assertLogNames(_ redirect: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let lines = log.entries.filter { $0.message.contains(redirect) }
        XCTAssertFalse(lines.isEmpty, log.allText, file: file, line: line)
        XCTAssertTrue(lines.allSatisfy { $0.level == .warning }, "\(lines)", file: file, line: line)
        XCTAssertTrue(lines.allSatisfy { $0.message.contains("kept") }, "\(lines)", file: file, line: line)
    }
}
