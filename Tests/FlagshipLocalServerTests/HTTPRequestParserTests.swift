import Foundation
import XCTest

@testable import FlagshipLocalServer

/// Reading requests off the front of a connection's bytes.
final class HTTPRequestParserTests: XCTestCase {
    private func parse(_ text: String) -> HTTPRequestParser.Result {
        HTTPRequestParser.parse(Array(text.utf8))
    }

    func testAWholeRequestIsTakenWithItsBodyAndNotMore() throws {
        guard case .request(let request, let consumed) = parse("POST /v2/activate HTTP/1.1\r\nContent-Length: 2\r\nX-Api-Key: k\r\n\r\n{}GET") else {
            return XCTFail("a whole request")
        }
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.target, "/v2/activate")
        XCTAssertEqual(request.body, Data("{}".utf8))
        XCTAssertEqual(request.headers.map(\.value), ["2", "k"])
        XCTAssertTrue(request.keepAlive)
        XCTAssertEqual(consumed, "POST /v2/activate HTTP/1.1\r\nContent-Length: 2\r\nX-Api-Key: k\r\n\r\n{}".utf8.count)
    }

    func testIncompleteHeadOrBodyWaits() {
        guard case .incomplete(false) = parse("POST / HTTP/1.1\r\nContent-Le") else { return XCTFail("head incomplete") }
        guard case .incomplete(false) = parse("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n{}") else { return XCTFail("body incomplete") }
        guard case .incomplete(true) = parse("POST / HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n") else {
            return XCTFail("expects continue")
        }
    }

    func testKeepAliveFollowsVersionAndConnectionHeader() {
        func keepAlive(_ head: String) -> Bool? {
            if case .request(let request, _) = parse(head + "\r\n\r\n") { return request.keepAlive }
            return nil
        }
        XCTAssertEqual(keepAlive("GET / HTTP/1.1"), true)
        XCTAssertEqual(keepAlive("GET / HTTP/1.1\r\nConnection: Close"), false)
        XCTAssertEqual(keepAlive("GET / HTTP/1.0"), false)
        XCTAssertEqual(keepAlive("GET / HTTP/1.0\r\nConnection: keep-alive"), true)
    }

    func testRequestsTheServerCannotReadAreRefusedWithAStatus() {
        let cases: [(String, Int)] = [
            ("NONSENSE\r\n\r\n", 400),
            ("GET / HTTP/2.0\r\n\r\n", 505),
            ("POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
            ("POST / HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n", 413),
            ("POST / HTTP/1.1\r\nbad header\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\n" + String(repeating: "X-Long: yes\r\n", count: 6000), 431),
            ("GET / HTTP/1.1\r\n" + String(repeating: "X-Long: yes\r\n", count: 6000) + "\r\n", 431),
        ]
        for (text, expected) in cases {
            guard case .invalid(let status, _) = parse(text) else {
                XCTFail("\(text.prefix(40)) should be refused")
                continue
            }
            XCTAssertEqual(status, expected, String(text.prefix(40)))
        }
    }
}
