import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

/// A test of `flagship send-hit` and `flagship replay` against a local Flagship server in this
/// process, which the test takes down and brings back on the same port.
class HitCommandTestCase: CommandTestCase {
    private(set) var server: LocalFlagshipServer!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = LocalFlagshipServer(envId: "env", apiKey: "key")
        try server.start()
    }

    override func tearDownWithError() throws {
        server.stop()
        try super.tearDownWithError()
    }

    /// Stops the server: its port refuses connections until `serverUp()`.
    func serverDown() {
        server.stop()
    }

    /// Starts the server again on its port, having forgotten what it received.
    func serverUp() throws {
        try server.start()
        server.clearReceived()
    }

    /// The options every SDK command of these tests takes: credentials, servers, the store.
    func sdkOptions(db: URL? = nil) -> [String] {
        ["--env-id", "env", "--api-key", "key", "--db", (db ?? storeFile).path,
         "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString]
    }

    func sendHit(_ hit: [String], db: URL? = nil) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.run(["send-hit", "--visitor-id", "v1"] + sdkOptions(db: db) + hit, outputDirectory: outputDirectory)
    }

    func replay(db: URL? = nil) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.run(["replay"] + sdkOptions(db: db), outputDirectory: outputDirectory)
    }

    /// The one-line JSON summary a command printed last, as numbers.
    func summary(_ result: FlagshipExecutable.Result, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Int] {
        let last = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        return try XCTUnwrap(try? parseJSON(last) as? [String: Int], "stdout: \(result.stdout)\nstderr: \(result.stderr)",
                             file: file, line: line)
    }

    /// The hits in the store, told apart by type, action and label, each with how many there are
    /// (hits created in one millisecond have no order a reader can rely on).
    func storedHits(db: URL? = nil) throws -> [StoredHit: Int] {
        let store = try FlagshipDatabase.openForInspection(at: db ?? storeFile)
        defer { store.close() }
        var hits: [StoredHit: Int] = [:]
        try store.forEachHitPage { page in
            for record in page {
                let content = ((try parseJSON(record.document) as? [String: Any])?["data"] as? [String: Any])?["content"] as? [String: Any]
                hits[StoredHit(type: record.type, action: content?["ea"] as? String, label: content?["el"] as? String), default: 0] += 1
            }
        }
        return hits
    }

    struct StoredHit: Hashable {
        let type: String
        let action: String?
        let label: String?
    }

    /// For the events the server accepted with this action, the number ending each label
    /// (`<label>-<n>` or `<n>`), once per time it arrived.
    func receivedNumbers(action: String) -> [Int] {
        server.hits.filter { $0["ea"]?.stringValue == action }.compactMap { hit in
            hit["el"]?.stringValue?.split(separator: "-").last.flatMap { Int($0) }
        }
    }

    /// The consent hit every `send-hit` visitor sends at its creation.
    static let consentHit = StoredHit(type: "EVENT", action: "fs_consent", label: "swift-linux:true")
}
