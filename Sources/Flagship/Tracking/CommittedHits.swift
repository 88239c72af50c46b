import FlagshipStore
import Foundation

/// Hits the writer committed already claimed by this instance, waiting in memory for the sender.
///
/// The store stays the record: each of these hits is a row of the hit cache, claimed by this
/// instance from its first commit, so another process never sends it and a crash leaves it to
/// the next start. What the memory saves is the sender's claim: under a steady flow of hits,
/// committed hits go to the network without a second visit to the store, and the claim's walk
/// over the rows in flight never happens. Bounded by `limit`: past it, the writer commits hits
/// unclaimed and the sender claims them from the store, oldest first, as after a restart.
///
/// Open once a batch is accepted; closed while sends fail (the hits wait in the store,
/// claimable, for the backoff).
final class CommittedHits: Sendable {
    struct Entry: Sendable {
        let hit: OutgoingHit
        /// Until when this instance's claim on the row holds (unix ms).
        let claimedUntil: Int64
    }

    private struct State {
        var activates = ChunkedQueue<Entry>()
        var events = ChunkedQueue<Entry>()
        /// Room promised to group commits under way.
        var reserved = 0
        /// Closed until a batch is accepted: before then, whether sends succeed is not known.
        var open = false

        var count: Int { activates.count + events.count }
    }

    let limit: Int
    private let state = Locked(State())

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// Promises room for `count` hits about to be committed claimed; `false`: commit them
    /// unclaimed (closed, or no room).
    func reserve(_ count: Int) -> Bool {
        state.withLock { state in
            guard state.open, count > 0, state.count + state.reserved + count <= limit else { return false }
            state.reserved += count
            return true
        }
    }

    /// The hits of a reservation, committed claimed until `claimedUntil`: they wait for the
    /// sender. Returns `false` when closed meanwhile: the caller releases their claims.
    @discardableResult
    func add(_ hits: [OutgoingHit], claimedUntil: Int64, reserved: Int) -> Bool {
        state.withLock { state in
            state.reserved -= reserved
            guard state.open else { return false }
            for hit in hits {
                let entry = Entry(hit: hit, claimedUntil: claimedUntil)
                if hit.isActivate { state.activates.append(entry) } else { state.events.append(entry) }
            }
            return true
        }
    }

    /// A reservation whose commit failed.
    func cancel(reserved: Int) {
        state.withLock { $0.reserved -= reserved }
    }

    /// Up to `limit` hits for `endpoint`, oldest first, whose claim still holds at `holdsUntil`
    /// (the send's end at the latest). Hits whose claim would lapse first are dropped: their
    /// rows are claimable again, and sent through a claim (`lapsed` says how many).
    func take(_ endpoint: HitEndpoint, limit: Int, holdsUntil: Int64) -> (hits: [OutgoingHit], lapsed: Int) {
        guard limit > 0 else { return ([], 0) }
        return state.withLock { state in
            var lapsed = 0
            var taken: [OutgoingHit] = []
            func takeFrom(_ queue: inout ChunkedQueue<Entry>) {
                // Claims were taken in commit order: those about to lapse are at the front.
                while let first = queue.first, first.claimedUntil <= holdsUntil {
                    _ = queue.removeFirst(upTo: 1)
                    lapsed += 1
                }
                taken = queue.removeFirst(upTo: limit).map(\.hit)
            }
            if endpoint == .activate { takeFrom(&state.activates) } else { takeFrom(&state.events) }
            return (taken, lapsed)
        }
    }

    /// Takes no more hits; returns those waiting, whose claims the caller ends.
    func close() -> [OutgoingHit] {
        state.withLock { state in
            state.open = false
            var left = state.activates.removeFirst(upTo: state.activates.count).map(\.hit)
            left += state.events.removeFirst(upTo: state.events.count).map(\.hit)
            return left
        }
    }

    /// Takes hits again (sends succeed again).
    func reopen() {
        state.withLock { $0.open = true }
    }

    var isOpen: Bool {
        state.withLock { $0.open }
    }

    var count: Int {
        state.withLock { $0.count }
    }
}
