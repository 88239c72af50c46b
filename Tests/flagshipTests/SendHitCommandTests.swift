import Flagship
import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

final class SendHitCommandTests: HitCommandTestCase {
    func testWithTheServerDownEveryHitIsLeftInTheStore() throws {
        serverDown()

        let result = try sendHit(["--event", "click", "--label", "cta", "--value", "3", "--count", "5"])

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, #"{"sent": 5, "delivered": 0, "rejected": 0, "waiting": 6, "lost": 0}"# + "\n")
        XCTAssertEqual(try storedHits(), [Self.consentHit: 1, StoredHit(type: "EVENT", action: "click", label: "cta"): 5])
    }

    func testWithTheServerUpTheHitsAreDeliveredBeforeExit() throws {
        let result = try sendHit(["--event", "click", "--category", "engagement", "--label", "cta", "--value", "3", "--count", "3"])

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, #"{"sent": 3, "delivered": 4, "rejected": 0, "waiting": 0, "lost": 0}"# + "\n")
        let clicks = server.hits.filter { $0["ea"] == "click" }
        XCTAssertEqual(clicks.count, 3)
        XCTAssertEqual(clicks.first?["ec"], "User Engagement")
        XCTAssertEqual(clicks.first?["el"], "cta")
        XCTAssertEqual(clicks.first?["ev"], 3)
        XCTAssertEqual(clicks.first?["vid"], "v1")
        XCTAssertEqual(try storedHits(), [:])
    }

    func testEachKindOfHitIsSentWithItsFields() throws {
        let kinds: [(options: [String], fields: [String: FSJSONValue])] = [
            (["--screen", "checkout"], ["t": "SCREENVIEW", "dl": "checkout"]),
            (["--page", "https://example.com/cart"], ["t": "PAGEVIEW", "dl": "https://example.com/cart"]),
            (["--transaction", "T-1", "--affiliation", "basket", "--revenue", "42.5", "--currency", "EUR"],
             ["t": "TRANSACTION", "tid": "T-1", "ta": "basket", "tr": 42.5, "tc": "EUR"]),
            (["--item", "shoe", "--code", "SKU-9", "--transaction", "T-1", "--price", "19.99", "--quantity", "2"],
             ["t": "ITEM", "tid": "T-1", "in": "shoe", "ic": "SKU-9", "ip": 19.99, "iq": 2]),
        ]
        for kind in kinds {
            server.clearReceived()

            let result = try sendHit(kind.options)

            XCTAssertEqual(result.status, 0, result.stderr)
            let sent = server.hits.filter { $0["ea"] != "fs_consent" }
            XCTAssertEqual(sent.count, 1, "\(kind.options)")
            for (key, value) in kind.fields {
                XCTAssertEqual(sent.first?[key], value, "\(kind.options): \(key)")
            }
        }
    }

