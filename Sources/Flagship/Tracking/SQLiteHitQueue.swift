import FlagshipStore
import Foundation
import Logging

/// The default hit cache as the tracking manager's queue: the `hits` table, read in pages.
///
/// Memory never grows with the table: a sender holds one claimed page at a time. A claimed hit
/// is sent from its stored document's bytes: the wire text it holds is cut out, not parsed
/// (`OutgoingHit(record:)`); only a document in another layout is parsed.
final class SQLiteHitQueue: HitQueue {
    /// Who holds a claim, as `flagship hits` and `hits_readable.sending_by` show it.
    let owner: String
    let store: FlagshipDatabase
    private let capacity: Int
    private let logger: Logger
    /// What the store is known to hold, kept inside its write transactions (so in step with them).
    private let table: OwnHitTable

    /// The SDK's clock, in unix ms: what eviction compares claims with.
    private let now: @Sendable () -> Int64

    init(store: FlagshipDatabase, capacity: Int, leaseDuration: TimeInterval, logger: Logger,
         now: @escaping @Sendable () -> Int64 = { Date().unixMilliseconds }) {
        self.store = store
        self.capacity = capacity
        table = OwnHitTable(leaseMilliseconds: Int64((leaseDuration * 1000).rounded()))
        self.logger = logger
        self.now = now
        owner = ClaimOwner(host: Self.hostName, pid: ProcessInfo.processInfo.processIdentifier,
                           instance: String(UUID().uuidString.prefix(8).lowercased())).description
    }

    var durability: HitDurability {
        let path = store.database.path
        if store.isInMemory {
            return HitDurability(notDurable: FSCacheError(code: .inMemory, path: nil, description: "the hit cache runs in memory: its hits would not survive a restart"),
                                 waitingHitsSurvive: false)
        }
        // SQLite would commit into a deleted file and call it durable; no restart would find it.
        let inPlace = store.fileIsInPlace
        if let reason = store.opening.readOnly {
            return HitDurability(notDurable: FSCacheError(code: .readOnly, path: path, description: "\(path): the database file is read, not written: \(reason)"),
                                 waitingHitsSurvive: inPlace)
        }
        guard inPlace else {
            return HitDurability(notDurable: FSCacheError(code: .fileReplaced, path: path, description: "\(path): the database file was deleted or replaced while open"),
                                 waitingHitsSurvive: false)
        }
        return .durable
    }

    /// Hits written claimed are handed to the sender in memory: no claim, no walk of the index.
    /// A file only read has none: it is written by no one here.
    var ownTable: OwnHitTable? {
        store.opening.readOnly == nil ? table : nil
    }

    /// At start: the claims of a process of this host that no longer runs (killed mid-send) are
    /// released at once instead of lapsing a minute later, so a restart replays everything.
    func loadCached(now: Int64, found: @escaping @Sendable (_ takeIn: @escaping @Sendable () -> Int) -> Void) {
        guard store.opening.readOnly == nil else { return }
        do {
            let owners = try store.read { try $0.hits.claimOwners(now: now) }
            for (owner, rows) in owners {
                guard let claim = ClaimOwner(owner), claim.host == Self.hostName, !claim.processIsRunning else { continue }
                try store.write { try $0.hits.releaseClaims(owner: owner) }
                table.claimsMayHaveLapsed()
                logger.info("Released \(rows) hit(s) claimed by \(owner), a process that no longer runs")
            }
        } catch {
            logger.error("Claims of earlier processes could not be checked (\(error)): they lapse by themselves")
        }
    }

    /// `gethostname`, not `ProcessInfo.hostName`, which may ask DNS; no spaces, so it parses back.
    static let hostName: String = {
        var buffer = [UInt8](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self).replacingOccurrences(of: " ", with: "_")
        return name.isEmpty ? "localhost" : name
    }()

    /// The writer's calls run on the thread of whoever awaits them: the tracking manager's store
    /// thread (`TrackingStore`), where SQLite may block.
    func save(_ hits: [CachedHit]) async throws -> Int {
        try save(hits, alongside: nil)
    }

    /// Whether this queue is the `hits` table of `other`: then work on `other` can share its
    /// transactions (`save(_:alongside:)`, `purge(visitorId:keeping:alongside:)`).
    func isTable(of other: FlagshipDatabase) -> Bool {
        store === other
    }

