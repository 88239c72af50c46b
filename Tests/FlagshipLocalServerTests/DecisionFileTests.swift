import Foundation
import XCTest

import FlagshipLocalServer

/// `DecisionSource.file(atPath:)` (behind `flagship serve --decision-file`) takes a decision
/// file, and refuses at once one that is not a decision.
final class DecisionFileTests: ServerTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("local-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    private func write(_ text: String) throws -> String {
        let file = directory.appendingPathComponent("decision-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: file)
        return file.path
    }

    func testADecisionFileIsServedWithTheRequestsVisitorId() async throws {
        let path = try write(#"{"visitorId": "from-file", "campaigns": [{"id": "c1", "variation": {"modifications": {"type": "FLAG", "value": {"k": 1}}}}]}"#)
        server.decision = try DecisionSource.file(atPath: path)

        let reply = try await fetchDecision(visitorId: "dave")

        XCTAssertEqual(reply.json?["visitorId"], "dave")
        XCTAssertEqual(reply.json?["campaigns"]?[0]?["variation"]?["modifications"]?["value"], ["k": 1])
    }

    func testAPanicFileIsADecision() throws {
        let path = try write(#"{"panic": true}"#)

        XCTAssertEqual(try DecisionSource.loadDecision(atPath: path), ["panic": true])
    }

    func testFilesThatAreNotDecisionsAreRefusedWithTheReason() throws {
        let cases = [
            (try write("{\"campaigns\": ["), "is not JSON"),
            (try write("[1, 2]"), "is not a JSON object"),
            (try write(#"{"campaigns": {}}"#), #"has no "campaigns" array (nor "panic": true)"#),
        ]
        for (path, reason) in cases {
            XCTAssertThrowsError(try DecisionSource.file(atPath: path)) { error in
                XCTAssertEqual(error as? LocalServerError, .decisionFile(path: path, reason: reason))
            }
        }
    }

    func testAMissingFileIsRefusedNamingIt() throws {
        let path = directory.appendingPathComponent("missing.json").path

        XCTAssertThrowsError(try DecisionSource.file(atPath: path)) { error in
            XCTAssertTrue("\(error)".hasPrefix("the decision file \(path) cannot be read"), "\(error)")
        }
    }
}
