import FlagshipStore
import Foundation
import Logging

/// The default hit cache: the `hits` table of the environment's SQLite database.
///
/// Writes of several hits share one transaction. Hits older than `hitLifetime` are deleted
/// unsent; past `maxHits` rows, the oldest are evicted first. Both are counted in the log.
public final class FSDefaultCacheHit: FSHitCacheDelegate, Sendable {
    /// Hits older than this (seconds) are deleted unsent. Default: 4 hours.
    public let hitLifetime: TimeInterval
    /// The most rows the table keeps. Default: 100,000.
    public let maxHits: Int

    /// The database the tracking manager uses directly (typed, paged) when this cache is given to
    /// an `FSCacheManager`.
    let database: FlagshipDatabase
    private let now: @Sendable () -> Date
    private let logger: Logger
    private static let pageSize = 500

    /// Opens (creating or upgrading it) `<cacheDirectory>/flagship-<envId>.sqlite`.
    /// - Parameters:
    ///   - envId: the environment the store is for (it names the file).
    ///   - cacheDirectory: default `$FLAGSHIP_CACHE_DIR`, else `$XDG_CACHE_HOME/flagship`, else
    ///     `~/.cache/flagship`.
    ///   - hitLifetime: seconds a hit waits for delivery before it is deleted unsent (4 h).
    ///   - maxHits: the most hits the table holds (100,000); past it the oldest are evicted,
    ///     counted and logged.
    ///   - logger: where the cache logs (the app's); by default its own, labelled `io.flagship`.
    public convenience init(
        envId: String,
        cacheDirectory: URL? = nil,
        hitLifetime: TimeInterval = 4 * 3600,
        maxHits: Int = 100_000,
        logger: Logger? = nil
    ) throws(FSCacheError) {
        let logger = logger ?? Logger.flagship()
        let database = try LocalStore.open(envId: envId, directory: cacheDirectory, logger: logger)
        self.init(database: database, hitLifetime: hitLifetime, maxHits: maxHits, logger: logger)
    }

    init(
        database: FlagshipDatabase,
        hitLifetime: TimeInterval = 4 * 3600,
        maxHits: Int = 100_000,
        now: @escaping @Sendable () -> Date = Date.init,
        logger: Logger
    ) {
        self.database = database
        self.hitLifetime = max(0, hitLifetime)
        self.maxHits = max(1, maxHits)
        self.now = now
        self.logger = logger
    }

    // MARK: FSHitCacheDelegate

    /// Saves these hits in one transaction, evicting the oldest rows past `maxHits` (logged). A
    /// document that is not a hit cache document is logged and skipped; a failed write is logged.
    public func cacheHits(hits: [String: [String: Any]]) {
        var documents: [String: HitCacheDocument] = [:]
        for (id, dictionary) in hits {
            do {
                documents[id] = try HitCacheDocument(dictionary: dictionary)
            } catch {
                logger.error("A hit was not cached: \(error)", metadata: logger.logLevel <= .debug ? ["hit_id": .string(id)] : nil)
            }
        }
        do {
            try save(documents)
        } catch {
            logger.error("\(documents.count) hit(s) not cached: \(error)")
        }
    }

    /// Every unexpired hit, after deleting those past `hitLifetime`; a row that cannot be read
    /// is logged and skipped. A failed read is logged and gives what was read before it.
    public func lookupHits() -> [String: [String: Any]] {
        var hits: [String: [String: Any]] = [:]
        do {
            try forEachPendingHit { id, document in hits[id] = document.dictionary }
        } catch {
            logger.error("Cached hits could not be read: \(error)")
        }
        return hits
    }

    /// Deletes the hits with these ids in one transaction; a failure is logged.
    public func flushHits(hitIds: [String]) {
        guard !hitIds.isEmpty else { return }
        do {
            try database.write { try $0.hits.delete(ids: hitIds) }
        } catch {
            logger.error("\(hitIds.count) hit(s) could not be deleted from the cache: \(error)")
        }
    }

    /// Empties the table, consent hits included; a failure is logged.
    public func flushAllHits() {
        do {
            try database.write { try $0.hits.deleteAll() }
        } catch {
            logger.error("The hit cache could not be emptied: \(error)")
        }
    }

    // MARK: For the SDK: errors surface, memory stays bounded

    /// Saves the hits in one transaction, evicting the oldest rows beyond `maxHits`.
    @discardableResult
    func save(_ documents: [String: HitCacheDocument]) throws -> HitRecordStore.InsertOutcome {
        var records: [HitRecord] = []
        records.reserveCapacity(documents.count)
        for (id, document) in documents {
            records.append(HitRecord(
                id: id, visitorId: document.visitorId, type: document.type, isConsent: document.isConsentHit,
                document: document.jsonValue.jsonString(), createdAt: document.time))
        }
        let outcome = try database.write { try $0.hits.insert(records, capacity: maxHits) }
        if outcome.evicted > 0 {
            logger.warning("Hit cache full (\(maxHits) hits): evicted the \(outcome.evicted) oldest unsent hit(s)")
        }
        return outcome
    }

    /// Deletes the hits past their lifetime; returns how many.
    @discardableResult
    func deleteExpiredHits() throws -> Int {
        let boundary = now().unixMilliseconds - Int64((hitLifetime * 1000).rounded())
        let deleted = try database.write { try $0.hits.deleteHits(createdBefore: boundary) }
        if deleted > 0 {
            logger.warning("Deleted \(deleted) unsent hit(s) older than \(Self.describe(hitLifetime))")
        }
        return deleted
    }

    /// Visits every unexpired hit, oldest first, one page in memory at a time (each read in a
    /// transaction of its own, `body` outside it). A row whose
    /// document cannot be read (a hand edit) is logged and skipped, and left in the table.
    func forEachPendingHit(_ body: (String, HitCacheDocument) throws -> Void) throws {
        try deleteExpiredHits()
        try database.forEachHitPage(pageSize: Self.pageSize) { records in
            for record in records {
                let document: HitCacheDocument
                do {
                    document = try HitCacheDocument(FSJSONValue(parsing: Data(record.document.utf8)))
                } catch {
                    logger.error("A cached hit was skipped: \(error)", metadata: logger.logLevel <= .debug ? ["hit_id": .string(record.id)] : nil)
                    continue
                }
                try body(record.id, document)
            }
        }
    }

    /// Consent withdrawn: deletes the visitor's hits except its consent hits, then erases their
    /// traces on disk (`Database.eraseWALHistory()`); returns how many.
    @discardableResult
    func purgeHits(visitorId: String) throws -> Int {
        let deleted = try database.write { try $0.hits.deleteHits(visitorId: visitorId, keepingConsentHits: true) }
        try database.database.eraseWALHistory()
        return deleted
    }

    private static func describe(_ interval: TimeInterval) -> String {
        interval >= 3600 && interval.truncatingRemainder(dividingBy: 3600) == 0
            ? "\(Int(interval / 3600)) h" : "\(Int(interval)) s"
    }
}
