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
    /// Flagship store is refused.
    func openForInspection() throws -> FlagshipDatabase {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CommandFailure("no store at \(url.path) (`flagship db migrate --db \(path)` creates one)")
        }
        guard !isDirectory.boolValue else {
            throw CommandFailure("\(url.path) is a directory, not a store file")
        }
        return try FlagshipDatabase.openForInspection(at: url)
    }
}
