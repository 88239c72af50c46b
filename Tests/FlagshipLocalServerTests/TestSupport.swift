import Flagship
import Foundation
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

import FlagshipLocalServer

/// A started server (env `env_1`, key `key_1`) and a URLSession client, torn down after each test.
class ServerTestCase: XCTestCase {
    static let envId = "env_1"
    static let apiKey = "key_1"

    private(set) var server: LocalFlagshipServer!
    private(set) var client: TestClient!

    /// The decision the server starts with.
    var initialDecision: DecisionSource { .fixed(Data(#"{"visitorId":"fixed","campaigns":[]}"#.utf8)) }

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = LocalFlagshipServer(envId: Self.envId, apiKey: Self.apiKey, decision: initialDecision)
        try server.start()
        client = TestClient()
    }

    override func tearDown() {
        server?.stop()
        client?.invalidate()
        super.tearDown()
    }

    var campaignsURL: URL {
        URL(string: "\(server.decisionBaseURL.absoluteString)/\(Self.envId)/campaigns?exposeAllKeys=true&extras%5B%5D=accountSettings")!
    }

    var activateURL: URL { server.decisionBaseURL.appendingPathComponent("activate") }

    var eventsURL: URL { server.eventsBaseURL }

    /// A decision request body as the SDK sends it.
    static func decisionBody(visitorId: String = "visitor_1") -> FSJSONValue {
        ["visitorId": .string(visitorId), "anonymousId": nil, "context": ["isVip": true, "age": 32], "trigger_hit": false, "visitor_consent": true]
    }

    /// Posts the decision request for `visitorId` with the right key.
    func fetchDecision(visitorId: String = "visitor_1") async throws -> TestClient.Reply {
        try await client.post(campaignsURL, json: Self.decisionBody(visitorId: visitorId), apiKey: Self.apiKey)
    }

    func activate(_ entries: [FSJSONValue], apiKey: String? = ServerTestCase.apiKey) async throws -> TestClient.Reply {
        try await client.post(activateURL, json: ["cid": .string(Self.envId), "batch": .array(entries)], apiKey: apiKey)
    }

    func sendHits(_ hits: [FSJSONValue]) async throws -> TestClient.Reply {
        try await client.post(eventsURL, json: ["cid": .string(Self.envId), "ds": "APP", "t": "BATCH", "h": .array(hits)], apiKey: nil)
    }
}

/// Requests made the way the SDK makes them: URLSession, keep-alive connections.
final class TestClient: Sendable {
    struct Reply: Sendable {
        let status: Int
        let body: Data
        var json: FSJSONValue? { try? FSJSONValue(parsing: body) }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private let session: URLSession

    init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        session = URLSession(configuration: configuration)
    }

    func post(_ url: URL, json: FSJSONValue, apiKey: String?) async throws -> Reply {
        try await post(url, body: json.jsonData(), headers: apiKey.map { ["x-api-key": $0] } ?? [:])
    }

    func post(_ url: URL, body: Data, headers: [String: String] = [:]) async throws -> Reply {
        try await send(url, method: "POST", body: body, headers: headers)
    }

    func send(_ url: URL, method: String, body: Data? = nil, headers: [String: String] = [:]) async throws -> Reply {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw TestFailure("not an HTTP response: \(response)") }
        return Reply(status: http.statusCode, body: data)
    }

    func invalidate() {
        session.invalidateAndCancel()
    }
}

/// One TCP connection driven byte by byte, for what URLSession hides: half-sent bodies,
/// pipelining, `100 Continue`, malformed requests. Blocking, with a receive timeout.
final class RawConnection {
    private let descriptor: Int32

    init(port: UInt16) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket: \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw TestFailure("connect to port \(port): errno \(errno)")
        }
    }

    deinit {
        close(descriptor)
    }

    func write(_ text: String) throws {
        #if os(Linux)
        let flags = Int32(MSG_NOSIGNAL)
        #else
        let flags: Int32 = 0
        #endif
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, flags) }
            guard sent > 0 else { throw TestFailure("send: errno \(errno)") }
            offset += sent
        }
    }

    /// Reads until `done` says the bytes so far are enough, the server closes, or 5 s pass.
    func receive(until done: (String) -> Bool = { _ in false }) -> String {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while !done(String(decoding: received, as: UTF8.self)) {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received.append(contentsOf: chunk[..<count])
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads to the end of the stream: what the server sent before closing.
    func receiveAll() -> String { receive() }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A POST request's text with a JSON body.
func rawPost(_ path: String, body: String, headers: [String] = []) -> String {
    (["POST \(path) HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", "Content-Length: \(body.utf8.count)"] + headers)
        .joined(separator: "\r\n") + "\r\n\r\n" + body
}

