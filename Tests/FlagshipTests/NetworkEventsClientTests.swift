import FlagshipLocalServer
import Foundation
import XCTest

@testable import Flagship

/// Hits and activates against a real HTTP server on 127.0.0.1 (PROTOCOL.md sections 2, 3 and 6).
final class NetworkEventsClientTests: LocalServerTestCase {
    private let envId = "env_events"
    private let apiKey = "sk_events_7a1b_secret"
    private let now: Int64 = 1_763_700_000_000

    override func makeServer() -> LocalFlagshipServer {
        LocalFlagshipServer(envId: envId, apiKey: apiKey)
    }

    private func client(timeout: TimeInterval = 2, apiKey: String? = nil) -> EventsClient {
        EventsClient(envId: envId, apiKey: apiKey ?? self.apiKey, decisionBaseURL: server.decisionBaseURL,
                     eventsBaseURL: server.eventsBaseURL, timeout: timeout, transport: transport)
    }

    private func event(_ id: String, age: Int64, label: String = "cta") -> OutgoingHit {
        OutgoingHit(id: id, type: "EVENT", createdAt: now - age, fields: [
            "t": .string("EVENT"), "vid": .string("visitor_1"), "ds": .string("APP"), "cid": .string(envId),
            "ec": .string("Action Tracking"), "ea": .string("click"), "el": .string(label), "ev": .int(3),
        ])
    }

    private func activate(_ index: Int, age: Int64 = 35) -> OutgoingHit {
        OutgoingHit(id: "a\(index)", type: "ACTIVATE", createdAt: now - age, fields: [
            "vid": .string("visitor_\(index)"), "aid": .null, "caid": .string("vg1"), "vaid": .string("v1"),
        ])
    }

    // MARK: Hits