    func testDurablePrintsEachHitsNumberOnceItIsCommitted() throws {
        serverDown()

        let result = try sendHit(["--event", "buy", "--label", "run", "--count", "3", "--durable"])

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, """
            acknowledged 1
            acknowledged 2
            acknowledged 3
            {"sent": 3, "delivered": 0, "rejected": 0, "waiting": 4, "lost": 0}

            """)
        XCTAssertEqual(try storedHits(), [
            Self.consentHit: 1, StoredHit(type: "EVENT", action: "buy", label: "run-1"): 1,
            StoredHit(type: "EVENT", action: "buy", label: "run-2"): 1, StoredHit(type: "EVENT", action: "buy", label: "run-3"): 1,
        ])
    }

    func testPeriodicCachingStillLeavesEveryHitInTheStoreAtExit() throws {
        serverDown()

        let result = try sendHit(["--screen", "home", "--count", "4", "--strategy", "periodic"])

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try summary(result)["waiting"], 5)
        XCTAssertEqual(try storedHits(), [Self.consentHit: 1, StoredHit(type: "SCREENVIEW", action: nil, label: nil): 4])
    }

    func testAnInvalidHitFailsNamingTheField() throws {
        let cases: [(options: [String], message: String)] = [
            (["--event", " "], "Error: EVENT hit refused: required field ea (eventAction) is missing or empty\n"),
            (["--page", "cart"], "Error: PAGEVIEW hit refused: field dl (location) must be a valid absolute URL"),
            (["--item", "shoe", "--code", "SKU-9", "--transaction", "T-1", "--quantity=-2"],
             "Error: ITEM hit refused: field iq (quantity) must not be negative (got -2)\n"),
            (["--transaction", "T-1", "--affiliation", "basket", "--currency", "eur"],
             "Error: TRANSACTION hit refused: field tc (currency) must be a 3-letter ISO 4217 currency code"),
        ]
        for invalid in cases {
            server.clearReceived()

            let result = try sendHit(invalid.options + ["--count", "3"])

            XCTAssertNotEqual(result.status, 0, "\(invalid.options)")
            XCTAssertEqual(result.stdout, "", "\(invalid.options)")
            XCTAssertTrue(result.stderr.contains(invalid.message), "\(invalid.options): \(result.stderr)")
            // Only the visitor's consent hit went: the invalid hit was neither sent nor stored.
            XCTAssertEqual(server.hits.map { $0["ea"] }, ["fs_consent"], "\(invalid.options)")
        }
        XCTAssertEqual(try storedHits(), [:])
    }

    func testOptionsThatDoNotMakeOneHitAreRefusedBeforeAnythingIsWritten() throws {
        let cases: [(options: [String], message: String)] = [
            ([], "Error: choose the hit to send: --event, --screen, --page, --transaction or --item\n"),
            (["--event", "a", "--screen", "s"], "Error: choose one hit to send, not --event and --screen\n"),
            (["--page", "https://example.com", "--label", "x"], "Error: --label goes with --event, not with --page\n"),
            (["--screen", "s", "--code", "c"], "Error: --code goes with --item, not with --screen\n"),
            (["--item", "shoe", "--code", "c", "--transaction", "T", "--affiliation", "a"],
             "Error: --affiliation goes with --transaction, not with --item\n"),
            (["--transaction", "T-1"], "Error: --transaction needs --affiliation"),
            (["--item", "shoe", "--transaction", "T-1"], "Error: --item needs --code and --transaction"),
            (["--item", "shoe", "--code", "c"], "Error: --item needs --code and --transaction"),
            (["--event", "a", "--value=-1"], "Error: --value, the event's value (ev), must not be negative (got -1)\n"),
            (["--event", "a", "--count", "0"], "Error: --count must be a positive number of hits, not 0\n"),
            (["--event", "a", "--category", "other"], "Error: The value 'other' is invalid for '--category <category>'"),
        ]
        for invalid in cases {
            let stderr = try stderrOfFailureLeavingStoreUntouched(["send-hit", "--visitor-id", "v1"] + sdkOptions() + invalid.options)

            XCTAssertTrue(stderr.hasPrefix(invalid.message), "\(invalid.options): \(stderr)")
        }
        XCTAssertEqual(try storeDirectoryListing(), [])
        XCTAssertEqual(server.received.count, 0)
    }

    func testAStoreTheSDKCannotUseIsRefused() throws {
        let notAStore = storeDirectory.appendingPathComponent("not-a-directory")
        try Data("x".utf8).write(to: notAStore)

        let result = try sendHit(["--event", "a"], db: notAStore.appendingPathComponent("flagship.sqlite"))

        XCTAssertNotEqual(result.status, 0)
        XCTAssertEqual(result.stdout, "")
        XCTAssertTrue(result.stderr.hasPrefix("Error: the store \(notAStore.path)/flagship.sqlite cannot be used: "), result.stderr)
        XCTAssertEqual(server.received.count, 0)
    }
}
