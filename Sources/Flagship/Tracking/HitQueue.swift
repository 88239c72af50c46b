import FlagshipStore
import Foundation
import Logging

/// Where accepted hits wait until they are delivered: the durable side of the tracking manager.
///
/// The one port of the hits' stores, each member required (none has a default a store could
/// inherit wrongly): ``SQLiteHitQueue`` over the default cache's `hits` table (typed, paged,
/// claimed in transactions so that processes sharing the file never send a hit twice),
/// ``DelegateHitQueue`` over a custom `FSHitCacheDelegate` (reference semantics), and the
/// `FlagshipPostgres` product's queues over a store a fleet shares. What only a table this
/// instance writes allows (hits saved claimed, claims skipped, a backlog known without counting)
/// is not a flag of the port but a value, `ownTable`, that the others do not have.
///
/// Two sides, both awaited. The writer's calls (`save`, expiry, erasure, `count`, ending claims)
/// are made by the tracking manager's writer, one job at a time (`TrackingStore`): SQLite's on
/// the store's own queue, blocking that thread only; PostgreSQL's are awaited on
/// its connection pool and a custom cache's on the queue that confines it, no thread waiting. The
/// sender's calls (`claim`, `settle`) are awaited from its task: SQLite's on the same queue, each
/// one transaction in turn with the writer's jobs, so a claim's round trip holds no thread.
package protocol HitQueue: Sendable {
    /// Writes accepted hits, all or none (one transaction). Returns how many of the oldest were
    /// evicted to stay within the cap.
    func save(_ hits: [CachedHit]) async throws -> Int
    /// Up to `limit` hits for `endpoint`, oldest first, claimed by this instance so that no other
    /// sender takes them while they are in flight. The sender's; the caller's cancellation is
    /// ignored (a claim is short, and what it claimed is settled or released).
    func claim(_ endpoint: HitEndpoint, limit: Int, now: Int64) async throws -> [OutgoingHit]
    /// What became of claimed hits, recorded in one transaction. The sender's; recorded whatever
    /// becomes of the caller's task (what was delivered must leave the store).
    func settle(_ settlement: HitSettlement) async throws
    /// Deletes the hits created before `boundary` (unix ms); returns how many.
    func deleteExpired(createdBefore boundary: Int64) async throws -> Int
    /// Consent withdrawn: deletes a visitor's hits but its consent hits and the hits in `keeping` (accepted after the
    /// withdrawal); returns how many went.
    func purge(visitorId: String, keeping: Set<String>) async throws -> Int
    /// How many hits wait.
    func count() async throws -> Int
    /// Ends this instance's claims on `ids` (`nil`: every one, at close), so that a claim (the
    /// next start's, another process's) sends those hits. The writer's.
    func releaseClaims(_ ids: [String]?) async throws
    /// Reads what earlier runs left, where the queue needs to (nothing, where a claim finds it).
    /// A custom cache's `lookupHits` is not waited for: when it answers within its timeout,
    /// `found` is called (once, on the cache's queue) with a function that takes its hits in and
    /// returns how many; the caller runs that in its own order (the store queue), after what it
    /// queued before.
    func loadCached(now: Int64, found: @escaping @Sendable (_ takeIn: @escaping @Sendable () -> Int) -> Void)
    /// Whether a saved hit is in a file the next start finds, and the hits waiting too.
    var durability: HitDurability { get }
    /// The table this instance writes, when the queue is one (`nil`: a store shared by a fleet, an
    /// app's custom cache, a file only read): what the writer and the sender may know of it
    /// between its transactions.
    var ownTable: OwnHitTable? { get }
}

