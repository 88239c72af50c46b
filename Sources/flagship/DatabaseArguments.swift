import ArgumentParser
import FlagshipStore
import Foundation

/// `--db PATH`: the store file a command works on.
struct DatabaseArguments: ParsableArguments {
    @Option(
        name: .customLong("db"),
        help: ArgumentHelp("The store file, usually <cache dir>/flagship-<envId>.sqlite.", valueName: "path")
    )
    var path: String

    /// The file as an absolute path, which is how every message names it.
    var url: URL { URL(fileURLWithPath: path).standardizedFileURL }

    /// Opens the existing file read-only: nothing in it is changed, and a file that is not a
    /// Flagship store is refused. A store the SDK would refuse although this build can read it
    /// (its schema steps are not this build's) is opened with a warning saying so.
    func openForInspection() throws -> FlagshipDatabase {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CommandFailure("no store at \(url.path) (`flagship db migrate --db \(path)` creates one)")
        }
        guard !isDirectory.boolValue else {
            throw CommandFailure("\(url.path) is a directory, not a store file")
        }
        let store = try FlagshipDatabase.openForInspection(at: url)
        if let permissions = FilePermissions.openToOthers(atPath: url.path) {
            Output.warn("other users can read or change \(url.path) (mode \(FilePermissions.octal(permissions))), which holds visitor data: chmod 600 it")
        }
        do {
            try store.database.withConnection { try Migrator().checkHistory($0, path: url.path) }
        } catch {
            Output.warn("the SDK will not use this store (it runs with an in-memory cache instead): \(error)")
        }
        return store
    }
}
