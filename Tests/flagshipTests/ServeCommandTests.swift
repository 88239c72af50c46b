import Foundation
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

final class ServeCommandTests: CommandTestCase {
    func testServeAnswersTheDecisionAPIRecordsAndStopsOnSIGTERM() async throws {
        let record = outputDirectory.appendingPathComponent("requests.jsonl")
        let process = Process()
        process.executableURL = try FlagshipExecutable.location()
        process.arguments = ["serve", "--env-id", "env", "--api-key", "secret-key-123", "--port", "0", "--record", record.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // The first lines name the URLs to give the SDK.
        var printed = ""
        let reader = output.fileHandleForReading
        while !printed.contains("Ctrl-C to stop.") {
            let chunk = reader.availableData
            guard !chunk.isEmpty else { break }
            printed += String(decoding: chunk, as: UTF8.self)
        }
        let decisionURL = try XCTUnwrap(printed.split(separator: " ").drop { $0 != "--decision-url" }.dropFirst().first.map(String.init))
        XCTAssertTrue(decisionURL.hasPrefix("http://127.0.0.1:") && decisionURL.hasSuffix("/v2"), printed)

        var request = URLRequest(url: try XCTUnwrap(URL(string: decisionURL + "/env/campaigns")))
        request.httpMethod = "POST"
        request.setValue("secret-key-123", forHTTPHeaderField: "x-api-key")
        request.httpBody = Data(#"{"visitorId": "v1", "context": {}}"#.utf8)
        let (body, response) = try await URLSession.shared.data(for: request)
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 200)
        let decision = try XCTUnwrap(JSONSerialization.jsonObject(with: body) as? [String: Any])
        XCTAssertEqual(decision["visitorId"] as? String, "v1")
        XCTAssertFalse((decision["campaigns"] as? [Any] ?? []).isEmpty, "the built-in sample has campaigns")

        process.terminate()  // SIGTERM
        process.waitUntilExit()
        printed += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)

        XCTAssertEqual(process.terminationStatus, 0, printed)
        XCTAssertTrue(printed.contains("POST /v2/env/campaigns → 200"), printed)
        XCTAssertTrue(printed.contains("stopped (SIGTERM)"), printed)
        let lines = try String(contentsOf: record, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 1)
        XCTAssertFalse(lines[0].contains("secret-key-123"), "the API key is masked in the record")
    }

    func testServeRefusesADecisionFileThatIsNotADecision() throws {
        let file = outputDirectory.appendingPathComponent("decision.json")
        try Data("[1, 2]".utf8).write(to: file)

        let result = try flagship("serve", "--env-id", "env", "--api-key", "key", "--decision-file", file.path)

        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("is not a JSON object"), result.stderr)
    }
}