    /// Writes the hits, and runs `alongside` (writes of the same store: visitor documents) in the
    /// same transaction: all of it is committed, or none.
    func save(_ hits: [CachedHit], alongside: ((Connection) throws -> Void)?) throws -> Int {
        guard !hits.isEmpty || alongside != nil else { return 0 }
        if let notDurable = durability.notDurable { throw notDurable }
        // A damaged file may take a row it can no longer give back (a claim reads the damaged
        // index), and the next start moves it aside: hits wait in memory and are sent from there.
        guard !store.database.hasMetDamage else {
            let path = store.database.path
            throw FSCacheError(code: .damaged, path: path, description: "\(path): the database file is damaged (it is moved aside at the next start)")
        }
        let owner = owner
        var unclaimed = (activates: false, hits: false)
        let records = hits.map { cached in
            if cached.claimedUntil == nil {
                if cached.hit.isActivate { unclaimed.activates = true } else { unclaimed.hits = true }
            }
            var record = HitRecord(cached.hit, document: cached.document)
            if let claimedUntil = cached.claimedUntil {
                record.leaseOwner = owner
                record.leaseUntil = claimedUntil
            }
            return record
        }
        let now = now()
        do {
            let outcome = try store.write { db in
                try alongside?(db)
                let outcome = try db.hits.insert(records, capacity: capacity, now: now)
                table.wrote(unclaimedActivates: unclaimed.activates, unclaimedHits: unclaimed.hits, count: outcome.total)
                return outcome
            }
            return outcome.evicted
        } catch {
            throw FSCacheError(error, path: store.database.path)
        }
    }

    /// Writes `hit` through `handle`, an app's own connection to this file inside the app's
    /// transaction (`FSVisitor.sendHit(_:inTransactionOn:)`): the row commits or rolls back with
    /// the app's rows, unclaimed. The sender finds it at its next batch interval, when claims
    /// look in the table again (`OwnHitTable.claimsMayHaveLapsed`), or at the next start.
    ///
    /// Admission (`TrackingManager.admitInTransaction`): with `evictAtCap` (an outage) the cap
    /// holds as for any write, the oldest rows past it evicted in the same transaction (returned);
    /// with `refuseFrom`, a table already holding that many rows in the app's view refuses the
    /// hit, nothing written (`.refused`).
    func write(_ hit: OutgoingHit, inTransactionOn handle: OpaquePointer, evictAtCap: Bool, refuseFrom: Int?) throws(TransactionalWrite) -> Int {
        if let notDurable = durability.notDurable { throw .failed(notDurable) }
        let record = HitRecord(hit)
        let (capacity, now) = (capacity, now())
        let outcome: Int?
        do {
            outcome = try store.writeThrough(handle) { db -> Int? in
                if let refuseFrom, try db.hits.count() >= refuseFrom { return nil }
                return try db.hits.insert([record], capacity: evictAtCap ? capacity : nil, now: now).evicted
            }
        } catch {
            throw .failed(FSCacheError(error, path: store.database.path))
        }
        guard let outcome else { throw .refused }
        return outcome
    }

    /// Why a hit was not written in the app's transaction.
    enum TransactionalWrite: Error {
        /// Backpressure: the table holds as many hits as it starts at, while sends succeed.
        case refused
        case failed(FSCacheError)
    }

    /// On the database's own queue, beside the writer's group commits on the tracking manager's:
    /// a claim waits for the one transaction under way at most, never for the commits queued
    /// behind it (under a steady flow of hits the sender would otherwise visit the store once per
    /// group commit, and deliver no faster than the disk commits).
    func claim(_ endpoint: HitEndpoint, limit: Int, now: Int64) async throws -> [OutgoingHit] {
        // Hits of a file that can only be read could be sent but never deleted: they wait for a writer.
        guard store.opening.readOnly == nil else { return [] }
        let (until, overflow) = now.addingReportingOverflow(table.leaseMilliseconds)
        let (owner, table) = (owner, table)
        let records = try await store.write(cancellable: false) { db in
            let records = try db.hits.claim(endpoint, owner: owner, now: now, leaseUntil: overflow ? .max : until, limit: limit)
            // Nothing more to claim until a row is written or released unclaimed (in this same
            // lock's order), or a claim lapses.
            if records.count < limit { table.claimedAll(endpoint) }
            return records
        }
        var hits: [OutgoingHit] = []
        var unreadable: [String] = []
        hits.reserveCapacity(records.count)
        for record in records {
            if let hit = OutgoingHit(record: record) {
                hits.append(hit)
                continue
            }
            do {
                hits.append(OutgoingHit(id: record.id, document: try HitCacheDocument(FSJSONValue(parsing: Data(record.document.utf8)))))
            } catch {
                logger.error("A cached hit cannot be sent, its document is not a hit cache document (\(error)): it stays in the cache as a dead letter, never sent (`flagship hits` lists it), until it expires",
                             metadata: logger.logLevel <= .debug ? ["hit_id": .string(record.id)] : nil)
                unreadable.append(record.id)
            }
        }
        if !unreadable.isEmpty {
            try await store.write(cancellable: false) { [unreadable] in try $0.hits.setAside(ids: unreadable, reason: "unreadable document") }
        }
        return hits
    }

