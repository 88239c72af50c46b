import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Every Swift example of the Flagship Swift reference builds against this SDK unchanged, and so
/// does every Swift block of the README.
///
/// The references are read from `$FLAGSHIP_REFERENCE_DIR`, else `$FLAGSHIP_SHARED_DIR/reference`,
/// else `../shared/reference` beside the package:
/// - `000_…`: the current reference (markdown). Its `` ```swift `` fences, and its `` ```groovy ``
///   ones, which hold Swift too.
/// - `001_…`: the 3.2 edition, a web page converted to plain text. Its Swift runs are found by
///   the rules of `SnippetExtraction.plainText`; its Objective-C runs are dropped (out of scope on
///   Linux, as the README says).
/// - `002`–`004` document other projects' SDKs (a `@Flag` property-wrapper library with its
///   `FlagsLoader`, LaunchDarkly's Objective-C client, Spotify's Confidence): not this SDK's API,
///   so out of scope and not built.
///
/// Each snippet becomes an executable target, once in Swift 6 mode and once in Swift 5 mode, of one
/// throwaway package built together (`SnippetPackage`); what the harness may add to a snippet is
/// stated in `SnippetHarness`. A snippet must build without error in both modes (warnings, such as
/// the 3.2 calls' deprecations, are allowed), unless it is in `expectedFailures`, where it must
/// still fail. The README's blocks build as they are, in Swift 6 mode with warnings as errors.
final class ReferenceSnippetTests: XCTestCase {
    /// A snippet that is not valid Swift as written, and why. Matched by its document and a piece
    /// of its text, so a renumbering of the reference does not detach it; it must fail with an
    /// error that says `error`, so a failure of another kind is not taken for it.
    struct ExpectedFailure {
        let document: String
        let containing: String
        let error: String
        let reason: String

        func matches(_ snippet: DocumentSnippet) -> Bool {
            snippet.document == document && snippet.text.contains(containing)
        }
    }

