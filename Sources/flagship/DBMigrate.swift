import ArgumentParser
import FlagshipStore

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

    @OptionGroup var database: DatabaseArguments

    func run() throws {
        let store = try FlagshipDatabase.open(at: database.url)
        defer { store.close() }
        if let movedAside = store.opening.movedAside {
            Output.warn(
                "\(database.url.path) was damaged (\(movedAside.reason)): moved it aside to \(movedAside.url.path) and created a new store"
            )
        }
        if let wal = store.opening.walSetAside {
            Output.warn("the -wal beside \(database.url.path) is not this store's (\(wal.reason)): kept as \(wal.url.path), not replayed")
        }
        if let reason = store.opening.readOnly {
            throw CommandFailure("\(database.url.path) cannot be migrated now: \(reason)")
        }
        let from = store.opening.fromVersion
        if from == store.schemaVersion {
            print("already at schema version \(store.schemaVersion)")
        } else {
            print("schema version \(store.schemaVersion) (migrated from \(from))")
        }
    }
}
