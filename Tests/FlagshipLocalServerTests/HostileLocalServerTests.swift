import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

import FlagshipLocalServer

/// The local server takes what the platform takes, and its record file keeps what arrived
/// exactly, where only its owner can read it.
final class HostileLocalServerTests: ServerTestCase {
    // MARK: The API key, as the official SDKs send it

    /// The official Python SDK (3.0.1) posts its activate batch with `requests`: no `x-api-key`,
    /// `json.dumps` spacing. The platform takes it; so does the local server.
    private func pythonActivate(apiKeyHeader: String? = nil) throws -> (reply: String, body: String) {
        let body = #"{"cid": "env_1", "batch": [{"vid": "visitor_1", "aid": null, "caid": "vg1", "vaid": "v1", "qt": 12}]}"#
        let connection = try RawConnection(port: try XCTUnwrap(server.port))
        try connection.write(([
            "POST /v2/activate HTTP/1.1", "Host: 127.0.0.1:\(try XCTUnwrap(server.port))", "User-Agent: python-requests/2.31.0",
            "Accept-Encoding: gzip, deflate", "Accept: */*", "Connection: close", "Content-Type: application/json",
            "Content-Length: \(body.utf8.count)",
        ] + (apiKeyHeader.map { ["x-api-key: \($0)"] } ?? [])).joined(separator: "\r\n") + "\r\n\r\n" + body)
        return (connection.receiveAll(), body)
    }

    func testAnActivateWithoutAKeyAsThePythonSDKSendsItIsTaken() throws {
        let (reply, _) = try pythonActivate()

        XCTAssertTrue(reply.hasPrefix("HTTP/1.1 204"), reply)
        XCTAssertEqual(server.received(.activate).map(\.status), [204])
        XCTAssertEqual(server.activates, [["vid": "visitor_1", "aid": nil, "caid": "vg1", "vaid": "v1", "qt": 12]])
    }

    func testAnActivateWithAWrongKeyIsStillRefused() throws {
        let (wrong, _) = try pythonActivate(apiKeyHeader: "key_2")
        let (empty, _) = try pythonActivate(apiKeyHeader: "")
        let (right, _) = try pythonActivate(apiKeyHeader: Self.apiKey)

        XCTAssertTrue(wrong.hasPrefix("HTTP/1.1 403"), wrong)
        XCTAssertTrue(wrong.contains("invalid x-api-key"), wrong)
        XCTAssertTrue(empty.hasPrefix("HTTP/1.1 403"), empty)
        XCTAssertTrue(right.hasPrefix("HTTP/1.1 204"), right)
        XCTAssertEqual(server.activates.count, 1, "only the right key's entries count")
    }

    func testTheDecisionAPIStillNeedsTheKey() async throws {
        let missing = try await client.post(campaignsURL, json: Self.decisionBody(), apiKey: nil)
        let wrong = try await client.post(campaignsURL, json: Self.decisionBody(), apiKey: "key_2")

        XCTAssertEqual([missing.status, wrong.status], [403, 403])
    }

    func testHitBatchesAsTheSDKsSendThemNeedNoKey() throws {
        let connection = try RawConnection(port: try XCTUnwrap(server.port))
        let body = #"{"cid": "env_1", "ds": "APP", "t": "BATCH", "qt": 3, "h": [{"vid": "visitor_1", "t": "EVENT", "ec": "Action Tracking", "ea": "click", "qt": 3}]}"#
        try connection.write(rawPost("/", body: body, headers: ["Connection: close"]))

        XCTAssertTrue(connection.receiveAll().hasPrefix("HTTP/1.1 200"))
        XCTAssertEqual(server.hits.count, 1)
    }

    // MARK: The record file

    private func recordFile() -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-record-\(UUID().uuidString).jsonl")
        addTeardownBlock { try? FileManager.default.removeItem(at: file) }
        return file
    }

    private func recordedLines(_ file: URL) throws -> [[String: Any]] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    func testTheRecordFileKeepsEveryBodyByteForByte() async throws {
        let file = recordFile()
        let recording = LocalFlagshipServer(envId: "env_r", apiKey: "k", recordFile: file)
        try recording.start()
        defer { recording.stop() }
        let bodies: [Data] = [
            // Spacing, key order, a duplicate key, number spellings, escapes: what a parser forgets.
            Data(#"{ "h" : [ {"z":1, "a":1.0, "a":2, "big": 123456789012345678901234567890, "e": 1E+2, "s":"\u00e9\/\t", "n":-0} ], "cid":"env_r" }"#.utf8),
            Data("{\"h\":[],\"note\":\"é \u{2028} \u{1F600} \u{7}\"}\n\r\n".utf8),
            // Not UTF-8 at all.
            Data([0x7B, 0xFF, 0xFE, 0x00, 0x80, 0x7D]),
            Data(),
        ]
        for body in bodies {
            _ = try await client.post(recording.eventsBaseURL, body: body)
        }

        let lines = try recordedLines(file)
        XCTAssertEqual(lines.count, bodies.count)
        for (line, body) in zip(lines, bodies) {
            let recorded: Data? = if let text = line["bodyText"] as? String {
                Data(text.utf8)
            } else {
                (line["bodyBase64"] as? String).flatMap { Data(base64Encoded: $0) }
            }
            XCTAssertEqual(recorded, body, "\(line)")
        }
        XCTAssertEqual(lines[2]["bodyText"] as? String, nil, "not UTF-8: base64 only")
        XCTAssertEqual(lines[2]["bodyBase64"] as? String, "e//+AIB9")
    }

    func testTheRecordFileIsCreatedForItsOwnerOnlyWhateverTheUmask() throws {
        let file = recordFile()
        let previous = umask(0)
        defer { umask(previous) }
        let recording = LocalFlagshipServer(envId: "e", apiKey: "k", recordFile: file)

        try recording.start()
        recording.stop()

        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
    }
}
