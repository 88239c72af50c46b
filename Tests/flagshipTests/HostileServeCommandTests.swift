import Foundation
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `flagship serve` takes what the platform takes, as the official SDKs send it, and its
/// `--record` file is its owner's alone and holds each body exactly.
final class HostileServeCommandTests: CommandTestCase {
    /// Runs `flagship serve` under umask 000 (the loosest a user can have) until its URLs are printed.
    private func serveUnderUmask000(_ arguments: [String]) async throws -> (FlagshipExecutable.Running, decisionURL: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", #"umask 000 && exec "$0" "$@""#, try FlagshipExecutable.location().path, "serve", "--port", "0"]
            + arguments
        let stdoutURL = outputDirectory.appendingPathComponent("serve.stdout")
        let stderrURL = outputDirectory.appendingPathComponent("serve.stderr")
        for url in [stdoutURL, stderrURL] { XCTAssertTrue(FileManager.default.createFile(atPath: url.path, contents: nil)) }
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        try process.run()
        let running = FlagshipExecutable.Running(process: process, arguments: process.arguments ?? [], stdoutURL: stdoutURL,
                                                 stderrURL: stderrURL)
        addTeardownBlock { running.kill(SIGTERM) }
        return (running, try await running.decisionURLPrinted())
    }

    func testAPythonSDKActivateWithoutAKeyIsTakenAndRecordedExactlyInAPrivateFile() async throws {
        let record = outputDirectory.appendingPathComponent("requests.jsonl")
        let (serving, decisionURL) = try await serveUnderUmask000(["--env-id", "env", "--api-key", "k", "--record", record.path])
        // As the official Python SDK 3.0.1 sends it (requests, json.dumps): no x-api-key.
        let body = Data(#"{"cid": "env", "batch": [{"vid": "v1", "aid": null, "caid": "vg1", "vaid": "var1", "qt": 7}]}"#.utf8)
        var statuses: [Int] = []
        for key in [nil, "wrong"] as [String?] {
            var request = URLRequest(url: try XCTUnwrap(URL(string: decisionURL + "/activate")))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            if let key { request.setValue(key, forHTTPHeaderField: "x-api-key") }
            request.httpBody = body
            let (_, response) = try await URLSession.shared.data(for: request)
            statuses.append(try XCTUnwrap(response as? HTTPURLResponse).statusCode)
        }
        serving.kill(SIGTERM)
        _ = try serving.waitForExit(timeout: 10)

        XCTAssertEqual(statuses, [204, 403])
        let mode = try FileManager.default.attributesOfItem(atPath: record.path)[.posixPermissions] as? NSNumber
        XCTAssertEqual(mode?.intValue, 0o600)
        let lines = try String(contentsOf: record, encoding: .utf8).split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        XCTAssertEqual(lines.map { $0["status"] as? Int }, [204, 403])
        XCTAssertEqual(lines.map { ($0["bodyText"] as? String).map { Data($0.utf8) } }, [body, body])
    }

    func testAnExistingRecordFileOthersCanReadIsNamedInAWarning() async throws {
        let record = outputDirectory.appendingPathComponent("shared.jsonl")
        XCTAssertTrue(FileManager.default.createFile(atPath: record.path, contents: nil, attributes: [.posixPermissions: 0o644]))
        let (serving, _) = try await serveUnderUmask000(["--env-id", "env", "--api-key", "k", "--record", record.path])
        serving.kill(SIGTERM)
        let result = try serving.waitForExit(timeout: 10)

        XCTAssertTrue(result.stderr.contains("warning: other users can read or change the record file \(record.path) (mode 644)"),
                      result.stderr)
    }
}

extension FlagshipExecutable.Running {
    /// Waits (10 s at most) for `flagship serve` to print its URLs, and returns its --decision-url.
    func decisionURLPrinted() async throws -> String {
        var printed = ""
        let deadline = Date().addingTimeInterval(10)
        while !printed.contains("Ctrl-C to stop."), Date() < deadline, process.isRunning {
            try await Task.sleep(nanoseconds: 10_000_000)
            printed = try stdoutSoFar()
        }
        return String(try XCTUnwrap(printed.split(whereSeparator: \.isWhitespace).drop { $0 != "--decision-url" }.dropFirst().first, printed))
    }
}
