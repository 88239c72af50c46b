import FlagshipStore
import Foundation
import Logging

/// Where accepted hits wait until they are delivered: the durable side of the tracking manager.
///
/// Two kinds: ``SQLiteHitQueue`` over the default cache's `hits` table (typed, paged, claimed
/// in transactions so that processes sharing the file never send a hit twice), and
/// ``DelegateHitQueue`` over a custom `FSHitCacheDelegate` (reference semantics). Every call
/// blocks on I/O: the tracking manager makes them from its own serial queue, never from a task.
package protocol HitQueue: Sendable {
    /// Writes accepted hits, all or none (one transaction). Returns how many of the oldest were
    /// evicted to stay within the cap.
    func save(_ hits: [CachedHit]) throws -> Int
    /// Up to `limit` hits for `endpoint`, oldest first, claimed by this instance so that no other
    /// sender takes them while they are in flight.
    func claim(_ endpoint: HitEndpoint, limit: Int, now: Int64) throws -> [OutgoingHit]
    /// What became of claimed hits, recorded in one transaction.
    func settle(_ settlement: HitSettlement) throws
    /// Deletes the hits created before `boundary` (unix ms); returns how many.
    func deleteExpired(createdBefore boundary: Int64) throws -> Int
    /// Consent withdrawn: deletes the visitor's hits except consent hits; returns how many.
    /// Deletes a visitor's hits but its consent hits and the hits in `keeping` (accepted after the
    /// withdrawal); returns how many went.
    func purge(visitorId: String, keeping: Set<String>) throws -> Int
    /// How many hits wait.
    func count() throws -> Int
    /// Ends this instance's claims, so the next start (or another process) sends those hits.
    func releaseClaims() throws
    /// Reads what earlier runs left, where the queue needs to (a custom cache's `lookupHits`).
    func loadCached(now: Int64)
    /// Why a saved hit would not be in a file the next start finds, if it would not: the store
    /// fell back to memory, its file can only be read, or was deleted or replaced under the SDK.
    var notDurable: FSCacheError? { get }
    /// Whether the hits waiting in the queue are in a file the next start finds (also when this
    /// process can only read it): not in memory, nor in a file deleted or replaced under the SDK.
    var waitingHitsSurvive: Bool { get }
    /// Whether the sender's claims and settlements may run while the writer writes (a database
    /// server, which orders concurrent calls itself): then they get a queue of their own, and a
    /// group commit never waits behind a claim's round trip.
    var takesConcurrentCalls: Bool { get }
}

extension HitQueue {
    package func loadCached(now: Int64) {}
    /// A custom cache keeps hits where it chooses: the SDK takes its word for it.
    package var notDurable: FSCacheError? { nil }
    package var waitingHitsSurvive: Bool { true }
    package var takesConcurrentCalls: Bool { false }
}

/// A hit with its cache document as JSON text: the wire text wrapped, not encoded again. Made on
/// the thread of whoever sent the hit, so that the tracking manager's single writer only writes.
package struct CachedHit: Sendable {
    package let hit: OutgoingHit
    package let document: String

    package init(_ hit: OutgoingHit) {
        self.hit = hit
        document = hit.cacheDocumentText
    }

    /// `document` is `hit.cacheDocumentText`, made before.
    package init(_ hit: OutgoingHit, document: String) {
        self.hit = hit
        self.document = document
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

    package var isEmpty: Bool { delivered.isEmpty && rejected.isEmpty && failed.isEmpty }

    package init(delivered: [String] = [], rejected: [String] = [], failed: [String] = [], nextAttemptAt: Int64? = nil) {
        self.delivered = delivered
        self.rejected = rejected
        self.failed = failed
        self.nextAttemptAt = nextAttemptAt
    }
}

extension OutgoingHit {
    /// The hit cache document as a value: what a custom cache receives (the `hits.document`
    /// column holds the same as text, `cacheDocumentText`). Its content is read from the wire text.
    var cacheDocument: HitCacheDocument {
        let content = (try? JSONValue(json: Data(wire.utf8)))?.objectValue ?? [:]
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