    static let expectedFailures: [ExpectedFailure] = [
        ExpectedFailure(document: "000", containing: #"hasConsented:true")"#, error: "unterminated string literal",
                        reason: #"`newVisitor(visitorId:"visitor_1",hasConsented:true")`: a stray quote opens a string that never ends"#),
    ]

    // MARK: The build, shared by the two tests

    private struct Outcome {
        let targets: [SnippetTarget]
        let report: SnippetBuildReport
        /// The references' snippets, or why they could not be read (a skip, or a failure under CI).
        let references: Result<[DocumentSnippet], any Error>
    }

    private static let outcome = Locked<Result<Outcome, any Error>?>(nil)

    private static func sharedOutcome() throws -> Outcome {
        try outcome.withLock { stored in
            if let stored { return try stored.get() }
            let result = Result { try buildEverything() }
            stored = result
            return try result.get()
        }
    }

    private static func buildEverything() throws -> Outcome {
        let references = Result { () throws -> [DocumentSnippet] in
            let directory = try referenceDirectory()
            return SnippetExtraction.fenced(try document("000_", in: directory), languages: ["swift", "groovy"], document: "000")
                + SnippetExtraction.plainText(try document("001_", in: directory), document: "001")
        }
        let snippets = (try? references.get()) ?? []
        let readme = try String(contentsOf: SharedData.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let readmeBlocks = SnippetExtraction.fenced(readme, languages: ["swift"], document: "README")

        var targets: [SnippetTarget] = []
        for snippet in snippets {
            let prepared = SnippetHarness.prepare(snippet)
            targets += [SnippetMode.swift6, .swift5].map { SnippetTarget(snippet: snippet, mode: $0, prepared: prepared) }
        }
        for block in readmeBlocks {
            let asWritten = SnippetHarness.Prepared(main: block.text + "\n", context: nil, linesBefore: 0, rules: [])
            targets.append(SnippetTarget(snippet: block, mode: .swift6NoWarnings, prepared: asWritten))
        }
        let report = try SnippetPackage(repository: SharedData.packageRoot).build(targets)
        return Outcome(targets: targets, report: report, references: references)
    }

    private static func referenceDirectory() throws -> URL {
        let environment = ProcessInfo.processInfo.environment
        let directory: URL
        if let path = environment["FLAGSHIP_REFERENCE_DIR"], !path.isEmpty {
            directory = URL(fileURLWithPath: path, isDirectory: true)
        } else if let shared = environment["FLAGSHIP_SHARED_DIR"], !shared.isEmpty {
            directory = URL(fileURLWithPath: shared, isDirectory: true).appendingPathComponent("reference", isDirectory: true)
        } else {
            directory = SharedData.besidePackage("reference")
        }
        let marker = (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.first { $0.hasPrefix("000_") } ?? "000_*.txt"
        return try SharedData.require(directory, holding: marker, what: "The Flagship Swift reference",
                                      setting: "FLAGSHIP_REFERENCE_DIR to the folder of 000_*.txt and 001_*.txt")
    }

    private static func document(_ prefix: String, in directory: URL) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(prefix) }.sorted()
        guard let name = names.first else {
            throw MissingSharedData(description: "No \(prefix)* file in \(directory.path)")
        }
        return try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }

    // MARK: Tests

    func testEverySwiftSnippetOfTheReferencesBuilds() throws {
        let outcome = try Self.sharedOutcome()
        _ = try outcome.references.get()
        if let problem = outcome.report.problem { return XCTFail(problem) }
        let targets = outcome.targets.filter { $0.snippet.document != "README" }

        print(Self.table(targets, outcome.report))
        var failures: [String] = []
        for target in targets {
            let built = outcome.report.built.contains(target.name)
            if let expected = Self.expectedFailures.first(where: { $0.matches(target.snippet) }) {
                if built {
                    failures.append("\(target.snippet.name) [\(target.mode.label)] builds but is listed as failing (\(expected.reason)): take it off the list")
                } else if !outcome.report.errors(of: target).contains(where: { $0.message.contains(expected.error) }) {
                    failures.append("\(target.snippet.name) [\(target.mode.label)] fails, but not with \"\(expected.error)\":\n" + outcome.report.describe(target))
                }
            } else if !built {
                failures.append("\(target.snippet.name) [\(target.mode.label)] does not build:\n" + outcome.report.describe(target))
            }
        }
        for expected in Self.expectedFailures where !targets.contains(where: { expected.matches($0.snippet) }) {
            failures.append("No snippet of \(expected.document) contains \(expected.containing): the expected failure \"\(expected.reason)\" is stale")
        }
        for document in ["000", "001"] where !targets.contains(where: { $0.snippet.document == document }) {
            failures.append("No Swift snippet found in \(document): the extractor or the document changed")
        }
        if !failures.isEmpty {
            XCTFail(failures.joined(separator: "\n"))
            print(Self.listing(targets))
        }
    }

    func testEverySwiftBlockOfTheReadmeBuildsWithoutWarnings() throws {
        let outcome = try Self.sharedOutcome()
        if let problem = outcome.report.problem { return XCTFail(problem) }
        let blocks = outcome.targets.filter { $0.snippet.document == "README" }

        XCTAssertFalse(blocks.isEmpty, "the README has no ```swift block")
        print(Self.table(blocks, outcome.report))
        for block in blocks where !outcome.report.built.contains(block.name) {
            XCTFail("README block \(block.snippet.name), \(block.snippet.summary), does not build without warnings:\n"
                + outcome.report.describe(block, severities: ["error", "warning"]))
        }
    }

    /// Built, each README block runs to its end with exit status 0, offline: in a network
    /// namespace of its own (a request to Flagship's hosts fails at once, the local server on
    /// loopback works), with an empty home directory for its store.
    func testEverySwiftBlockOfTheReadmeRunsOffline() throws {
        try XCTSkipUnless(OfflineSandbox.isAvailable, "no network namespace can be made here (unshare)")
        let outcome = try Self.sharedOutcome()
        if let problem = outcome.report.problem { return XCTFail(problem) }
        let blocks = outcome.targets.filter { $0.snippet.document == "README" }
        XCTAssertFalse(blocks.isEmpty, "the README has no ```swift block")
        let scratch = SnippetPackage(repository: SharedData.packageRoot).scratch
        for block in blocks where outcome.report.built.contains(block.name) {
            let home = FileManager.default.temporaryDirectory.appendingPathComponent("readme-run-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: home) }
            let binary = scratch.appendingPathComponent("debug").appendingPathComponent(block.name)
            let result = try OfflineSandbox.run(binary.path, in: home, environment: ["HOME": home.path, "PATH": "/usr/bin:/bin"], timeout: 60)
            XCTAssertEqual(result.status, 0, "README block \(block.snippet.name), \(block.snippet.summary), failed when run offline:\n"
                + "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        }
    }

    // MARK: The extractor and the harness, on text of their own

    func testFencedSnippetsAreTheSwiftAndGroovyFencesFromTheLineAfterTheFence() {
        let markdown = "# Title\n```swift\nlet a = 1\n```\n```objectivec\n[a b];\n```\n```groovy\nlet b = 2\nlet c = 3\n```\n"

        let snippets = SnippetExtraction.fenced(markdown, languages: ["swift", "groovy"], document: "000")

        XCTAssertEqual(snippets.map(\.line), [3, 9])
        XCTAssertEqual(snippets.map(\.text), ["let a = 1", "let b = 2\nlet c = 3"])
    }

    func testAPlainTextRunKeepsItsSwiftAndDropsObjectiveCProseTablesAndSignatures() {
        let text = """
            Getting flags
            func getFlag(key:String)->FSFlag
            Parameter | Type |
            import Flagship
            // Create the visitor
            let visitor1 = Flagship.sharedInstance.newVisitor("visitor_1")
            .build()
            visitor1.fetchFlags {
            // Fetched
            }
            /// Create visitor
            FSVisitor * visitor1 = [[Flagship sharedInstance] build];
            itemhit.price = @20;
            Report a Flag exposition
            visitor1.updateContext("isVip", true)
            """

        let snippets = SnippetExtraction.plainText(text, document: "001")

        XCTAssertEqual(snippets.map(\.line), [4])
        XCTAssertEqual(snippets.first?.text, text.split(separator: "\n")[3...9].joined(separator: "\n"))
    }

    func testSampleOutputStaysWithTheSwiftBeforeItAndIsCutByTheHarness() throws {
        let text = """
            .withOnVisitorExposed { fromFlag, visitorExposed in
            print(fromFlag.toJson() ?? "")
            }
            // Representation of VisitorExposed
            {
            "id": "visitor_1"
            }
            // Inside the callBack
            FlagshipConfig * conf = [[FSConfigBuilder alloc] init];
            // Representation of VisitorExposed
            {
            "id": "visitor_1"
            }
            The callback is triggered once.
            """

        let snippets = SnippetExtraction.plainText(text, document: "001")
        let prepared = SnippetHarness.prepare(try XCTUnwrap(snippets.first))

        XCTAssertEqual(snippets.map(\.line), [1])
        XCTAssertEqual(prepared.main, "FSConfigBuilder()\n" + text.split(separator: "\n")[0...2].joined(separator: "\n") + "\n")
        XCTAssertEqual(prepared.linesBefore, 1)
        XCTAssertEqual(prepared.rules, ["c", "b", "a: import Flagship"])
    }

    func testTheHarnessDeclaresOnlyTheNamesASnippetUsesWithoutDeclaringThem() {
        let snippet = DocumentSnippet(document: "000", number: 1, line: 1, text: """
            // Ask the user first: "visitor1" is declared below
            let visitor1 = Flagship.sharedInstance.newVisitor(visitorId: "v", hasConsented: true).build()
            visitor.fetchFlags { print(visitor1.getFlag(key: "user").exists()) }
            let cache = FSCacheManager(visitorCache, nil)
            func save(_ data: Data) {}
            """)
        let complete = DocumentSnippet(document: "000", number: 2, line: 1, text: "import Flagship\nFlagship.sharedInstance.close()")

        let prepared = SnippetHarness.prepare(snippet)

        XCTAssertEqual(prepared.main, snippet.text + "\n", "the snippet's text is unchanged")
        XCTAssertEqual(prepared.rules, ["a: visitor, import Flagship, import Foundation"])
        XCTAssertEqual(prepared.context?.split(separator: "\n").dropFirst(), [
            "@_exported import Flagship", "@_exported import Foundation",
            #"let visitor = Flagship.sharedInstance.newVisitor(visitorId: "visitor", hasConsented: true).build()"#,
        ])
        XCTAssertEqual(SnippetHarness.prepare(complete), SnippetHarness.Prepared(
            main: complete.text + "\n", context: nil, linesBefore: 0, rules: []))
    }

    func testCompilerDiagnosticsAreReadOncePerPlace() {
        let output = """
            [3/9] Compiling Ref000_01_Swift6 main.swift
            /p/Sources/Ref000_01_Swift6/main.swift:4:9: error: cannot find 'x' in scope
             4 | let y = x
            /p/Sources/Ref000_01_Swift6/main.swift:4:9: error: cannot find 'x' in scope
            /p/Sources/Ref000_01_Swift6/main.swift:7:1: warning: 'value(visitorExposed:)' is deprecated: use value(defaultValue:visitorExposed:)
            error: emit-module command failed with exit code 1
            """

        XCTAssertEqual(SnippetPackage.diagnostics(in: output), [
            SnippetDiagnostic(file: "/p/Sources/Ref000_01_Swift6/main.swift", line: 4, severity: "error", message: "cannot find 'x' in scope"),
            SnippetDiagnostic(file: "/p/Sources/Ref000_01_Swift6/main.swift", line: 7, severity: "warning",
                              message: "'value(visitorExposed:)' is deprecated: use value(defaultValue:visitorExposed:)"),
        ])
    }

    // MARK: Reporting

    /// Compiled / total per document and mode, and the expected failures.
    private static func table(_ targets: [SnippetTarget], _ report: SnippetBuildReport) -> String {
        var lines = ["Snippets that build (compiled / total):"]
        var seen: [(document: String, mode: SnippetMode)] = []
        for target in targets where !seen.contains(where: { $0.document == target.snippet.document && $0.mode == target.mode }) {
            seen.append((target.snippet.document, target.mode))
        }
        for (document, mode) in seen {
            let group = targets.filter { $0.snippet.document == document && $0.mode == mode }
            let built = group.filter { report.built.contains($0.name) }.count
            lines.append("  \(document.padding(toLength: 7, withPad: " ", startingAt: 0)) \(mode.label): \(built) / \(group.count)")
        }
        for target in targets where target.mode != .swift5 {
            if let expected = expectedFailures.first(where: { $0.matches(target.snippet) }) {
                lines.append("  expected to fail: \(target.snippet.name): \(expected.reason)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// What the extractor found, with the harness rules each snippet needed.
    private static func listing(_ targets: [SnippetTarget]) -> String {
        var lines = ["Snippets found:"]
        for target in targets where target.mode == .swift6 {
            let rules = target.prepared.rules.isEmpty ? "" : "  [rules \(target.prepared.rules.joined(separator: "; "))]"
            lines.append("  \(target.snippet.name): \(target.snippet.summary)\(rules)")
        }
        return lines.joined(separator: "\n")
    }
}
