import ArgumentParser
import FlagshipStore
import Foundation

/// `flagship db salvage`: what a damaged store moved aside still holds, copied into the store.
struct DBSalvage: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "salvage",
        abstract: "Copy the readable hits and visitors of a damaged store file into the store.",
        discussion: """
            --from names a file the SDK moved aside (<name>.corrupt-<timestamp>, with its -wal) or any \
            other copy of a store. It is never written: it is read from a private copy, row by row, \
            past its damaged pages. Hits and visitors the store already has (same id) are left as \
            they are. The store records the salvage, so the same file is salvaged once: a second \
            run exits 1 instead of putting back hits delivered since. The SDK does this by itself \
            when it moves a damaged store aside; this is for files it did not. Prints \
            {"hitsCopied", "hitsAlreadyThere", "visitorsCopied", "visitorsAlreadyThere", \
            "rowsRefused", "unreadableStretches"}.
            """
    )

    @OptionGroup var database: DatabaseArguments<SalvageStore>
    @Option(help: ArgumentHelp("The damaged store file to read.", valueName: "path")) var from: String

    func run() throws {
        try database.requireStoreFile()
        let source = URL(fileURLWithPath: from).standardizedFileURL
        guard FileManager.default.fileExists(atPath: source.path) else {
            throw CommandFailure("no file at \(source.path)")
        }
        guard source.resolvingSymlinksInPath().path != database.url.resolvingSymlinksInPath().path else {
            throw CommandFailure("--from and --db name the same file")
        }
        let store = try FlagshipDatabase.open(at: database.url)
        defer { store.close() }
        if let reason = store.opening.readOnly {
            throw CommandFailure("\(database.url.path) cannot be written now: \(reason)")
        }
        let salvage: Salvage
        do {
            salvage = try Salvage.copy(from: source, into: store.database)
        } catch {
            throw CommandFailure("\(error)")
        }
        try Output.printJSONLine([
            "hitsCopied": salvage.hitsCopied,
            "hitsAlreadyThere": salvage.hitsAlreadyThere,
            "visitorsCopied": salvage.visitorsCopied,
            "visitorsAlreadyThere": salvage.visitorsAlreadyThere,
            "decisionsCopied": salvage.decisionsCopied,
            "decisionsAlreadyThere": salvage.decisionsAlreadyThere,
            "rowsRefused": salvage.rowsRefused,
            "unreadableStretches": salvage.unreadableStretches,
        ])
    }
}
