import Foundation
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

final class ServeCommandTests: CommandTestCase {
    /// A `flagship serve` under way, and what it printed up to its "Ctrl-C to stop." line.
    private struct Serving {
        let process: Process
        let reader: FileHandle
        var printed: String

        /// The URL printed after `option` (`--decision-url`...) in the first lines.
        func url(after option: String) throws -> String {
            try XCTUnwrap(printed.split(whereSeparator: \.isWhitespace).drop { $0 != option }.dropFirst().first.map(String.init), printed)
        }

        /// Sends SIGTERM, waits for the exit, and adds what it printed meanwhile.
        mutating func stop() {
            process.terminate()
            process.waitUntilExit()
            printed += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        }
    }

    private func serve(_ arguments: String...) throws -> Serving {
        let process = Process()
        process.executableURL = try FlagshipExecutable.location()
        process.arguments = ["serve", "--port", "0"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        addTeardownBlock { if process.isRunning { process.terminate() } }

        // The first lines name the URLs to give the SDK.
        var printed = ""
        let reader = output.fileHandleForReading
        while !printed.contains("Ctrl-C to stop.") {
            let chunk = reader.availableData
            guard !chunk.isEmpty else { break }
            printed += String(decoding: chunk, as: UTF8.self)
        }
        return Serving(process: process, reader: reader, printed: printed)
    }

    func testServeAnswersTheDecisionAPIRecordsAndStopsOnSIGTERM() async throws {
        let record = outputDirectory.appendingPathComponent("requests.jsonl")
        var serving = try serve("--env-id", "env", "--api-key", "secret-key-123", "--record", record.path)
        let decisionURL = try serving.url(after: "--decision-url")
        XCTAssertTrue(decisionURL.hasPrefix("http://127.0.0.1:") && decisionURL.hasSuffix("/v2"), serving.printed)

        var request = URLRequest(url: try XCTUnwrap(URL(string: decisionURL + "/env/campaigns")))
        request.httpMethod = "POST"
        request.setValue("secret-key-123", forHTTPHeaderField: "x-api-key")
        request.httpBody = Data(#"{"visitorId": "v1", "context": {}}"#.utf8)
        let (body, response) = try await URLSession.shared.data(for: request)
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 200)
        let decision = try XCTUnwrap(JSONSerialization.jsonObject(with: body) as? [String: Any])
        XCTAssertEqual(decision["visitorId"] as? String, "v1")
        XCTAssertFalse((decision["campaigns"] as? [Any] ?? []).isEmpty, "the built-in sample has campaigns")

        serving.stop()

        XCTAssertEqual(serving.process.terminationStatus, 0, serving.printed)
        XCTAssertTrue(serving.printed.contains("POST /v2/env/campaigns → 200"), serving.printed)
        XCTAssertTrue(serving.printed.contains("stopped (SIGTERM)"), serving.printed)
        let lines = try String(contentsOf: record, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 1)
        XCTAssertFalse(lines[0].contains("secret-key-123"), "the API key is masked in the record")
    }

    /// Whoever reads the ready line may signal at once: the handlers are in place before it is
    /// printed (a dispatch signal source, registered later on libdispatch's thread, lost such a
    /// SIGTERM now and then, and the server ran on).
    func testASignalSentTheMomentTheReadyLineIsPrintedStopsItCleanly() throws {
        for (round, (number, name)) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")].cycled(6).enumerated() {
            var serving = try serve("--env-id", "env", "--api-key", "k")
            XCTAssertEqual(kill(serving.process.processIdentifier, number), 0)
            let deadline = Date().addingTimeInterval(10)
            while serving.process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            XCTAssertFalse(serving.process.isRunning, "round \(round): \(name) did not stop it within 10 s")
            serving.stop()
            XCTAssertEqual(serving.process.terminationReason, .exit, "round \(round)")
            XCTAssertEqual(serving.process.terminationStatus, 0, "round \(round): \(serving.printed)")
            XCTAssertTrue(serving.printed.hasSuffix("stopped (\(name))\n"), "round \(round): \(serving.printed)")
        }
    }