    func testHitsGoAsOneBatchToTheEventsRootWithQueueTimesFromNow() async throws {
        let screen = OutgoingHit(id: "h2", type: "SCREENVIEW", createdAt: now - 35, fields: [
            "t": .string("SCREENVIEW"), "vid": .string("anon_1"), "cuid": .string("user_1"), "ds": .string("APP"),
            "cid": .string(envId), "dl": .string("home"),
        ])

        let results = await client().sendHits([event("h1", age: 1200), screen, event("h3", age: 0)], now: now)

        XCTAssertEqual(results, [SendResult(hitIds: ["h1", "h2", "h3"], outcome: .delivered)])
        let requests = server.received(.events)
        XCTAssertEqual(requests.count, 1)
        let request = try XCTUnwrap(requests.first).request
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.path, "/")
        XCTAssertEqual(request.query.count, 0)
        XCTAssertEqual(request.headers["Content-Type"], "application/json")
        XCTAssertEqual(request.headers["Accept"], "application/json")
        XCTAssertEqual(request.headers["x-sdk-client"], "swift-linux")
        XCTAssertEqual(request.headers["x-sdk-version"], SDKInfo.version)
        XCTAssertNil(request.headers["x-api-key"], "the events endpoint takes no API key")
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self), """
            {"cid":"env_events","ds":"APP","h":[\
            {"qt":1200,"cid":"env_events","ds":"APP","ea":"click","ec":"Action Tracking","el":"cta","ev":3,"t":"EVENT","vid":"visitor_1"},\
            {"qt":35,"cid":"env_events","cuid":"user_1","dl":"home","ds":"APP","t":"SCREENVIEW","vid":"anon_1"},\
            {"qt":0,"cid":"env_events","ds":"APP","ea":"click","ec":"Action Tracking","el":"cta","ev":3,"t":"EVENT","vid":"visitor_1"}\
            ],"qt":1200,"t":"BATCH"}
            """)
        XCTAssertEqual(request.json?["h"]?[1], [
            "t": "SCREENVIEW", "vid": "anon_1", "cuid": "user_1", "ds": "APP", "cid": "env_events", "dl": "home", "qt": 35,
        ])
    }

    func testQueueTimeIsRecomputedAtEverySend() async throws {
        let hit = event("h1", age: 0)

        _ = await client().sendHits([hit], now: now + 4_000)
        _ = await client().sendHits([hit], now: now + 65_000)

        XCTAssertEqual(server.hits.map { $0["qt"] }, [4_000, 65_000])
        XCTAssertEqual(server.received(.events).map { $0.json?["qt"] }, [4_000, 65_000])
    }

    func testAHitCreatedAfterNowHasQueueTimeZero() async throws {
        _ = await client().sendHits([event("h1", age: -500)], now: now)

        XCTAssertEqual(server.hits.map { $0["qt"] }, [0])
    }

    func testQueueTimeNeverTrapsNorGoesNegative() {
        XCTAssertEqual(EventsClient.queueTime(now: 10_000, createdAt: 8_800), 1_200)
        XCTAssertEqual(EventsClient.queueTime(now: 10_000, createdAt: 10_500), 0)
        XCTAssertEqual(EventsClient.queueTime(now: 10_000, createdAt: .min), .max)
        XCTAssertEqual(EventsClient.queueTime(now: -10, createdAt: .max), 0)
    }

    func testNothingToSendSendsNothing() async throws {
        let hits = await client().sendHits([], now: now)
        let activates = await client().sendActivates([], now: now)

        XCTAssertEqual(hits, [])
        XCTAssertEqual(activates, [])
        XCTAssertEqual(server.received.count, 0)
    }

    func testHitsAreSplitSoThatEveryBodyStaysUnder2500000Bytes() async throws {
        // Each hit is about 600 kB as JSON: four fit in a body, a fifth would not.
        let label = String(repeating: "x", count: 600_000)
        let hits = (1...9).map { event("h\($0)", age: Int64($0), label: label) }

        let results = await client(timeout: 10).sendHits(hits, now: now)

        XCTAssertEqual(results, [
            SendResult(hitIds: ["h1", "h2", "h3", "h4"], outcome: .delivered),
            SendResult(hitIds: ["h5", "h6", "h7", "h8"], outcome: .delivered),
            SendResult(hitIds: ["h9"], outcome: .delivered),
        ])
        let requests = server.received(.events)
        XCTAssertEqual(requests.map { $0.json?["h"]?.arrayValue?.count }, [4, 4, 1])
        for request in requests {
            XCTAssertLessThan(request.request.body.count, 2_500_000)
        }
        XCTAssertEqual(requests.map { $0.json?["qt"] }, [4, 8, 9], "each batch's qt is its oldest hit's")
        XCTAssertEqual(server.hits.map { $0["el"]?.stringValue?.count }, Array(repeating: 600_000, count: 9))
    }

    func testABodyIsFilledUpToTheLastByteUnderTheLimit() async throws {
        // Find the label length that makes a one-hit body exactly 2,499,999 bytes, the largest allowed.
        let probe = event("p", age: 0, label: "")
        let envelope = #"{"cid":"env_events","ds":"APP","h":[],"qt":0,"t":"BATCH"}"#.utf8.count
        let emptyEntry = probe.wireEntry(queueTime: 0).utf8.count
        let largest = String(repeating: "y", count: 2_499_999 - envelope - emptyEntry)

        let fits = await client(timeout: 10).sendHits([event("fits", age: 0, label: largest)], now: now)
        let tooLarge = await client(timeout: 10).sendHits([event("over", age: 0, label: largest + "y")], now: now)

        XCTAssertEqual(fits, [SendResult(hitIds: ["fits"], outcome: .delivered)])
        XCTAssertEqual(server.received(.events).map(\.request.body.count), [2_499_999])
        XCTAssertEqual(tooLarge.map(\.outcome), [.rejected(status: 413)])
        XCTAssertEqual(server.received(.events).count, 1)
    }

    func testAHitTooLargeForAnyBodyIsRejectedLocallyAndTheOthersAreSent() async throws {
        let huge = event("huge", age: 10, label: String(repeating: "z", count: 2_600_000))

        let results = await client(timeout: 10).sendHits([event("h1", age: 20), huge, event("h2", age: 5)], now: now)

        XCTAssertEqual(results, [
            SendResult(hitIds: ["huge"], outcome: .rejected(status: 413), rejectionReason:
                "the EVENT hit is 2600120 bytes as JSON, too large for any request (bodies must stay under 2500000 bytes)"),
            SendResult(hitIds: ["h1", "h2"], outcome: .delivered),
        ])
        XCTAssertEqual(server.hits.map { $0["el"] }, ["cta", "cta"])
    }

    func testRetryableAnswersKeepTheHitsForLater() async throws {
        for status in [500, 502, 503, 429, 408] {
            server.injectFault(.status(status), on: .events, share: .next(1))

            let results = await client().sendHits([event("h1", age: 1)], now: now)

            XCTAssertEqual(results, [SendResult(hitIds: ["h1"], outcome: .retryLater(
                reason: "the events endpoint answered with HTTP status \(status)"))])
        }
    }

    func testClientErrorsRejectTheHits() async throws {
        for status in [400, 403, 404, 413] {
            server.injectFault(.status(status), on: .events, share: .next(1))

            let results = await client().sendHits([event("h1", age: 1), event("h2", age: 1)], now: now)

            XCTAssertEqual(results, [SendResult(hitIds: ["h1", "h2"], outcome: .rejected(status: status),
                                                rejectionReason: "the events endpoint refused the request with HTTP status \(status)")])
        }
    }

    func testUnansweredBatchesAreRetriedLater() async throws {
        let port = try XCTUnwrap(server.port)
        server.injectFault(.dropConnection, on: .events, share: .next(1))
        let dropped = await client().sendHits([event("h1", age: 1)], now: now)
        server.injectFault(.latency(.seconds(3)), on: .events, share: .next(1))
        let slow = await client(timeout: 0.3).sendHits([event("h2", age: 1)], now: now)
        server.stop()
        let refused = await client().sendHits([event("h3", age: 1)], now: now)

        XCTAssertEqual(dropped.map(\.outcome), [.retryLater(
            reason: "the events endpoint could not be reached: 127.0.0.1:\(port) closed the connection without a valid answer")])
        XCTAssertEqual(slow.map(\.outcome), [.retryLater(
            reason: "the events endpoint could not be reached: no complete answer within 300 ms")])
        XCTAssertEqual(refused.map(\.outcome), [.retryLater(
            reason: "the events endpoint could not be reached: could not connect to 127.0.0.1:\(port) (connection refused or unreachable)")])
    }

    func testOneFailedBatchDoesNotStopTheNextOnes() async throws {
        let label = String(repeating: "x", count: 1_000_000)
        server.injectFault(.status(503), on: .events, share: .next(1))

        let results = await client(timeout: 10).sendHits((1...4).map { event("h\($0)", age: 0, label: label) }, now: now)

        XCTAssertEqual(results.map(\.hitIds), [["h1", "h2"], ["h3", "h4"]])
        XCTAssertEqual(results.map(\.outcome), [.retryLater(reason: "the events endpoint answered with HTTP status 503"), .delivered])
    }

    // MARK: Activates

    func testActivatesGoToTheDecisionAPIWithTheAPIKey() async throws {
        let authenticated = OutgoingHit(id: "a2", type: "ACTIVATE", createdAt: now - 1_000, fields: [
            "vid": .string("user_1"), "aid": .string("anon_1"), "caid": .string("vg2"), "vaid": .string("v2"),
        ])

        let results = await client().sendActivates([activate(1), authenticated], now: now)

        XCTAssertEqual(results, [SendResult(hitIds: ["a1", "a2"], outcome: .delivered)])
        let request = try XCTUnwrap(server.received(.activate).first).request
        XCTAssertEqual(request.path, "/v2/activate")
        XCTAssertEqual(request.headers["x-api-key"], apiKey)
        XCTAssertEqual(request.headers["Content-Type"], "application/json")
        XCTAssertEqual(request.headers["x-sdk-client"], "swift-linux")
        XCTAssertEqual(request.headers["x-sdk-version"], SDKInfo.version)
        XCTAssertEqual(String(decoding: request.body, as: UTF8.self), """
            {"batch":[\
            {"qt":35,"aid":null,"caid":"vg1","vaid":"v1","vid":"visitor_1"},\
            {"qt":1000,"aid":"anon_1","caid":"vg2","vaid":"v2","vid":"user_1"}\
            ],"cid":"env_events"}
            """)
    }

    func testActivatesAreSentAtMost100PerRequest() async throws {
        let activates = (1...250).map { activate($0) }

        let results = await client().sendActivates(activates, now: now)

        XCTAssertEqual(results, [
            SendResult(hitIds: (1...100).map { "a\($0)" }, outcome: .delivered),
            SendResult(hitIds: (101...200).map { "a\($0)" }, outcome: .delivered),
            SendResult(hitIds: (201...250).map { "a\($0)" }, outcome: .delivered),
        ])
        XCTAssertEqual(server.received(.activate).map { $0.json?["batch"]?.arrayValue?.count }, [100, 100, 50])
        XCTAssertEqual(server.activates.map { $0["vid"]?.stringValue }, (1...250).map { "visitor_\($0)" })
    }

    func testAnActivateRefusedForItsAPIKeyIsRejected() async throws {
        let results = await client(apiKey: "wrong_key").sendActivates([activate(1)], now: now)

        XCTAssertEqual(results, [SendResult(hitIds: ["a1"], outcome: .rejected(status: 403),
                                            rejectionReason: "the activate endpoint refused the request with HTTP status 403")])
    }

    func testActivatesFailingOnTheServerAreRetriedLater() async throws {
        server.injectFault(.status(500), on: .activate, share: .next(1))

        let results = await client().sendActivates([activate(1)], now: now)

        XCTAssertEqual(results, [SendResult(hitIds: ["a1"], outcome: .retryLater(
            reason: "the activate endpoint answered with HTTP status 500"))])
    }

    func testTheAPIKeyNeverAppearsInAReason() async throws {
        var results: [SendResult] = []
        let faults: [FaultKind] = [.status(500), .status(400), .status(429), .dropConnection, .latency(.seconds(2)),
                                   .malformedBody(.custom(Data(apiKey.utf8)))]
        for fault in faults {
            let id = server.injectFault(fault)
            results += await client(timeout: 0.3).sendActivates([activate(1)], now: now)
            results += await client(timeout: 0.3).sendHits([event("h1", age: 1)], now: now)
            server.removeFault(id)
        }
        server.stop()
        results += await client(timeout: 0.3).sendActivates([activate(1)], now: now)

        XCTAssertEqual(results.count, faults.count * 2 + 1)
        for result in results {
            let text = "\(result.outcome) \(result.rejectionReason ?? "")"
            XCTAssertFalse(text.contains(apiKey), text)
        }
    }
}
