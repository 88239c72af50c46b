import FlagshipStore

/// What this instance knows of a hits table it writes, between that table's transactions: kept
/// in step with them (each update is made inside the transaction it follows from).
///
/// A queue that has one (`HitQueue.ownTable`: the default cache's `hits` table, written) lets the
/// tracking manager do three things it cannot do with any other store:
/// - the writer saves hits already claimed by this instance, until `leaseMilliseconds` from the
///   commit, and hands them to the sender in memory (no claim, no walk of the index);
/// - the sender skips a claim that would find nothing: once a claim found fewer rows than it asked
///   for, until a row is written unclaimed, a claim ends unsent, or claims may have lapsed (each
///   interval, for rows other processes or an app's own transaction wrote);
/// - backpressure reads the backlog (the rows after the last write or settlement) without counting.
///
/// A store without one (PostgreSQL, shared by a fleet; an app's custom cache; a file only read)
/// gets every claim looked for, and a backlog of what was accepted and not yet written.
package final class OwnHitTable: Sendable {
    /// How long a hit saved claimed stays claimed (ms), from its commit.
    package let leaseMilliseconds: Int64
    private let known = Locked(Known())

    private struct Known {
        var claimableActivates = true
        var claimableHits = true
        var count: Int?
        /// Rows evicted when claims ended (not by a save), not yet counted by the writer.
        var evictedUntold = 0

        mutating func setClaimable(_ value: Bool) {
            claimableActivates = value
            claimableHits = value
        }
    }

    init(leaseMilliseconds: Int64) {
        self.leaseMilliseconds = leaseMilliseconds
    }

    // MARK: Read by the tracking manager

    /// Whether a claim for `endpoint` may find a row nobody holds.
    func mayHaveClaimable(_ endpoint: HitEndpoint) -> Bool {
        known.withLock { endpoint == .activate ? $0.claimableActivates : $0.claimableHits }
    }

    /// Claims may have lapsed (held in memory too long, or time passed), or rows were written by
    /// someone else: the next claims look.
    func claimsMayHaveLapsed() {
        known.withLock { $0.setClaimable(true) }
    }

    /// Rows in the table after this instance's last write or settlement (`nil`: none yet).
    var lastKnownCount: Int? {
        known.withLock { $0.count }
    }

    /// Rows evicted since last asked when claims ended (claims put rows past the cap, which
    /// eviction skips while they are in flight); asking resets it.
    func takeEvicted() -> Int {
        known.withLock { known in
            defer { known.evictedUntold = 0 }
            return known.evictedUntold
        }
    }

    // MARK: Told by the queue, inside its transactions

    /// Hits were written (claimed or not, by endpoint); the table holds `count` rows.
    func wrote(unclaimedActivates: Bool, unclaimedHits: Bool, count: Int) {
        known.withLock { known in
            if unclaimedActivates { known.claimableActivates = true }
            if unclaimedHits { known.claimableHits = true }
            known.count = count
        }
    }

    /// A claim for `endpoint` found fewer rows than it asked for: nothing more to claim until a
    /// row is written or released unclaimed, or a claim lapses.
    func claimedAll(_ endpoint: HitEndpoint) {
        known.withLock { known in
            if endpoint == .activate { known.claimableActivates = false } else { known.claimableHits = false }
        }
    }

    /// Claims ended (`reopened`: some rows may be claimed again), `evicted` rows went past the
    /// cap, and the table holds `count` rows.
    func claimsEnded(reopened: Bool, evicted: Int, count: Int) {
        known.withLock { known in
            if reopened { known.setClaimable(true) }
            known.count = count
            known.evictedUntold += evicted
        }
    }
}
