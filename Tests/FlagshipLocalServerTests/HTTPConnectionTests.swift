import Flagship
import Foundation
import XCTest

import FlagshipLocalServer

/// HTTP/1.1 as clients speak it: kept-alive connections, pipelined requests, `100 Continue`,
/// and clear refusals of what the server does not read.
final class HTTPConnectionTests: ServerTestCase {
    private var connection: RawConnection!

    override func setUpWithError() throws {
        try super.setUpWithError()
        connection = try RawConnection(port: try XCTUnwrap(server.port))
    }

    override func tearDown() {
        connection = nil
        super.tearDown()
    }

    func testKeepAliveConnectionAnswersRequestsInOrderUntilClose() throws {
        try connection.write(rawPost("/", body: #"{"h":[{"n":1}]}"#) + rawPost("/", body: #"{"h":[{"n":2}]}"#, headers: ["Connection: close"]))

        let received = connection.receiveAll()

        XCTAssertEqual(received.components(separatedBy: "HTTP/1.1 200 OK\r\n").count - 1, 2, received)
        XCTAssertTrue(received.contains("Connection: keep-alive\r\n"), received)
        XCTAssertTrue(received.hasSuffix("Connection: close\r\n\r\n"), received)
        XCTAssertEqual(server.hits, [["n": 1], ["n": 2]])
    }

    func testExpectContinueIsAnsweredBeforeTheBody() throws {
        let body = #"{"h":[]}"#
        try connection.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertEqual(connection.receive { $0.hasSuffix("\r\n\r\n") }, "HTTP/1.1 100 Continue\r\n\r\n")

        try connection.write(body)

        XCTAssertTrue(connection.receive { $0.hasSuffix("\r\n\r\n") }.hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    func testChunkedBodyIsRefusedWith501AndAReason() throws {
        try connection.write("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")

        let received = connection.receiveAll()

        XCTAssertTrue(received.hasPrefix("HTTP/1.1 501 Not Implemented\r\n"), received)
        XCTAssertTrue(received.hasSuffix(#"{"message":"Transfer-Encoding bodies (chunked) are not supported: send Content-Length"}"#), received)
        XCTAssertEqual(server.received.count, 0)
    }

    func testMalformedRequestLineIs400AndCloses() throws {
        try connection.write("HELLO\r\n\r\n")

        let received = connection.receiveAll()

        XCTAssertTrue(received.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), received)
        XCTAssertTrue(received.hasSuffix(#"{"message":"malformed request line"}"#), received)
    }

    func testABodyArrivingInPiecesIsReadWhole() throws {
        let body = #"{"cid":"env_1","h":[{"vid":"slow","t":"EVENT"}]}"#
        let request = rawPost("/", body: body)
        for piece in stride(from: 0, to: request.utf8.count, by: 7) {
            let bytes = Array(request.utf8)[piece..<min(piece + 7, request.utf8.count)]
            try connection.write(String(decoding: bytes, as: UTF8.self))
        }

        XCTAssertTrue(connection.receive { $0.hasSuffix("\r\n\r\n") }.hasPrefix("HTTP/1.1 200 OK\r\n"))
        XCTAssertEqual(server.hits, [["vid": "slow", "t": "EVENT"]])
    }

    func testALargeBodyAndALargeAnswerPassWhole() async throws {
        let hits = (0..<20_000).map { FSJSONValue.object(["vid": .string("visitor-\($0)"), "t": "EVENT", "ea": "click"]) }
        let decision = Data(#"{"campaigns":[],"padding":""#.utf8 + Data(repeating: UInt8(ascii: "x"), count: 3_000_000) + Data(#""}"#.utf8))
        server.decision = .fixed(decision)

        let sent = try await sendHits(hits)
        let reply = try await fetchDecision()

        XCTAssertEqual(sent.status, 200)
        XCTAssertEqual(server.hits.count, 20_000)
        XCTAssertEqual(reply.body, decision)
    }
}

/// What the server holds of requests still arriving is bounded over all its connections
/// (`Configuration.maximumBufferedBytes`): past it a connection is answered 503 and closed, and
/// counted; the others go on. A head is held to its limit whether it is complete or not.
final class BufferedBytesLimitTests: XCTestCase {
    func testAConnectionWhoseBytesWouldPassTheServersLimitIsRefusedWith503AndTheOthersAreAnswered() throws {
        let server = LocalFlagshipServer(.init(envId: "env_1", apiKey: "key_1", maximumBufferedBytes: 100_000))
        try server.start()
        defer { server.stop() }
        let port = try XCTUnwrap(server.port)
        func request(number: Int) -> String {
            let padding = String(repeating: "x", count: 60_000)
            return rawPost("/", body: #"{"h":[{"n":\#(number),"pad":"\#(padding)"}]}"#, headers: ["Connection: close"])
        }

        // The first request arrives in part and waits for the rest: 50,000 of its bytes held.
        let first = try RawConnection(port: port)
        let whole = request(number: 1)
        let cut = whole.utf8.index(whole.utf8.startIndex, offsetBy: 50_000)
        try first.write(String(whole[..<cut]))
        let deadline = Date().addingTimeInterval(10)
        while server.bytesHeld < 50_000, Date() < deadline { usleep(1_000) }
        XCTAssertEqual(server.bytesHeld, 50_000, "the server holds what arrived of the first request")
        // The second would take the server past 100,000 bytes held.
        let second = try RawConnection(port: port)
        try? second.write(request(number: 2))
        let refused = second.receiveAll()
        try first.write(String(whole[cut...]))
        let answered = first.receiveAll()

        XCTAssertTrue(answered.hasPrefix("HTTP/1.1 200 OK\r\n"), String(answered.prefix(200)))
        // The refusal is sent; a client still sending when the server closes may see a reset instead.
        if !refused.isEmpty {
            XCTAssertTrue(refused.hasPrefix("HTTP/1.1 503 "), String(refused.prefix(200)))
            XCTAssertTrue(refused.contains("Retry-After: 1\r\n"), refused)
        }
        XCTAssertEqual(server.refusedOverBufferLimit, 1)
        XCTAssertEqual(server.hits.count, 1, "only the first request's hit was taken")
    }

    func testACompleteHeadOverTheLimitIsRefusedLikeOneStillArriving() throws {
        let server = LocalFlagshipServer(envId: "env_1", apiKey: "key_1")
        try server.start()
        defer { server.stop() }
        let connection = try RawConnection(port: try XCTUnwrap(server.port))
        try connection.write("GET / HTTP/1.1\r\n" + String(repeating: "X-Long: yes\r\n", count: 6_000) + "\r\n")
        XCTAssertTrue(connection.receiveAll().hasPrefix("HTTP/1.1 431 "))
    }
}
