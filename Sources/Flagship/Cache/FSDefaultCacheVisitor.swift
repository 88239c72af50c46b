import FlagshipStore
import Foundation
import Logging

/// The default visitor cache: the `visitors` table of the environment's SQLite database.
///
/// Each row keeps the document as JSON text beside plain columns (`visitor_id`, `anonymous_id`,
/// `consent`, `updated_at`) that a person can query with the `sqlite3` shell.
public final class FSDefaultCacheVisitor: FSVisitorCacheDelegate, Sendable {
    private let database: FlagshipDatabase
    private let now: @Sendable () -> Date
    private let logger: Logger
    /// Whether the log already said the file is gone (once per store, not per visitor).
    private let fileGoneLogged = Locked(false)

    /// Opens (creating or upgrading it) `<cacheDirectory>/flagship-<envId>.sqlite`.
    /// - Parameter envId: the environment the store is for (it names the file).
    /// - Parameter cacheDirectory: default `$FLAGSHIP_CACHE_DIR`, else `$XDG_CACHE_HOME/flagship`,
    ///   else `~/.cache/flagship`.
    /// - Parameter logger: where the cache logs (the app's); by default its own, labelled `io.flagship`.
    public convenience init(envId: String, cacheDirectory: URL? = nil, logger: Logger? = nil) throws(FSCacheError) {
        let logger = logger ?? Logger.flagship()
        let database = try LocalStore.open(envId: envId, directory: cacheDirectory, logger: logger)
        // An app's own cache manager holds this one: no retention task writes its lookups.
        database.sightings.isRecording = false
        self.init(database: database, logger: logger)
    }

    init(database: FlagshipDatabase, now: @escaping @Sendable () -> Date = Date.init, logger: Logger) {
        self.database = database
        self.now = now
        self.logger = logger
    }

    /// Saves the document as given, once it is known to be a version-1 document of this visitor;
    /// a refused document or a failed write is logged, and a database that can only be read
    /// keeps what it has.
    public func cacheVisitor(visitorId: String, _ visitorData: Data) {
        // Said once at open (`LocalStore`): a store that can only be read keeps what it has.
        guard database.opening.readOnly == nil else {
            logger.debug("Visitor '\(visitorId)' not cached: the cache database can only be read")
            return
        }
        do {
            try save(visitorId: visitorId, visitorData)
        } catch {
            logger.error("A visitor was not cached: \(error)", metadata: logger.visitorMetadata(visitorId))
        }
    }

    /// The document saved for this visitor, byte for byte; `nil` when there is none or the read
    /// failed (logged).
    public func lookupVisitor(visitorId: String) -> Data? {
        do {
            // Beside the group commit under way, never behind it: what it writes is read from the
            // pending documents meanwhile (`CacheService`).
            guard let found = try database.readBesideWrites({ try $0.visitors.visitorAndLastSeen(id: visitorId) }) else { return nil }
            // A returning visitor is seen even when nothing about it is written: noted here,
            // recorded in a batch (`VisitorSightings`), so retention does not prune it.
            if database.opening.readOnly == nil {
                database.sightings.noteLookup(of: visitorId, lastSeenAt: found.lastSeenAt, now: now().unixMilliseconds)
            }
            return Data(found.record.document.utf8)
        } catch {
            logger.error("A visitor could not be read from the cache: \(error)", metadata: logger.visitorMetadata(visitorId))
            return nil
        }
    }

    /// Deletes the visitor's row, then erases its traces from the write-ahead log; a failure is
    /// logged.
    public func flushVisitor(visitorId: String) {
        do {
            try database.write { try $0.visitors.delete(visitorId: visitorId) }
            // Committed: the deleted row's traces on disk go too.
            try database.database.eraseWALHistory()
        } catch {
            logger.error("A visitor could not be deleted from the cache: \(error)", metadata: logger.visitorMetadata(visitorId))
        }
    }

    /// Stores the document as given (its bytes come back unchanged from `lookupVisitor`), once
    /// it is known to be a version-1 document of this visitor.
    func save(visitorId: String, _ visitorData: Data) throws {
        let document = try VisitorCacheDocument(data: visitorData, expectedVisitorId: visitorId)
        guard let text = String(data: visitorData, encoding: .utf8) else {
            throw VisitorCacheDocumentError.notJSON("not UTF-8")
        }
        let record = VisitorRecord(
            visitorId: visitorId, anonymousId: document.anonymousId, consent: document.consent,
            document: text, updatedAt: now().unixMilliseconds)
        try database.write { try $0.visitors.save(record) }
        // Still written: later lookups in this process read the open file. But no restart will.
        if !database.fileIsInPlace, fileGoneLogged.setFirst() {
            logger.error("Visitors cached from now on go to a database file that no longer exists (\(database.database.path) was deleted or moved while open): they will not survive a restart, which creates a new file")
        }
    }
}
