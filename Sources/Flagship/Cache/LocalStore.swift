import FlagshipStore
import Foundation
import Logging

/// Opens the environment's SQLite database for the default caches.
enum LocalStore {
    /// Opens `<directory>/flagship-<envId>.sqlite`, logging what opening had to do.
    static func open(envId: String, directory: URL?, file: URL? = nil, logger: Logger) throws(FSCacheError) -> FlagshipDatabase {
        let url = file ?? StoreLocation.databaseFile(envId: envId, in: directory ?? StoreLocation.defaultDirectory())
        let database: FlagshipDatabase
        do {
            database = try FlagshipDatabase.open(at: url)
        } catch {
            throw FSCacheError(error, path: url.path)
        }
        if let permissions = FilePermissions.openToOthers(atPath: url.path) {
            logger.warning("Other users can read or change the cache database (mode \(FilePermissions.octal(permissions))), which holds visitor data: chmod 600 it", metadata: ["path": "\(url.path)"])
        }
        if let reason = database.opening.readOnly {
            logger.warning("The cache database is read, not written: \(reason). Cached visitors and the stored bucketing file are served from it; visitors and hits are not written to it (hits wait in memory and are lost if the process ends before they are sent)", metadata: ["path": "\(url.path)"])
        }
        switch database.opening.salvage {
        case .success(let salvage)?:
            logger.warning("Kept what the damaged cache database still held: \(salvage.hitsCopied) hit(s), \(salvage.visitorsCopied) visitor(s) and \(salvage.decisionsCopied) decision(s) copied into the new one\(salvage.unreadableStretches > 0 ? "; \(salvage.unreadableStretches) damaged stretch(es) could not be read" : "")\(salvage.tablesCutShort > 0 ? "; the scan of \(salvage.tablesCutShort) table(s) stopped at its bound of 3 s" : "")", metadata: ["path": "\(url.path)"])
        case .failure(let error)?:
            logger.warning("Nothing could be copied from the damaged cache database: \(error)", metadata: ["path": "\(url.path)"])
        case nil:
            break
        }
        if let wal = database.opening.walSetAside {
            logger.error("The -wal beside the cache database is not its own (\(wal.reason)): kept as \(wal.url.path), not replayed", metadata: ["path": "\(url.path)"])
        }
        if let movedAside = database.opening.movedAside {
            logger.error("The cache database was damaged (\(movedAside.reason)); it was moved to \(movedAside.url.path) and a new one created", metadata: ["path": "\(url.path)"])
        } else if let reason = database.opening.fullCheck {
            logger.info("Cache database checked in full before use: \(reason)", metadata: ["path": "\(url.path)"])
        } else if let reason = database.opening.deferredCheck {
            logger.info("Cache database checked before use where a crash can leave damage (schema, hits), and in full in the background, being too large to read whole at start: \(reason)", metadata: ["path": "\(url.path)"])
            database.onDeferredCheckEnded { outcome in
                switch outcome {
                case .passed(let seconds):
                    logger.info("Cache database checked in full in the background in \(String(format: "%.1f", seconds)) s: no damage", metadata: ["path": "\(url.path)"])
                case .damaged(let findings):
                    logger.error("The full check found the cache database damaged (\(findings)): the SDK keeps working, and the next start moves it aside and copies what it still holds into a new one", metadata: ["path": "\(url.path)"])
                case .failed(let reason):
                    logger.warning("The cache database's full check could not run (\(reason)): it is tried again at the next start", metadata: ["path": "\(url.path)"])
                case .interrupted:
                    logger.info("The cache database's full check did not finish before close: it runs again at the next start", metadata: ["path": "\(url.path)"])
                }
            }
        }
        if database.opening.switchedToIncrementalVacuum {
            logger.info("Cache database switched to incremental auto-vacuum (rewritten once): the space pruned visitors free is given back", metadata: ["path": "\(url.path)"])
        } else if database.opening.readOnly == nil, !database.isInMemory, (try? database.autoVacuumMode()) == FlagshipDatabase.AutoVacuum.none {
            logger.info("Cache database made before incremental auto-vacuum and too large to switch at start: pruned visitors' space is reused, not given back, until `flagship db prune --db \(url.path)` switches it once", metadata: ["path": "\(url.path)"])
        }
        if database.opening.movedAside == nil, database.opening.fromVersion < database.schemaVersion {
            logger.info("Cache database at schema version \(database.schemaVersion) (was \(database.opening.fromVersion))", metadata: ["path": "\(url.path)"])
        }
        // Moving the file aside while this process (or another) has it open would split it in
        // two: this session keeps working, and the next start checks the file and moves it aside.
        database.database.onFirstDamage { error in
            logger.error("The cache database is damaged (\(error.message)): the SDK keeps working, what cannot be written waits in memory, and the next start checks the file and moves it aside", metadata: ["path": "\(url.path)"])
        }
        return database
    }

    /// As `open`, but never fails: when the file cannot be used (newer schema, unwritable
    /// directory...), the SDK keeps working on an in-memory database and says so.
    /// `nil` only when not even an in-memory database can be had.
    static func openOrFallBack(envId: String, directory: URL?, file: URL? = nil, logger: Logger) -> FlagshipDatabase? {
        do {
            return try open(envId: envId, directory: directory, file: file, logger: logger)
        } catch {
            logger.error("Cannot use the cache database: \(error). Running with an in-memory cache: visitors and unsent hits will not survive a restart")
        }
        do {
            return try FlagshipDatabase.inMemory()
        } catch {
            logger.critical("Cannot open even an in-memory cache: \(error). Running without a cache")
            return nil
        }
    }
}
