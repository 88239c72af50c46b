/// A first-in first-out queue kept in fixed-size chunks: an append never copies what is queued.
///
/// The tracking manager's ingress is appended to under the lock a flag read takes (an exposure's
/// activate). An array that outgrows its storage copies every element it holds, which, with the
/// store locked and thousands of activates waiting, put tens of microseconds into a read now and
/// then; taking the oldest from the front of an array moved all the others too.
struct ChunkedQueue<Element> {
    private static var chunkSize: Int { 256 }

    private var chunks: [[Element]] = []
    /// How much of `chunks[0]` was taken already.
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// The oldest element, left in place.
    var first: Element? {
        chunks.first.map { $0[head] }
    }

    mutating func append(_ element: Element) {
        if chunks.last.map({ $0.count == Self.chunkSize }) ?? true {
            var chunk: [Element] = []
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(element)
        count += 1
    }

    /// Removes and returns the oldest `limit` elements at most, oldest first.
    mutating func removeFirst(upTo limit: Int) -> [Element] {
        var taken: [Element] = []
        taken.reserveCapacity(Swift.max(0, Swift.min(limit, count)))
        while taken.count < limit, !chunks.isEmpty {
            let available = chunks[0].count - head
            let share = Swift.min(available, limit - taken.count)
            taken.append(contentsOf: chunks[0][head..<head + share])
            head += share
            if head == chunks[0].count {
                chunks.removeFirst()
                head = 0
            }
        }
        count -= taken.count
        return taken
    }
}

extension ChunkedQueue: Sendable where Element: Sendable {}