    /// On the database's own queue, as `claim`.
    func settle(_ settlement: HitSettlement) async throws {
        guard !settlement.isEmpty else { return }
        let (owner, table, capacity, now) = (owner, table, capacity, now)
        try await store.write(cancellable: false) { db in
            try db.hits.delete(ids: settlement.delivered + settlement.rejected)
            try db.hits.recordFailedAttempt(ids: settlement.failed, nextAttemptAt: settlement.nextAttemptAt)
            if !settlement.released.isEmpty { try db.hits.releaseClaims(owner: owner, ids: settlement.released) }
            // Rows out of flight again count toward the cap, which eviction skipped them for.
            let evicted = settlement.failed.isEmpty && settlement.released.isEmpty
                ? 0 : try db.hits.evictOldest(beyond: capacity, now: now())
            table.claimsEnded(reopened: !settlement.failed.isEmpty || !settlement.released.isEmpty, evicted: evicted, count: try db.hits.count())
        }
    }

    func deleteExpired(createdBefore boundary: Int64) async throws -> Int {
        try deleteExpired(before: boundary)
    }

    private func deleteExpired(before boundary: Int64) throws -> Int {
        guard store.opening.readOnly == nil else { return 0 }
        return try store.write { try $0.hits.deleteHits(createdBefore: boundary) }
    }

    func purge(visitorId: String, keeping: Set<String>) async throws -> Int {
        try purge(visitorId: visitorId, keeping: keeping, alongside: nil)
    }

    /// As `purge(visitorId:keeping:)`, running `alongside` (the visitor's row deleted) in the same
    /// transaction; then the deleted rows' traces are erased from the disk.
    func purge(visitorId: String, keeping: Set<String>, alongside: ((Connection) throws -> Void)?) throws -> Int {
        let deleted = try store.write { db in
            try alongside?(db)
            return try db.hits.deleteHits(visitorId: visitorId, keepingConsentHits: true, keepingIds: keeping)
        }
        try store.database.eraseWALHistory()
        return deleted
    }

    func count() async throws -> Int {
        try countNow()
    }

    private func countNow() throws -> Int {
        try store.read { try $0.hits.count() }
    }

    func releaseClaims(_ ids: [String]?) async throws {
        try releaseClaimsNow(ids)
    }

    private func releaseClaimsNow(_ ids: [String]?) throws {
        guard store.opening.readOnly == nil else { return }
        let (owner, capacity, now) = (owner, capacity, now())
        let table = table
        try store.write { db in
            try db.hits.releaseClaims(owner: owner, ids: ids)
            // Rows out of flight count toward the cap again: eviction may take some, and the
            // count backpressure reads is the table's after it.
            table.claimsEnded(reopened: true, evicted: try db.hits.evictOldest(beyond: capacity, now: now), count: try db.hits.count())
        }
    }
}

/// Who holds a claim, as stored in `hits.lease_owner`: `<host> pid <pid> <instance>`, readable
/// in the sqlite3 shell, and enough to tell a claim of a process that died on this host.
struct ClaimOwner: Equatable, CustomStringConvertible {
    let host: String
    let pid: Int32
    let instance: String

    init(host: String, pid: Int32, instance: String) {
        self.host = host
        self.pid = pid
        self.instance = instance
    }

    init?(_ text: String) {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[1] == "pid", let pid = Int32(parts[2]), pid > 0 else { return nil }
        self.init(host: String(parts[0]), pid: pid, instance: String(parts[3]))
    }

    var description: String { "\(host) pid \(pid) \(instance)" }

    /// Whether a process with that id runs on this host (a reused id says yes: the claim then
    /// simply lapses as usual).
    var processIsRunning: Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }
}
