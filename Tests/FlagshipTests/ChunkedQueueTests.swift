import XCTest

@testable import Flagship

final class ChunkedQueueTests: XCTestCase {
    func testElementsLeaveInTheOrderTheyCameAcrossChunksAndPartialTakes() {
        var queue = ChunkedQueue<Int>()
        var expected: [Int] = []
        var next = 0
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            for _ in 0..<Int.random(in: 0..<700, using: &generator) {
                queue.append(next)
                expected.append(next)
                next += 1
            }
            let limit = Int.random(in: 0..<900, using: &generator)
            let taken = queue.removeFirst(upTo: limit)
            XCTAssertEqual(taken, Array(expected.prefix(limit)))
            expected.removeFirst(taken.count)
            XCTAssertEqual(queue.count, expected.count)
            XCTAssertEqual(queue.isEmpty, expected.isEmpty)
        }
        XCTAssertEqual(queue.removeFirst(upTo: .max), expected)
        XCTAssertTrue(queue.isEmpty)
        XCTAssertEqual(queue.removeFirst(upTo: 10), [])
        queue.append(-1)
        XCTAssertEqual(queue.removeFirst(upTo: 0), [])
        XCTAssertEqual(queue.removeFirst(upTo: 1), [-1])
    }
}