    func testServeRefusesADecisionFileThatIsNotADecision() throws {
        let file = outputDirectory.appendingPathComponent("decision.json")
        try Data("[1, 2]".utf8).write(to: file)

        let result = try flagship("serve", "--env-id", "env", "--api-key", "key", "--decision-file", file.path)

        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("is not a JSON object"), result.stderr)
    }

    func testServeWithABucketingFileServesItAndDecidesWithIt() async throws {
        let file = outputDirectory.appendingPathComponent("bucketing.json")
        let contents = Data(#"""
            {"campaigns": [{"id": "c1", "type": "toggle", "variationGroups": [{"id": "vg1",
              "targeting": {"targetingGroups": [{"targetings": [{"key": "fs_all_users", "operator": "EQUALS", "value": ""}]}]},
              "variations": [{"id": "v1", "allocation": 100, "modifications": {"type": "FLAG", "value": {"k": "from-file"}}}]}]}]}
            """#.utf8)
        try contents.write(to: file)
        var serving = try serve("--env-id", "env", "--api-key", "key", "--bucketing-file", file.path)
        XCTAssertTrue(serving.printed.contains("decision: bucketing file \(file.path), 1 campaign(s)"), serving.printed)
        let bucketingURL = try serving.url(after: "--bucketing-url")

        let (body, response) = try await URLSession.shared.data(from: try XCTUnwrap(URL(string: bucketingURL + "/env/bucketing.json")))
        var request = URLRequest(url: try XCTUnwrap(URL(string: try serving.url(after: "--decision-url") + "/env/campaigns")))
        request.httpMethod = "POST"
        request.setValue("key", forHTTPHeaderField: "x-api-key")
        request.httpBody = Data(#"{"visitorId": "v1", "context": {}}"#.utf8)
        let (decision, _) = try await URLSession.shared.data(for: request)
        serving.stop()

        let http = try XCTUnwrap(response as? HTTPURLResponse)
        XCTAssertEqual(http.statusCode, 200)
        XCTAssertEqual(body, contents)
        XCTAssertNotNil(http.value(forHTTPHeaderField: "Last-Modified"))
        let campaigns = try XCTUnwrap((try JSONSerialization.jsonObject(with: decision) as? [String: Any])?["campaigns"] as? [[String: Any]])
        XCTAssertEqual(campaigns.map { $0["id"] as? String }, ["c1"])
        XCTAssertEqual(try canonicalJSON(campaigns[0]["variation"] as Any), try canonicalJSON([
            "id": "v1", "name": "", "reference": false, "modifications": ["type": "FLAG", "value": ["k": "from-file"]],
        ]))
        XCTAssertTrue(serving.printed.contains("GET /env/bucketing.json → 200"), serving.printed)
    }

    func testServeSampleBucketingServesTheBuiltInFile() async throws {
        var serving = try serve("--env-id", "env", "--api-key", "key", "--sample-bucketing")
        let bucketingURL = try serving.url(after: "--bucketing-url")

        let (body, _) = try await URLSession.shared.data(from: try XCTUnwrap(URL(string: bucketingURL + "/env/bucketing.json")))
        serving.stop()

        let campaigns = try XCTUnwrap((try JSONSerialization.jsonObject(with: body) as? [String: Any])?["campaigns"] as? [[String: Any]])
        XCTAssertEqual(campaigns.map { $0["name"] as? String }, ["Checkout button", "VIP free shipping", "Plan banner"])
        XCTAssertTrue(serving.printed.contains("decision: bucketing file built-in sample, 3 campaign(s)"), serving.printed)
    }

    func testServeRefusesABucketingFileTheEngineCannotUseOrADecisionFileBesideIt() throws {
        let file = outputDirectory.appendingPathComponent("bucketing.json")
        try Data(#"{"panic": false}"#.utf8).write(to: file)

        let unusable = try flagship("serve", "--env-id", "env", "--api-key", "key", "--bucketing-file", file.path)
        let both = try flagship("serve", "--env-id", "env", "--api-key", "key", "--sample-bucketing", "--decision-file", file.path)
        let twoFiles = try flagship("serve", "--env-id", "env", "--api-key", "key", "--sample-bucketing", "--bucketing-file", file.path)

        XCTAssertEqual(unusable.status, 1)
        XCTAssertEqual(unusable.stderr, "Error: the bucketing file \(file.path): it has no \"campaigns\" and is not in panic\n")
        XCTAssertNotEqual(both.status, 0)
        XCTAssertTrue(both.stderr.contains("--decision-file cannot go with a bucketing file"), both.stderr)
        XCTAssertNotEqual(twoFiles.status, 0)
        XCTAssertTrue(twoFiles.stderr.contains("give one of --bucketing-file and --sample-bucketing"), twoFiles.stderr)
    }

    func testAPIModeAgainstTheServerAndBucketingModeOnItsFileGiveTheSameFlags() throws {
        var serving = try serve("--env-id", "env", "--api-key", "key", "--sample-bucketing")
        defer { serving.stop() }
        let urls = ["--decision-url", try serving.url(after: "--decision-url"), "--events-url", try serving.url(after: "--events-url")]
        let bucketingURL = try serving.url(after: "--bucketing-url")

        for visitor in ["alice", "bob", "carol", "dave"] {
            func flags(_ mode: [String], store: String) throws -> String {
                let result = try FlagshipExecutable.run(
                    ["fetch", "--env-id", "env", "--api-key", "key", "--visitor-id", visitor, "--context", #"{"plan": "pro"}"#,
                     "--db", outputDirectory.appendingPathComponent(store).path] + urls + mode,
                    outputDirectory: outputDirectory
                )
                XCTAssertEqual(result.status, 0, result.stderr)
                let output = try XCTUnwrap(try parseJSON(result.stdout) as? [String: Any])
                XCTAssertNil(output["error"], result.stdout)
                return try canonicalJSON(try XCTUnwrap(output["flags"]))
            }

            let api = try flags([], store: "api.sqlite")
            let bucketing = try flags(["--mode", "bucketing", "--bucketing-url", bucketingURL], store: "bucketing.sqlite")

            XCTAssertEqual(api, bucketing, visitor)
            XCTAssertTrue(api.contains(#""btnColor""#) && api.contains(#""bannerText""#), api)
        }
    }
}

private extension Array {
    /// The elements over and over, `count` in all.
    func cycled(_ count: Int) -> [Element] {
        (0..<count).map { self[$0 % self.count] }
    }
}
