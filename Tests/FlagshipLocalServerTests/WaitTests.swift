import Foundation
import XCTest

import FlagshipLocalServer

/// Tests wait for arrivals without sleeping: the wait ends when the request is recorded, or
/// fails after its timeout saying what came instead.
final class WaitTests: ServerTestCase {
    func testWaitForRequestsReturnsOnceTheyArrive() async throws {
        let server = self.server!
        async let waited = server.waitForRequests(route: .activate, count: 2)
        _ = try await activate([["vid": "a"]])
        _ = try await sendHits([["vid": "a", "t": "EVENT"]])
        _ = try await activate([["vid": "b"]])

        let requests = try await waited
        XCTAssertEqual(requests.map { $0.json?["batch"]?[0]?["vid"] }, ["a", "b"])
    }

    func testWaitForRequestsAlreadyThereReturnsAtOnce() async throws {
        _ = try await fetchDecision()

        let start = ContinuousClock.now
        let requests = try await server.waitForRequests(route: .campaigns, count: 1, timeout: .seconds(5))

        XCTAssertEqual(requests.count, 1)
        // At once: not after a wait for another arrival or for the 5 s timeout. 1 s leaves room
        // for a busy machine.
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1))
    }

    func testWaitForRequestsTimesOutSayingWhatArrived() async throws {
        _ = try await activate([["vid": "a"]], apiKey: "wrong")
        let start = ContinuousClock.now

        do {
            _ = try await server.waitForRequests(route: .activate, count: 2, timeout: .milliseconds(200))
            XCTFail("the wait should time out")
        } catch let error as LocalServerError {
            let elapsed = ContinuousClock.now - start
            XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(200))
            XCTAssertLessThan(elapsed, .seconds(2))
            XCTAssertEqual(error.description, "timed out after 0.2 seconds waiting for 2 request(s) on activate; 1 arrived: [activate 403]")
            XCTAssertEqual(error.code, .waitTimedOut)
            XCTAssertEqual(error.timeout, .milliseconds(200))
            XCTAssertEqual(error.arrived, "1 arrived: [activate 403]")
        }
    }

    func testWaitForHitsAndActivatesCountEntriesOfAcceptedRequests() async throws {
        let server = self.server!
        async let hits = server.waitForHits(count: 3)
        async let activates = server.waitForActivates(count: 1)
        _ = try await activate([["vid": "refused"]], apiKey: "wrong")
        _ = try await sendHits([["vid": "a", "t": "EVENT", "ea": "1"], ["vid": "a", "t": "EVENT", "ea": "2"]])
        _ = try await activate([["vid": "accepted"]])
        _ = try await sendHits([["vid": "a", "t": "EVENT", "ea": "3"]])

        let (hitList, activateList) = try await (hits, activates)
        XCTAssertEqual(hitList.map { $0["ea"] }, ["1", "2", "3"])
        XCTAssertEqual(activateList, [["vid": "accepted"]])
    }

    func testWaitForHitsTimesOutListingTheRequests() async throws {
        _ = try await sendHits([["vid": "a", "t": "EVENT"]])

        do {
            _ = try await server.waitForHits(count: 2, timeout: .milliseconds(50))
            XCTFail("the wait should time out")
        } catch let error as LocalServerError {
            XCTAssertEqual(error.description, "timed out after 0.05 seconds waiting for 2 hit(s); 1 arrived; requests: [events 200]")
        }
    }

    func testCancelledWaitEndsWithCancellationError() async throws {
        let server = self.server!
        let waiting = Task { try await server.waitForRequests(route: .events, timeout: .seconds(30)) }
        waiting.cancel()

        let start = ContinuousClock.now
        let result = await waiting.result
        XCTAssertThrowsError(try result.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        // Well before the 30 s timeout, with room for a busy machine.
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
    }

    func testManyConcurrentWaitersAreAllResumed() async throws {
        let server = self.server!
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<20 {
                group.addTask { try await server.waitForRequests(route: .events, count: 1).count }
            }
            _ = try await sendHits([])
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(counts, Array(repeating: 1, count: 20))
    }
}
