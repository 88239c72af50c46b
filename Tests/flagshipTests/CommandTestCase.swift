import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

/// A test of the `flagship` binary against real store files in a temporary directory of its own.
class CommandTestCase: XCTestCase {
    /// Where the store files live; nothing else is written there.
    private(set) var storeDirectory = URL(fileURLWithPath: "/nonexistent")
    private var root = URL(fileURLWithPath: "/nonexistent")
    /// Where the commands' stdout and stderr are captured, apart from the store files.
    var outputDirectory: URL { root.appendingPathComponent("output") }

    /// The store file most tests use.
    var storeFile: URL { storeDirectory.appendingPathComponent("flagship-env.sqlite") }

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-cli-tests-\(UUID().uuidString)")
        storeDirectory = root.appendingPathComponent("store")
        try FileManager.default.createDirectory(at: storeDirectory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outputDirectory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: root)
        try super.tearDownWithError()
    }

    func flagship(_ arguments: String...) throws -> FlagshipExecutable.Result {
        try FlagshipExecutable.run(arguments, outputDirectory: outputDirectory)
    }

    /// Opens (creating) `storeFile`, lets `body` fill it, and closes it.
    func withStore(_ body: (FlagshipDatabase) throws -> Void) throws {
        let store = try FlagshipDatabase.open(at: storeFile)
        defer { store.close() }
        try body(store)
    }

    /// The names in the store directory.
    func storeDirectoryListing() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: storeDirectory.path).sorted()
    }

    /// Runs `flagship arguments`, which must fail, print nothing on stdout and leave every file
    /// of the store directory as it was (none added, none changed); returns what it printed on stderr.
    func stderrOfFailureLeavingStoreUntouched(_ arguments: String..., file: StaticString = #filePath, line: UInt = #line) throws -> String {
        try stderrOfFailureLeavingStoreUntouched(arguments, file: file, line: line)
    }

    func stderrOfFailureLeavingStoreUntouched(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let before = try storeDirectoryContents()

        let result = try FlagshipExecutable.run(arguments, outputDirectory: outputDirectory)

        XCTAssertNotEqual(result.status, 0, "exit status", file: file, line: line)
        XCTAssertEqual(result.stdout, "", "stdout", file: file, line: line)
        XCTAssertEqual(try storeDirectoryContents(), before, "store directory", file: file, line: line)
        return result.stderr
    }

    private func storeDirectoryContents() throws -> [String: Data] {
        var contents: [String: Data] = [:]
        for name in try storeDirectoryListing() {
            contents[name] = try Data(contentsOf: storeDirectory.appendingPathComponent(name))
        }
        return contents
    }

    /// JSON text with sorted keys and no spacing choices: two documents with the same values compare equal.
    func canonicalJSON(_ value: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
    }

    func parseJSON(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    /// Writes bytes that are not a database at `url` and returns them.
    @discardableResult
    func writeGarbage(at url: URL) throws -> Data {
        let garbage = Data((0..<4_096).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) })
        try garbage.write(to: url)
        return garbage
    }
}

/// A command test with a local server (env `env`, key `key`) serving the sample bucketing file,
/// started before each test and stopped after it.
class SampleServerCommandTestCase: CommandTestCase {
    private(set) var server: LocalFlagshipServer!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = LocalFlagshipServer(envId: "env", apiKey: "key", bucketingFile: .sample())
        try server.start()
    }

    override func tearDownWithError() throws {
        server.stop()
        try super.tearDownWithError()
    }
}
