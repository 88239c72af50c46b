import ArgumentParser
import FlagshipStore
import Foundation

/// Where a command takes the API key from: `--api-key`, `--api-key-file`, or the
/// `FLAGSHIP_API_KEY` environment variable, in that order. The argument list is visible to every
/// user of the machine (`ps`); the variable and the file are not.
struct APIKeyArguments: ParsableArguments {
    static let environmentVariable = "FLAGSHIP_API_KEY"

    @Option(help: ArgumentHelp(
        "The API key. Any user of the machine can read it in `ps`: prefer the FLAGSHIP_API_KEY environment variable or --api-key-file.",
        valueName: "key"))
    var apiKey: String?
    @Option(help: ArgumentHelp(
        "A file holding the API key on one line (a trailing newline is ignored); a warning if other users can read it. "
            + "Without --api-key or --api-key-file, the key is taken from FLAGSHIP_API_KEY.",
        valueName: "path"))
    var apiKeyFile: String?

    func validate() throws {
        if apiKey != nil && apiKeyFile != nil {
            throw ValidationError("give one of --api-key and --api-key-file")
        }
        if apiKey == nil && apiKeyFile == nil && Self.environmentKey == nil {
            throw ValidationError("an API key is needed: set \(Self.environmentVariable), or give --api-key-file or --api-key")
        }
        if apiKey?.isEmpty == true { throw ValidationError("--api-key is empty") }
    }

    private static var environmentKey: String? {
        ProcessInfo.processInfo.environment[environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The key, read from where it was given. Warns on stderr about a key file others can read.
    func key() throws -> String {
        if let apiKey { return apiKey }
        if let apiKeyFile { return try Self.read(apiKeyFile) }
        guard let key = Self.environmentKey else {
            throw CommandFailure("an API key is needed: set \(Self.environmentVariable), or give --api-key-file or --api-key")
        }
        return key
    }

    /// The file's one line, its line ending dropped. Never prints the key.
    private static func read(_ path: String) throws -> String {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CommandFailure("the API key file \(path) cannot be read: \(Output.reason(readingFile: error))")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CommandFailure("the API key file \(path) is not UTF-8 text")
        }
        var key = Substring(text)
        while let last = key.last, last == "\n" || last == "\r\n" || last == "\r" { key.removeLast() }
        guard !key.isEmpty else { throw CommandFailure("the API key file \(path) is empty") }
        guard !key.contains(where: \.isNewline) else {
            throw CommandFailure("the API key file \(path) must hold the key alone, on one line")
        }
        if let mode = FilePermissions.openToOthers(atPath: path) {
            Output.warn("other users can read or change the API key file \(path) (mode \(FilePermissions.octal(mode))): chmod 600 it")
        }
        return String(key)
    }
}