/// Where a queue keeps hits, for what a restart finds.
package struct HitDurability: Sendable {
    /// Why a saved hit would not be in a file the next start finds, if it would not: the store
    /// fell back to memory, its file can only be read, or was deleted or replaced under the SDK.
    package var notDurable: FSCacheError?
    /// Whether the hits waiting in the queue are in a file the next start finds (also when this
    /// process can only read it): not in memory, nor in a file deleted or replaced under the SDK.
    package var waitingHitsSurvive: Bool

    package init(notDurable: FSCacheError?, waitingHitsSurvive: Bool) {
        self.notDurable = notDurable
        self.waitingHitsSurvive = waitingHitsSurvive
    }

    /// Saved and waiting hits are where the next start finds them; for a store the SDK does not
    /// own (PostgreSQL, a custom cache), its word is taken for it.
    package static let durable = HitDurability(notDurable: nil, waitingHitsSurvive: true)
}

/// A hit with its cache document as JSON text: the wire text wrapped, not encoded again. Made on
/// the thread of whoever sent the hit, so that the tracking manager's single writer only writes.
package struct CachedHit: Sendable {
    package let hit: OutgoingHit
    package let document: String
    /// Written claimed by this instance until then (unix ms), where the queue has an `ownTable`:
    /// the hit is handed to the sender in memory once committed.
    package var claimedUntil: Int64?

    package init(_ hit: OutgoingHit) {
        self.hit = hit
        document = hit.cacheDocumentText
    }

    /// `document` is `hit.cacheDocumentText`, made before.
    package init(_ hit: OutgoingHit, document: String, claimedUntil: Int64? = nil) {
        self.hit = hit
        self.document = document
        self.claimedUntil = claimedUntil
    }
}

/// The outcome of one send, by hit id.
package struct HitSettlement: Sendable, Equatable {
    /// Accepted by the server: leave the cache.
    package var delivered: [String] = []
    /// Refused for good (a 4xx other than 408/429, or too large): leave the cache.
    package var rejected: [String] = []
    /// To be tried again: one more attempt counted, the claim ended.
    package var failed: [String] = []
    /// When the failed ones may be tried again (unix ms), for `flagship hits` to show.
    package var nextAttemptAt: Int64?
    /// Claimed when written and never sent (the sender gave them back, its sends failing): the
    /// claim ends, no attempt counted. Only queues with an `ownTable` get any.
    package var released: [String] = []

    package var isEmpty: Bool { delivered.isEmpty && rejected.isEmpty && failed.isEmpty && released.isEmpty }

    package init(delivered: [String] = [], rejected: [String] = [], failed: [String] = [], nextAttemptAt: Int64? = nil,
                 released: [String] = []) {
        self.delivered = delivered
        self.rejected = rejected
        self.failed = failed
        self.nextAttemptAt = nextAttemptAt
        self.released = released
    }
}

extension OutgoingHit {
    /// The hit cache document as a value: what a custom cache receives (the `hits.document`
    /// column holds the same as text, `cacheDocumentText`). Its content is read from the wire text.
    var cacheDocument: HitCacheDocument {
        let content = (try? FSJSONValue(parsing: Data(wire.utf8)))?.objectValue ?? [:]
        return HitCacheDocument(visitorId: visitorId, anonymousId: anonymousId, type: type, time: createdAt, content: content)
    }

    /// A hit read back from a cache document, to be sent exactly as it was (`qt` is recomputed).
    package init(id: String, document: HitCacheDocument) {
        var fields = document.content
        fields["qt"] = nil
        self.init(id: id, type: document.type, createdAt: document.time, fields: fields)
    }
}

extension Array where Element == OutgoingHit {
    /// Up to `limit` of these hits for `endpoint`, in order, whose ids are not in `taken`; their
    /// ids join it. How an in-memory queue lends hits to a send and keeps them from a second one.
    func lend(_ endpoint: HitEndpoint, limit: Int, marking taken: inout Set<String>) -> [OutgoingHit] {
        var lent: [OutgoingHit] = []
        for hit in self where lent.count < limit && hit.isActivate == (endpoint == .activate) && !taken.contains(hit.id) {
            lent.append(hit)
        }
        taken.formUnion(lent.map(\.id))
        return lent
    }
}
