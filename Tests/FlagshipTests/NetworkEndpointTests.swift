import Foundation
import XCTest

@testable import Flagship

/// The URLs the clients call, from configurable base URLs (PROTOCOL.md, sections 1 to 3).
final class NetworkEndpointTests: XCTestCase {
    private let transport = URLSessionTransport()

    override func tearDown() {
        transport.shutdown()
        super.tearDown()
    }

    func testCampaignsURLIsUnderTheDecisionBaseWithAnEncodedExtrasQuery() throws {
        for base in ["https://decision.flagship.io/v2", "https://decision.flagship.io/v2/"] {
            let client = DecisionAPIClient(envId: "env_1", apiKey: "key", baseURL: try XCTUnwrap(URL(string: base)),
                                           timeout: 2, sdkVersion: SDKInfo.version, transport: transport)
            XCTAssertEqual(client.campaignsURL.absoluteString,
                           "https://decision.flagship.io/v2/env_1/campaigns?exposeAllKeys=true&extras%5B%5D=accountSettings")
        }
    }

    func testEnvironmentIdIsOneEncodedPathSegment() throws {
        let client = DecisionAPIClient(envId: "a/b c?", apiKey: "key", baseURL: try XCTUnwrap(URL(string: "http://127.0.0.1:8080/v2")),
                                       timeout: 2, sdkVersion: SDKInfo.version, transport: transport)

        XCTAssertEqual(client.campaignsURL.absoluteString,
                       "http://127.0.0.1:8080/v2/a%2Fb%20c%3F/campaigns?exposeAllKeys=true&extras%5B%5D=accountSettings")
    }

    func testHitsGoToTheEventsRootAndActivatesUnderTheDecisionBase() throws {
        let cases: [(decision: String, events: String, hits: String, activate: String)] = [
            ("https://decision.flagship.io/v2", "https://events.flagship.io",
             "https://events.flagship.io/", "https://decision.flagship.io/v2/activate"),
            ("http://127.0.0.1:9000/v2/", "http://127.0.0.1:9001/",
             "http://127.0.0.1:9001/", "http://127.0.0.1:9000/v2/activate"),
            ("http://127.0.0.1:9000/proxy/v2", "http://127.0.0.1:9000/proxy/events",
             "http://127.0.0.1:9000/proxy/events/", "http://127.0.0.1:9000/proxy/v2/activate"),
        ]
        for (decision, events, hits, activate) in cases {
            let client = EventsClient(envId: "env", apiKey: "key", decisionBaseURL: try XCTUnwrap(URL(string: decision)),
                                      eventsBaseURL: try XCTUnwrap(URL(string: events)), timeout: 2, transport: transport)
            XCTAssertEqual(client.hitsURL.absoluteString, hits)
            XCTAssertEqual(client.activateURL.absoluteString, activate)
        }
    }

    func testSDKIdentifiesItselfAsSwiftLinux() {
        XCTAssertEqual(SDKInfo.clientName, "swift-linux")
    }

    /// One version: the changelog's newest heading names the constant every place reads.
    func testTheChangelogsNewestVersionIsTheSDKsVersion() throws {
        let changelog = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("CHANGELOG.md")
        let text = try String(contentsOf: changelog, encoding: .utf8)
        let newest = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("## ") })
        XCTAssertTrue(newest.hasPrefix("## \(SDKInfo.version) — "), "CHANGELOG.md's newest entry is \(newest), the SDK says \(SDKInfo.version)")
        XCTAssertNotNil(SDKInfo.version.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+/), "a semantic version")
    }
}
