import Foundation
import XCTest

/// What a new user meets runs as written: every shell example of the README and of the DocC
/// articles runs offline (`OfflineSandbox`) with the built `flagship` on `PATH`, in an empty
/// directory, and prints the output it shows; Getting started builds as shown from a checkout
/// whose folder is not named like the package; every SQLite query runs on a store the tool made;
/// the tool's table names exactly the commands and options of `--help`; the `inspect --json`
/// example has the keys and schema version `inspect` prints. The Swift blocks are built and run
/// by `DocumentationSnippetTests`.
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

    func testEveryShellExampleOfTheDocumentationRunsOfflineAsWrittenAndPrintsWhatItShows() throws {
        try XCTSkipUnless(OfflineSandbox.isAvailable, "no network namespace can be made here (unshare)")
        let documents = try Documentation.documents()
        let binDirectory = try BuiltProducts.directory().path
        var run = 0
        for document in documents {
            for block in ReadmeExamples.shellBlocks(document.text) where !block.isBuildCommand {
                run += 1
                let place = "\(document.path) line \(block.line)"
                let directory = root.appendingPathComponent("block-\(run)", isDirectory: true)
                let home = root.appendingPathComponent("home-\(run)", isDirectory: true)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
                let script = directory.appendingPathComponent(".example.sh")
                // The block as written, under `set -euo pipefail` so that a failing line fails it.
                try ("set -euo pipefail\n" + block.text + "\n").write(to: script, atomically: true, encoding: .utf8)
                let result = try OfflineSandbox.run("/bin/bash", [script.path], in: directory,
                                                    environment: ["PATH": "\(binDirectory):/usr/local/bin:/usr/bin:/bin", "HOME": home.path,
                                                                  "LANG": "C.UTF-8"],
                                                    timeout: 60)
                XCTAssertEqual(result.status, 0, "\(place): the example failed:\n\(block.text)\nstdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
                let printed = result.stdout.split(separator: "\n").compactMap { Self.jsonValue(String($0)) }
                for expected in block.expectedJSON {
                    guard let value = Self.jsonValue(expected) else {
                        XCTFail("\(place): the output it shows is not JSON: \(expected)")
                        continue
                    }
                    XCTAssertTrue(printed.contains(value), "\(place) shows \(expected), but it printed:\n\(result.stdout)")
                }
                if let shown = block.shownOutput {
                    XCTAssertTrue(ReadmeExamples.output(result.stdout, shows: shown),
                                  "\(place): the output shown after it is not what it printed:\n\(result.stdout)")
                }
            }
        }
        XCTAssertGreaterThanOrEqual(run, 5, "the documentation's shell examples were not found")
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
            It prints:
            ```text
            KEY  TYPES
            a    string
            ```
            """
        let blocks = ReadmeExamples.shellBlocks(text)
        XCTAssertEqual(blocks.map(\.line), [3, 6])
        XCTAssertEqual(blocks.map(\.isBuildCommand), [true, false])
        XCTAssertEqual(blocks[1].expectedJSON, [#"{"a": 1, "b": [2]}"#])
        XCTAssertEqual(blocks[1].text, "flagship eval --x 1\n# {\"a\": 1,\n#  \"b\": [2]}     (one line)\necho done")
        XCTAssertEqual(blocks[0].shownOutput, nil)
        XCTAssertEqual(blocks[1].shownOutput, ["KEY  TYPES", "a    string"])
        XCTAssertTrue(ReadmeExamples.output("first\nKEY  TYPES   \na    string\ndone\n", shows: ["KEY  TYPES", "a    string"]))
        XCTAssertFalse(ReadmeExamples.output("KEY  TYPES\nb    string\n", shows: ["KEY  TYPES", "a    string"]))
    }

    // MARK: Getting started

    /// The README's `Package.swift` and the `main.swift` after it, written as shown into a new
    /// package, with the one change a reader makes: the path to the checkout, here a folder named
    /// unlike the package. It builds. So does every other manifest of the documentation.
    func testGettingStartedBuildsAsShownFromACheckoutWhoseFolderIsNotNamedLikeThePackage() throws {
        let blocks = Documentation.blocks(try Self.readme())
        guard let manifestIndex = blocks.firstIndex(where: { $0.info == "swift Package.swift" }),
              let main = blocks[(manifestIndex + 1)...].first(where: { $0.info == "swift" }) else {
            return XCTFail("the README shows no Package.swift followed by a Swift block")
        }
        XCTAssertTrue(main.text.contains("Flagship.sharedInstance.close()"), "Getting started ends by closing the SDK")
        XCTAssertTrue(main.text.contains("until: .committed"), "top-level code sends with the form that has no synchronous twin")
        let manifests = try Documentation.documents().flatMap { document in
            Documentation.fenced(document.text, info: "swift Package.swift").map { (document.path, $0) }
        }
        XCTAssertGreaterThanOrEqual(manifests.count, 2, "the README and Getting started show a Package.swift")
        guard let swift = SnippetPackage.swiftExecutable() else { return XCTFail("no swift executable") }

        // Beside the snippet package, through its checkout (a folder not named like the package),
        // and built in its scratch folder with its settings: the repository's modules, which the
        // snippet package compiled the same way (no trait), are not compiled a second time. Kept
        // between runs, so that a second run rebuilds nothing.
        let snippets = SnippetBuild.package
        let workspace = snippets.root.appendingPathComponent("getting-started", isDirectory: true)
        try snippets.linkCheckout()
        XCTAssertNotEqual(snippets.checkoutLink.lastPathComponent, SnippetPackage.packageName)
        for (number, (path, manifest)) in manifests.enumerated() {
            let shownPath = #"path: "../flagship-swift-linux""#
            XCTAssertTrue(manifest.text.contains(shownPath), "\(path) line \(manifest.line): the manifest names its checkout \(shownPath)")
            XCTAssertTrue(manifest.text.contains(#".package(name: "flagship-swift-linux", path:"#),
                          "\(path) line \(manifest.line): the path dependency names the package, so that any folder name works")
            let app = workspace.appendingPathComponent("app-\(number)/MyService", isDirectory: true)
            let sources = app.appendingPathComponent("Sources/MyService")
            try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
            try Self.writeIfChanged(manifest.text.replacingOccurrences(of: shownPath, with: #"path: "../../../\#(snippets.checkoutLink.lastPathComponent)""#),
                                    to: app.appendingPathComponent("Package.swift"))
            try Self.writeIfChanged(main.text + "\n", to: sources.appendingPathComponent("main.swift"))
            try snippets.pinDependencies(of: app)
            let (status, output) = try SnippetPackage.run(swift, ["build", "--package-path", app.path, "--scratch-path", snippets.scratch.path]
                                                                  + SnippetPackage.buildSettings)
            XCTAssertEqual(status, 0, "\(path) line \(manifest.line), with README line \(main.line) as main.swift, does not build:\n"
                + output.split(separator: "\n").filter { $0.contains("error") || $0.contains("warning: ") }.joined(separator: "\n"))
            // "An app that asks for `Flagship` alone resolves swift-log only": what SwiftPM
            // resolved for this app, read back from it.
            if manifest.text.contains(#".product(name: "Flagship", package: "flagship-swift-linux")"#),
               !manifest.text.contains("traits:") {
                let (shown, json) = try SnippetPackage.run(swift, ["package", "--package-path", app.path, "--scratch-path", snippets.scratch.path,
                                                                   "show-dependencies", "--format", "json"])
                XCTAssertEqual(shown, 0, json)
                // A path dependency's identity is its folder's name: the checkout's link here.
                XCTAssertEqual(try Self.dependencyIdentities(json), [snippets.checkoutLink.lastPathComponent.lowercased(), "swift-log"],
                               "\(path) line \(manifest.line): an app of Flagship alone resolves swift-log only")
            }
        }
    }

    /// The identities of every package `swift package show-dependencies --format json` lists
    /// under the root, at any depth.
    private static func dependencyIdentities(_ output: String) throws -> Set<String> {
        guard let start = output.firstIndex(of: "{"),
              let root = try JSONSerialization.jsonObject(with: Data(output[start...].utf8)) as? [String: Any] else {
            throw Failure(description: "show-dependencies printed no JSON: \(output)")
        }
        var found: Set<String> = []
        func walk(_ node: [String: Any]) {
            for dependency in node["dependencies"] as? [[String: Any]] ?? [] {
                if let identity = dependency["identity"] as? String { found.insert(identity) }
                walk(dependency)
            }
        }
        walk(root)
        return found
    }

    private struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static func writeIfChanged(_ text: String, to url: URL) throws {
        if let existing = try? String(contentsOf: url, encoding: .utf8), existing == text { return }
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    // MARK: The SQL recipes

    /// Every `sql` block of the documentation that reads the SQLite store runs on a store
    /// `flagship demo seed` made (PostgreSQL's recipes, which name the `flagship` schema, run in
    /// `FlagshipPostgresTests`).
    func testEverySQLiteRecipeOfTheDocumentationRunsOnAStore() throws {
        let sqlite3 = URL(fileURLWithPath: "/usr/bin/sqlite3")
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: sqlite3.path), "no sqlite3 shell (make deps installs it)")
        let cache = root.appendingPathComponent("cache")
        _ = try runFlagship(["demo", "seed", "--cache-dir", cache.path])
        let store = cache.appendingPathComponent("flagship-demo_env.sqlite")
        var recipes = 0
        for document in try Documentation.documents() {
            for block in Documentation.fenced(document.text, info: "sql") where !block.text.contains("flagship.") {
                recipes += 1
                let recipe = root.appendingPathComponent("recipe-\(recipes).sql")
                try block.text.write(to: recipe, atomically: true, encoding: .utf8)
                let (status, output) = try SnippetPackage.run(sqlite3, ["-bail", "-readonly", store.path, ".read \(recipe.path)"])
                XCTAssertEqual(status, 0, "\(document.path) line \(block.line): sqlite3 refused it:\n\(output)")
                XCTAssertFalse(output.contains("Error"), "\(document.path) line \(block.line):\n\(output)")
            }
        }
        XCTAssertGreaterThanOrEqual(recipes, 3, "the documentation's SQLite recipes were not found")
    }

    // MARK: The tool's table

    func testTheToolTableNamesExactlyTheCommandsAndOptionsOfTheHelp() throws {
        let table = ReadmeExamples.toolTable(try Self.article("CommandLineTool.md"))
        XCTAssertFalse(table.isEmpty, "no `flagship …` rows found in the tool table of CommandLineTool.md")
        var helped: [String: Set<String>] = [:]
        try collectHelp(path: [], into: &helped)
        XCTAssertEqual(Set(table.keys), Set(helped.keys), "commands in the article's table vs `flagship --help`")
        for (command, options) in helped.sorted(by: { $0.key < $1.key }) {
            guard let documented = table[command] else { continue }
            XCTAssertEqual(documented.subtracting(options).sorted(), [], "`flagship \(command)`: in the article's table, not in --help")
            XCTAssertEqual(options.subtracting(documented).sorted(), [], "`flagship \(command)`: in --help, not in the article's table")
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
        let examples = try Documentation.documents().flatMap { Documentation.fenced($0.text, info: "json") }
        guard let example = examples.first(where: { $0.text.contains("schemaVersion") }),
              let shown = Self.jsonValue(example.text) as? [String: Any] else {
            return XCTFail("no `inspect --json` example in the documentation")
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

    private static func article(_ name: String) throws -> String {
        try String(contentsOf: SharedData.packageRoot.appendingPathComponent("Sources/Flagship/Flagship.docc/\(name)"), encoding: .utf8)
    }

    private static func jsonValue(_ text: String) -> NSObject? {
        guard let data = text.data(using: .utf8) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) as? NSObject
    }

    /// `flagship arguments`, which must exit 0; its stdout.
    private func runFlagship(_ arguments: [String]) throws -> String {
        let executable = try BuiltProducts.directory().appendingPathComponent("flagship")
        let (status, output) = try SnippetPackage.run(executable, arguments)
        XCTAssertEqual(status, 0, "flagship \(arguments.joined(separator: " ")):\n\(output)")
        return output
    }
}

/// The documentation's shell examples and its tool table, read as a reader reads them.
enum ReadmeExamples {
    struct Block: Equatable {
        /// The document line of the block's first line.
        let line: Int
        let text: String
        /// The lines of the `text` block that comes next in the document, before any other block:
        /// what the example prints, shown.
        var shownOutput: [String]?

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

    /// The `sh` blocks, each with the output shown after it.
    static func shellBlocks(_ markdown: String) -> [Block] {
        let blocks = Documentation.blocks(markdown)
        return blocks.enumerated().filter { $0.element.info == "sh" }.map { index, block in
            let next = blocks.indices.contains(index + 1) ? blocks[index + 1] : nil
            let shown = next.flatMap { $0.info == "text" ? $0.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) : nil }
            return Block(line: block.line, text: block.text, shownOutput: shown)
        }
    }

    /// Whether `output` holds the `shown` lines one after the other (trailing spaces aside).
    static func output(_ output: String, shows shown: [String]) -> Bool {
        let printed = output.split(separator: "\n", omittingEmptySubsequences: false).map { String($0.reversed().drop { $0 == " " }.reversed()) }
        let expected = shown.map { String($0.reversed().drop { $0 == " " }.reversed()) }
        guard !expected.isEmpty, printed.count >= expected.count else { return false }
        return (0...(printed.count - expected.count)).contains { Array(printed[$0..<($0 + expected.count)]) == expected }
    }

    /// The rows of the tool's table (the article on the tool): command path → the options its
    /// first cell names.
    static func toolTable(_ markdown: String) -> [String: Set<String>] {
        var rows: [String: Set<String>] = [:]
        for line in markdown.split(separator: "\n").map(String.init) {
            guard line.hasPrefix("| `flagship ") else { continue }
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
