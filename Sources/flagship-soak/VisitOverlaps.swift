import FlagshipStore

/// Returning visits that began before an earlier visit of the same visitor was decided (its
/// `fetchFlags` had not returned): no history existed yet to read, so both visits were decided
/// from the allocations (the same variations) and the store holds decision rows from two moments.
/// The continuity count leaves these visitors out; it counts a visitor decided again although its
/// history was there to read. Bounded: the indexes being decided (at most the in-flight cap), and
/// the overlapped ones up to `limit` (past it, `overflowed` says the count may be high).
final class VisitOverlaps: Sendable {
    static let limit = 1_000_000

    private struct State {
        /// Visits of each visitor index that are in flight and not decided yet.
        var deciding: [Int: Int] = [:]
        var overlapped: Set<Int> = []
        var overflowed = false
    }

    private let state = Locked(State())

    /// A visit of `index` starts.
    func begin(_ index: Int) {
        state.withLock { state in
            if state.deciding[index, default: 0] > 0 {
                if state.overlapped.count < Self.limit { state.overlapped.insert(index) } else { state.overflowed = true }
            }
            state.deciding[index, default: 0] += 1
        }
    }

    /// That visit was decided (its `fetchFlags` returned), or ended without being.
    func decided(_ index: Int) {
        state.withLock { state in
            guard let count = state.deciding[index] else { return }
            state.deciding[index] = count > 1 ? count - 1 : nil
        }
    }

    /// The visitor indexes with a visit that began while an earlier one was being decided.
    var overlapped: (indexes: Set<Int>, overflowed: Bool) {
        state.withLock { ($0.overlapped, $0.overflowed) }
    }
}
