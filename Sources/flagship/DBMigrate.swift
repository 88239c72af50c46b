import ArgumentParser
import FlagshipStore
import Foundation

/// `flagship db migrate`: creates the store or brings its schema up to date.
struct DBMigrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Create the store file, or bring its schema up to date.",
        discussion: """
            A file that is not a database, or is damaged, is moved aside to <name>.corrupt-<timestamp> \
            (never deleted) and replaced by a new store. A file written by a newer version is refused \
            and left untouched.
            """
    )

    @OptionGroup var database: DatabaseArguments<MigrateStore>

    func run() throws {
        try database.requireStoreFile()
        let store = try FlagshipDatabase.open(at: database.url)
        defer { store.close() }
        Self.report(store.opening, of: database.url)
        if let reason = store.opening.readOnly {
            throw CommandFailure("\(database.url.path) cannot be migrated now: \(reason)")
        }
        let from = store.opening.fromVersion
        if from == store.schemaVersion {
            print("already at schema version \(store.schemaVersion)")
        } else {
            print("schema version \(store.schemaVersion) (migrated from \(from))")
        }
        if store.opening.switchedToIncrementalVacuum {
            print("switched to incremental auto-vacuum: the file was rewritten once, so that space pruned visitors free is given back")
        }
    }

    /// What opening the store at `url` had to do, on stderr: a damaged file moved aside and
    /// what was kept of it, a -wal that was not the store's.
    static func report(_ opening: FlagshipDatabase.Opening, of url: URL) {
        if let movedAside = opening.movedAside {
            Output.warn(
                "\(url.path) was damaged (\(movedAside.reason)): moved it aside to \(movedAside.url.path) and created a new store"
            )
        }
        switch opening.salvage {
        case .success(let salvage)?:
            Output.warn("kept what the damaged file still held: \(salvage.hitsCopied) hit(s), \(salvage.visitorsCopied) visitor(s) and \(salvage.decisionsCopied) decision(s) copied into the new store\(salvage.unreadableStretches > 0 ? " (\(salvage.unreadableStretches) damaged stretch(es) could not be read)" : "")\(salvage.tablesCutShort > 0 ? " (the scan of \(salvage.tablesCutShort) table(s) stopped at its bound of 3 s)" : "")")
        case .failure(let error)?:
            Output.warn("nothing could be copied from the damaged file: \(error)")
        case nil:
            break
        }
        if let wal = opening.walSetAside {
            Output.warn("the -wal beside \(url.path) is not this store's (\(wal.reason)): kept as \(wal.url.path), not replayed")
        }
    }
}
