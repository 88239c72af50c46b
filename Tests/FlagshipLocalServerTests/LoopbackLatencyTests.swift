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

        for index in 0..<50 {
            let elapsed = try await clock.measure {
                let reply = index.isMultiple(of: 2) ? try await fetchDecision() : try await sendHits([["t": "EVENT"]])
                XCTAssertEqual(reply.status, index.isMultiple(of: 2) ? 200 : 200)
            }
            durations.append(elapsed)
        }

        let median = durations.sorted()[durations.count / 2]
        print("LoopbackLatencyTests: median of 50 keep-alive POSTs: \(median), max \(durations.max() ?? .zero)")
        XCTAssertLessThan(median, .milliseconds(15))
    }
}
