import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// `URLSessionTransport` on its own, against a real HTTP server on 127.0.0.1.
final class NetworkTransportTests: LocalServerTestCase {

    override func makeServer() -> LocalFlagshipServer {
        LocalFlagshipServer(envId: "env", apiKey: "key", decision: .fixed(Data(#"{"campaigns":[]}"#.utf8)))
    }

    private func campaignsRequest(timeout: TimeInterval = 2) -> FSHTTPRequest {
        FSHTTPRequest.flagshipPOST(url: server.decisionBaseURL.flagshipEndpoint(path: ["env", "campaigns"]),
                                 body: Data("{}".utf8), apiKey: "key", sdkVersion: "9.9.9", timeout: timeout)
    }

    func testAnAnswerOfAnyStatusIsAResponseWithItsBodyAndLowercasedHeaders() async throws {
        let ok = try await transport.send(campaignsRequest())
        server.injectFault(.status(503), share: .next(1))
        let unavailable = try await transport.send(campaignsRequest())

        XCTAssertEqual(ok.status, 200)
        XCTAssertEqual(String(decoding: ok.body, as: UTF8.self), #"{"campaigns":[]}"#)
        XCTAssertEqual(ok.headers["content-type"], "application/json")
        XCTAssertEqual(ok.headers["content-length"], "16")
        XCTAssertEqual(unavailable.status, 503)
        XCTAssertEqual(unavailable.isSuccess, false)
        XCTAssertEqual(String(decoding: unavailable.body, as: UTF8.self), #"{"message":"injected fault: status 503"}"#)
    }

    func testHeadersAndBodyAreSentAsGiven() async throws {
        _ = try await transport.send(campaignsRequest())

        let request = try XCTUnwrap(server.received.first).request
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.headers["x-sdk-version"], "9.9.9")
        XCTAssertEqual(request.headers["x-api-key"], "key")
        XCTAssertNil(request.headers["Cookie"])
        XCTAssertEqual(request.body, Data("{}".utf8))
    }

    func testManyConcurrentRequestsAllComeBack() async throws {
        let transport = transport!
        let request = campaignsRequest()

        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask { (try? await transport.send(request))?.status ?? -1 }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }

        XCTAssertEqual(statuses, Array(repeating: 200, count: 50))
        XCTAssertEqual(server.received(.campaigns).count, 50)
    }

    func testASubSecondTimeoutIsHonouredAndNotTruncatedToZero() async throws {
        // FoundationNetworking would turn a 0.5 s `timeoutInterval` into an immediate timeout.
        server.injectFault(.latency(.milliseconds(200)), share: .next(1))

        let response = try await transport.send(campaignsRequest(timeout: 0.5))

        XCTAssertEqual(response.status, 200)
    }

    func testTimeoutsThatAreNotFiniteOrNegativeDoNotTrap() async throws {
        let infinite = try await transport.send(campaignsRequest(timeout: .infinity))
        let notANumber = try await transport.send(campaignsRequest(timeout: .nan))

        XCTAssertEqual(infinite.status, 200)
        XCTAssertEqual(notANumber.status, 200)
        do {
            _ = try await transport.send(campaignsRequest(timeout: -1))
            XCTFail("a negative timeout has already passed")
        } catch {
            XCTAssertEqual(error, .timedOut(after: 0))
        }
        XCTAssertEqual(TransportError.timedOut(after: .infinity).description, "no complete answer within inf s")
        XCTAssertEqual(DecisionError.timedOut(after: .nan).description, "the Decision API did not answer within nan s")
    }

    func testAnAlreadyCancelledTaskSendsNothing() async throws {
        let transport = transport!
        let request = campaignsRequest()

        let task = Task { () async -> TransportError? in
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                _ = try await transport.send(request)
                return nil
            } catch {
                return error as? TransportError
            }
        }
        let error = await task.value

        XCTAssertEqual(error, .cancelled)
        XCTAssertEqual(server.received.count, 0)
    }

    func testShutdownCancelsRequestsInFlight() async throws {
        server.injectFault(.latency(.seconds(5)))
        let transport = transport!
        let request = campaignsRequest(timeout: 4)
        let clock = ContinuousClock()

        let task = Task { () async -> TransportError? in
            do {
                _ = try await transport.send(request)
                return nil
            } catch {
                return error as? TransportError
            }
        }
        _ = try await server.waitForRequests(route: .campaigns)
        let shutDown = clock.now
        transport.shutdown()
        let error = await task.value

        // The error says the shutdown ended the request (the 4 s timeout would say timedOut);
        // the time, from the shutdown on, that it did so at once.
        XCTAssertEqual(error, .cancelled)
        XCTAssertLessThan(clock.now - shutDown, .milliseconds(1_500))
    }

    func testADeclaredBodyOverTheCapIsRefusedBeforeItIsRead() async throws {
        let small = URLSessionTransport(maxResponseBytes: 1_000)
        defer { small.shutdown() }
        server.decision = .fixed(Data(repeating: UInt8(ascii: " "), count: 1_001))

        do {
            _ = try await small.send(campaignsRequest())
            XCTFail("the body is over the cap")
        } catch {
            XCTAssertEqual(error, .responseTooLarge(limit: 1_000))
            XCTAssertEqual(error.description, "the answer is larger than 1000 bytes and was not read")
        }
        server.decision = .fixed(Data(repeating: UInt8(ascii: " "), count: 1_000))
        let atTheCap = try await small.send(campaignsRequest())
        XCTAssertEqual(atTheCap.body.count, 1_000)
    }
}
