import FlagshipStore

/// The digests of visitors' recent contexts, so that a returning visitor's request does not
/// write its context as JSON and hash it again to learn that it did not change.
///
/// `ReportedFacts.digest(of:)` is a pure function of the context: an entry is used only when the
/// context asked about equals the one it was made from, so a stale entry costs a miss, never a
/// wrong digest. Bounded: two generations of at most `limit` visitors each; when the current one
/// fills, the older is dropped whole and the current becomes the older. A visitor seen in either is
/// moved to the current one, so a visitor seen at least once per `limit` others stays.
final class ContextDigests: Sendable {
    private struct Entry {
        let context: [String: FSJSONValue]
        let digest: String
    }

    private struct State {
        var current: [String: Entry] = [:]
        var older: [String: Entry] = [:]
        var hits = 0
        var misses = 0
    }

    let limit: Int
    private let state = Locked(State())

    init(limit: Int = 4_096) {
        self.limit = max(1, limit)
    }

    /// The digest of `context` for `visitorId`, from memory when its context is the one last asked.
    func digest(of context: [String: FSJSONValue], visitorId: String) -> String {
        let known = state.withLock { state -> String? in
            guard let entry = state.current[visitorId] ?? state.older[visitorId], entry.context == context else {
                state.misses += 1
                return nil
            }
            state.hits += 1
            if state.current[visitorId] == nil { Self.insert(entry, for: visitorId, into: &state, limit: limit) }
            return entry.digest
        }
        if let known { return known }
        // Hashed out of the lock: the lock only guards the maps.
        let digest = ReportedFacts.digest(of: context)
        state.withLock { Self.insert(Entry(context: context, digest: digest), for: visitorId, into: &$0, limit: limit) }
        return digest
    }

    /// Visitors remembered (both generations), and the lookups answered from memory and not.
    var counts: (entries: Int, hits: Int, misses: Int) {
        state.withLock { ($0.current.count + $0.older.count, $0.hits, $0.misses) }
    }

    private static func insert(_ entry: Entry, for visitorId: String, into state: inout State, limit: Int) {
        if state.current[visitorId] == nil, state.current.count >= limit {
            state.older = state.current
            state.current = [:]
            state.current.reserveCapacity(limit)
        }
        state.current[visitorId] = entry
        state.older[visitorId] = nil
    }
}
