import Foundation
import XCTest

/// What a new user meets first runs as written: every shell example of the README runs offline
/// (`OfflineSandbox`) with the built `flagship` on `PATH`, in an empty directory, and prints the
/// output it shows; the `Package.swift` it shows resolves; the tool's table names exactly the
/// commands and options of `--help`; the `inspect --json` example has the keys and schema version
/// `inspect` prints. The Swift blocks are built and run by `ReferenceSnippetTests`.
final class HostileReadmeTests: XCTestCase {
    private var root = URL(fileURLWithPath: "/nonexistent")

    override func setUpWithError() throws {
        try super.setUpWithError()
        root = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: root)
        try super.tearDownWithError()
    }

    // MARK: Shell examples

    func testEveryShellExampleOfTheReadmeRunsOfflineAsWrittenAndPrintsWhatItShows() throws {
        try XCTSkipUnless(OfflineSandbox.isAvailable, "no network namespace can be made here (unshare)")
        let blocks = ReadmeExamples.shellBlocks(try Self.readme())
        let runnable = blocks.filter { !$0.isBuildCommand }
        XCTAssertGreaterThanOrEqual(runnable.count, 3, "the README's shell examples were not found")
        let binDirectory = try Self.productsDirectory().path
        for block in runnable {
            let directory = root.appendingPathComponent("block-\(block.line)", isDirectory: true)
            let home = root.appendingPathComponent("home-\(block.line)", isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            let script = directory.appendingPathComponent(".example.sh")
            // The block as written, under `set -euo pipefail` so that a failing line fails it.
            try ("set -euo pipefail\n" + block.text + "\n").write(to: script, atomically: true, encoding: .utf8)
            let result = try OfflineSandbox.run("/bin/bash", [script.path], in: directory,
                                                environment: ["PATH": "\(binDirectory):/usr/local/bin:/usr/bin:/bin", "HOME": home.path,
                                                              "LANG": "C.UTF-8"],
                                                timeout: 60)
            XCTAssertEqual(result.status, 0, "README line \(block.line): the example failed:\n\(block.text)\nstdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
            let printed = result.stdout.split(separator: "\n").compactMap { Self.jsonValue(String($0)) }
            for expected in block.expectedJSON {
                guard let value = Self.jsonValue(expected) else {
                    XCTFail("README line \(block.line): the output it shows is not JSON: \(expected)")
                    continue
                }
                XCTAssertTrue(printed.contains(value), "README line \(block.line) shows \(expected), but it printed:\n\(result.stdout)")
            }
        }
    }

    func testTheExtractorFindsBlocksTheirShownOutputAndTellsBuildCommandsApart() {
        let text = """
            intro
            ```sh
            make demo
            ```
            ```sh
            flagship eval --x 1
            # {"a": 1,
            #  "b": [2]}     (one line)
            echo done
            ```
            """
        let blocks = ReadmeExamples.shellBlocks(text)
        XCTAssertEqual(blocks.map(\.line), [3, 6])
        XCTAssertEqual(blocks.map(\.isBuildCommand), [true, false])
        XCTAssertEqual(blocks[1].expectedJSON, [#"{"a": 1, "b": [2]}"#])
        XCTAssertEqual(blocks[1].text, "flagship eval --x 1\n# {\"a\": 1,\n#  \"b\": [2]}     (one line)\necho done")
    }

    // MARK: The manifest

    func testThePackageManifestOfTheReadmeResolvesAgainstThisCheckout() throws {
        let manifests = ReadmeExamples.fenced(try Self.readme(), info: "swift Package.swift")
        XCTAssertEqual(manifests.count, 1, "the README shows one Package.swift")
        guard let manifest = manifests.first else { return }
        XCTAssertTrue(manifest.text.contains(#".package(url: ""#) && manifest.text.contains(".package(path: "),
                      "the README names both ways to depend on the package")
        XCTAssertTrue(manifest.text.contains(#".product(name: "Flagship", package: "flagship-swift-linux")"#))
        // Its `.package(path: "../flagship-swift-linux")`, as written, names this checkout.
        let app = root.appendingPathComponent("MyService", isDirectory: true)
        try FileManager.default.createDirectory(at: app.appendingPathComponent("Sources/MyService"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("flagship-swift-linux"),
                                                   withDestinationURL: SharedData.packageRoot)
        try manifest.text.write(to: app.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try "import Flagship\nprint(FSConfigBuilder().build().timeout)\n"
            .write(to: app.appendingPathComponent("Sources/MyService/main.swift"), atomically: true, encoding: .utf8)
        guard let swift = SnippetPackage.swiftExecutable() else { return XCTFail("no swift executable") }
        let (status, output) = try SnippetPackage.run(swift, ["package", "--package-path", app.path,
                                                              "--scratch-path", root.appendingPathComponent("scratch").path,
                                                              "describe", "--type", "json"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains(#""name" : "MyService""#), output)
    }

    // MARK: The tool's table

    func testTheToolTableNamesExactlyTheCommandsAndOptionsOfTheHelp() throws {
        let table = ReadmeExamples.toolTable(try Self.readme())
        XCTAssertFalse(table.isEmpty, "no `flagship …` rows found in the README's tool table")
        var helped: [String: Set<String>] = [:]
        try collectHelp(path: [], into: &helped)
        XCTAssertEqual(Set(table.keys), Set(helped.keys), "commands in the README's table vs `flagship --help`")
        for (command, options) in helped.sorted(by: { $0.key < $1.key }) {
            guard let documented = table[command] else { continue }
            XCTAssertEqual(documented.subtracting(options).sorted(), [], "`flagship \(command)`: in the README's table, not in --help")
            XCTAssertEqual(options.subtracting(documented).sorted(), [], "`flagship \(command)`: in --help, not in the README's table")
        }
    }

    /// `flagship <path> --help`, and its subcommands' (`help` aside), down to the leaves.
    private func collectHelp(path: [String], into helped: inout [String: Set<String>]) throws {
        let help = try runFlagship(path + ["--help"])
        let subcommands = ReadmeExamples.subcommands(inHelp: help).filter { $0 != "help" }
        if subcommands.isEmpty {
            helped[path.joined(separator: " ")] = ReadmeExamples.options(inHelp: help)
        }
        for subcommand in subcommands {
            try collectHelp(path: path + [subcommand], into: &helped)
        }
    }

    // MARK: The inspect example

    func testTheInspectJSONExampleHasTheKeysAndSchemaVersionInspectPrints() throws {
        let readme = try Self.readme()
        guard let example = ReadmeExamples.fenced(readme, info: "json").first(where: { $0.text.contains("schemaVersion") }),
              let shown = Self.jsonValue(example.text) as? [String: Any] else {
            return XCTFail("no `inspect --json` example in the README")
        }
        let cache = root.appendingPathComponent("cache")
        _ = try runFlagship(["demo", "seed", "--cache-dir", cache.path])
        let printed = try runFlagship(["db", "inspect", "--json", "--db", cache.appendingPathComponent("flagship-demo_env.sqlite").path])
        guard let actual = Self.jsonValue(printed) as? [String: Any] else {
            return XCTFail("inspect --json printed no JSON object: \(printed)")
        }
        XCTAssertEqual(shown["schemaVersion"] as? Int, actual["schemaVersion"] as? Int, "the example's schema version")
        XCTAssertEqual(Self.keyPaths(shown), Self.keyPaths(actual), "the example's keys vs what inspect prints")
    }

    /// Every key of every object, as dotted paths (array elements under `[]`).
    private static func keyPaths(_ value: Any, prefix: String = "") -> Set<String> {
        if let object = value as? [String: Any] {
            return object.reduce(into: Set<String>()) { paths, entry in
                let path = prefix.isEmpty ? entry.key : prefix + "." + entry.key
                // `byType` is keyed by the hit types a store happens to hold.
                paths.insert(path)
                if entry.key != "byType" { paths.formUnion(keyPaths(entry.value, prefix: path)) }
            }
        }
        if let array = value as? [Any] {
            return array.reduce(into: Set<String>()) { $0.formUnion(keyPaths($1, prefix: prefix + "[]")) }
        }
        return []
    }

    // MARK: Support

    private static func readme() throws -> String {
        try String(contentsOf: SharedData.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
    }

    private static func jsonValue(_ text: String) -> NSObject? {
        guard let data = text.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) as? NSObject
    }

    /// Where `swift build` put the products: the test runner's own directory.
    private static func productsDirectory() throws -> URL {
        let candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
            + Bundle.allBundles.filter { $0.bundlePath.hasSuffix(".xctest") }.map { $0.bundleURL.deletingLastPathComponent() }
        guard let directory = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("flagship").path) }) else {
            throw OfflineSandbox.Failure(description: "no flagship executable in \(candidates.map(\.path)); build it (swift build --build-tests)")
        }
        return directory
    }

    /// `flagship arguments`, which must exit 0; its stdout.
    private func runFlagship(_ arguments: [String]) throws -> String {
        let executable = try Self.productsDirectory().appendingPathComponent("flagship")
        let (status, output) = try SnippetPackage.run(executable, arguments)
        XCTAssertEqual(status, 0, "flagship \(arguments.joined(separator: " ")):\n\(output)")
        return output
    }
}

/// The README's fenced blocks and its tool table, read as a reader reads them.
enum ReadmeExamples {
    struct Block: Equatable {
        /// The document line of the block's first line.
        let line: Int
        let text: String

        /// A block of `make …` lines: the build's own commands (`make test` is what CI runs, `make
        /// torture` the long runs), not examples of the tool, so not run by the example test.
        var isBuildCommand: Bool {
            text.split(separator: "\n").contains { $0.hasPrefix("make ") }
        }

        /// The outputs it shows: a run of `# {…` comment lines after a command, joined, without a
        /// trailing `(one line)` note.
        var expectedJSON: [String] {
            var shown: [String] = []
            var current: [String]?
            for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
                if line.hasPrefix("#") {
                    let body = line.dropFirst().trimmingCharacters(in: .whitespaces)
                    if current == nil, body.hasPrefix("{") || body.hasPrefix("[") {
                        current = [body]
                    } else if current != nil {
                        current?.append(body)
                    }
                } else if let finished = current {
                    shown.append(Self.joined(finished))
                    current = nil
                }
            }
            if let finished = current { shown.append(Self.joined(finished)) }
            return shown
        }

        private static func joined(_ lines: [String]) -> String {
            var text = lines.joined(separator: " ")
            if let note = text.range(of: "(one line)", options: .backwards) { text = String(text[..<note.lowerBound]) }
            return text.trimmingCharacters(in: .whitespaces)
        }
    }

    static func shellBlocks(_ markdown: String) -> [Block] {
        fenced(markdown, info: "sh")
    }

    /// The blocks fenced with exactly `info` after the backticks.
    static func fenced(_ markdown: String, info: String) -> [Block] {
        var blocks: [Block] = []
        var open: (line: Int, lines: [String])?
        for (index, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let current = open {
                if trimmed == "```" {
                    blocks.append(Block(line: current.line, text: current.lines.joined(separator: "\n")))
                    open = nil
                } else {
                    open = (current.line, current.lines + [String(line)])
                }
            } else if trimmed.hasPrefix("```"), trimmed.dropFirst(3).trimmingCharacters(in: .whitespaces) == info {
                open = (index + 2, [])
            }
        }
        return blocks
    }

    /// The rows of the section "The `flagship` tool": command path → the options its first cell names.
    static func toolTable(_ markdown: String) -> [String: Set<String>] {
        var rows: [String: Set<String>] = [:]
        var inSection = false
        for line in markdown.split(separator: "\n").map(String.init) {
            if line.hasPrefix("## ") { inSection = line.contains("The `flagship` tool") }
            guard inSection, line.hasPrefix("| `flagship ") else { continue }
            let cell = line.dropFirst(3).prefix { $0 != "`" }
            let words = cell.split(separator: " ").dropFirst()
            let path = words.prefix { $0.first?.isLetter == true && $0.allSatisfy { $0.isLowercase || $0 == "-" } }
            rows[path.joined(separator: " "), default: []].formUnion(longOptions(in: String(cell)))
        }
        return rows
    }

    /// The options an ArgumentParser help defines: `--name` at the start of its option lines.
    static func options(inHelp help: String) -> Set<String> {
        var options = Set<String>()
        for line in help.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("-") else { continue }
            // The definition ends where two spaces start its description.
            let definition = trimmed.range(of: "  ").map { trimmed[..<$0.lowerBound] } ?? Substring(trimmed)
            options.formUnion(longOptions(in: String(definition)))
        }
        return options.subtracting(["--help", "--version"])
    }

    /// The names listed under SUBCOMMANDS.
    static func subcommands(inHelp help: String) -> [String] {
        guard let start = help.range(of: "SUBCOMMANDS:") else { return [] }
        return help[start.upperBound...].split(separator: "\n").compactMap { line in
            guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
            return line.split(separator: " ").first.map { String($0).replacingOccurrences(of: "(default)", with: "") }
        }.filter { !$0.isEmpty && $0 != "See" }
    }

    private static func longOptions(in text: String) -> Set<String> {
        var found = Set<String>()
        var rest = Substring(text)
        while let range = rest.range(of: "--") {
            let name = rest[range.upperBound...].prefix { $0.isLowercase || $0.isNumber || $0 == "-" }
            if let first = name.first, first.isLowercase { found.insert("--" + name) }
            rest = rest[range.upperBound...]
        }
        return found
    }
}
