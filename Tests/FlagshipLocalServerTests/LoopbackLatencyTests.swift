import Foundation
import XCTest

import FlagshipLocalServer

/// An answer leaves in one write on a TCP_NODELAY socket: a split write would wait for the
/// client's delayed ACK, about 40 ms per request, and make every SDK test slow.
final class LoopbackLatencyTests: ServerTestCase {
    func testFiftySequentialKeepAlivePOSTsTakeAFewMillisecondsEach() async throws {
        _ = try await fetchDecision()  // opens the kept-alive connection
        let clock = ContinuousClock()
        var durations: [Duration] = []
        var replies: [String] = []

        for index in 0..<50 {
            var reply: TestClient.Reply?
            let elapsed = try await clock.measure {
                reply = index.isMultiple(of: 2) ? try await fetchDecision() : try await sendHits([["t": "EVENT"]])
            }
            durations.append(elapsed)
            replies.append("\(reply?.status ?? 0) \(reply?.text ?? "no reply")")
        }

        // Every answer whole and in order: the decision with its body, the events an empty 200.
        XCTAssertEqual(replies, (0..<50).map { $0.isMultiple(of: 2) ? #"200 {"visitorId":"fixed","campaigns":[]}"# : "200 " })
        XCTAssertEqual(server.received.map(\.route), [.campaigns] + (0..<50).map { $0.isMultiple(of: 2) ? .campaigns : .events })
        let sorted = durations.sorted()
        print("LoopbackLatencyTests: 50 keep-alive POSTs: fastest \(sorted[0]), 5th \(sorted[4]), median \(sorted[25]), max \(sorted[49])")
        // A split write costs each request a delayed ACK (40 ms on Linux), however idle the machine;
        // a busy one (8 processes on 2 cores) slows the median, but still leaves a tenth of the
        // requests far below that. So the 5th fastest is held under 25 ms, not the median.
        XCTAssertLessThan(sorted[4], .milliseconds(25))
    }
}
