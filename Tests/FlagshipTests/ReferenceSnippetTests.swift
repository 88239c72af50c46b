import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Every Swift example of the Flagship Swift reference builds against this SDK unchanged.
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
/// Each snippet becomes an executable target, once in Swift 6 mode and once in Swift 5 mode, of the
/// one snippet package that also holds the documentation's blocks (`SnippetBuild`); what the
/// harness may add to a snippet is stated in `SnippetHarness`. A snippet must build without error
/// in both modes (warnings, such as the 3.2 calls' deprecations, are allowed), unless it is in
/// `expectedFailures`: those stay out of the package (a module that fails would stop the build) and
/// must still fail when the compiler parses them alone.
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

    // MARK: Tests

    func testEverySwiftSnippetOfTheReferencesBuilds() throws {
        let outcome = try SnippetBuild.shared()
        _ = try outcome.references.get()
        if let problem = outcome.report.problem { return XCTFail(problem) }
        let targets = outcome.referenceTargets

        print(Self.table(targets, outcome))
        var failures: [String] = []
        for target in targets {
            if let expected = Self.expectedFailures.first(where: { $0.matches(target.snippet) }) {
                let errors = outcome.expectedFailureErrors[target.name, default: []]
                if !errors.contains(where: { $0.contains(expected.error) }) {
                    failures.append("\(target.snippet.name) [\(target.mode.label)] is listed as failing with \"\(expected.error)\" (\(expected.reason)), "
                        + "but the compiler says: \(errors.isEmpty ? "nothing" : errors.joined(separator: "; ")); take it off the list")
                }
            } else if !outcome.report.built.contains(target.name) {
                failures.append("\(target.snippet.name) [\(target.mode.label)] does not build:\n" + outcome.report.describe(target.name) { file, line in
                    file == "main.swift" ? "\(target.snippet.document) line \(target.documentLine(ofMainLine: line))" : "\(file):\(line)"
                })
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
    private static func table(_ targets: [SnippetTarget], _ outcome: SnippetBuild.Outcome) -> String {
        let report = outcome.report
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
        lines.append("  (the snippet package: \(report.built.count) modules in \(report.builds) build(s), \(Int(report.seconds)) s)")
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

/// One reference snippet in one language mode: an executable module of the snippet package.
struct SnippetTarget: Sendable {
    let snippet: DocumentSnippet
    let mode: SnippetMode
    let prepared: SnippetHarness.Prepared

    /// A module name: `Ref000_07_Swift6`.
    var name: String {
        "Ref\(snippet.document)_\(String(format: "%02d", snippet.number))_\(mode.rawValue)"
    }

    /// The document line of a `main.swift` line.
    func documentLine(ofMainLine line: Int) -> Int {
        snippet.line + line - 1 - prepared.linesBefore
    }

    var module: SnippetModule {
        var files = ["main.swift": prepared.main]
        if let context = prepared.context { files["Context.swift"] = context }
        var module = SnippetModule(name: name, kind: .executable, mode: mode, files: files)
        module.linksRuntime = module.imports.subtracting(SnippetPackage.toolchainModules) == ["Flagship"]
        return module
    }
}

/// The one build of the snippet package: the references' snippets (`ReferenceSnippetTests`) and
/// the documentation's Swift blocks (`DocumentationSnippetTests`), made once per test run.
enum SnippetBuild {
    struct Outcome: Sendable {
        /// The references' snippets, or why they could not be read (a skip, or a failure under CI).
        let references: Result<[DocumentSnippet], any Error>
        let referenceTargets: [SnippetTarget]
        /// The compiler's errors for each expected failure, parsed alone.
        let expectedFailureErrors: [String: [String]]
        let documentation: [DocumentationSnippet]
        let report: SnippetBuildReport
    }

    private static let outcome = Locked<Result<Outcome, any Error>?>(nil)

    static var package: SnippetPackage { SnippetPackage(repository: SharedData.packageRoot) }

    static func shared() throws -> Outcome {
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
        var targets: [SnippetTarget] = []
        for snippet in (try? references.get()) ?? [] {
            let prepared = SnippetHarness.prepare(snippet)
            targets += [SnippetMode.swift6, .swift5].map { SnippetTarget(snippet: snippet, mode: $0, prepared: prepared) }
        }
        let expected = targets.filter { target in ReferenceSnippetTests.expectedFailures.contains { $0.matches(target.snippet) } }
        var expectedErrors: [String: [String]] = [:]
        for target in expected {
            expectedErrors[target.name] = try parseErrors(target)
        }
        let documentation = DocumentationSnippet.all(in: try Documentation.documents())
        let modules = targets.filter { target in !expected.contains { $0.name == target.name } }.map(\.module)
            + documentation.compactMap(\.module)
        let report = try package.build(modules)
        return Outcome(references: references, referenceTargets: targets, expectedFailureErrors: expectedErrors,
                       documentation: documentation, report: report)
    }

    /// The errors of `swiftc -parse` on a snippet alone: a snippet that is not Swift fails there,
    /// with no module to import.
    private static func parseErrors(_ target: SnippetTarget) throws -> [String] {
        guard let swiftc = SnippetPackage.swiftExecutable()?.deletingLastPathComponent().appendingPathComponent("swiftc") else {
            throw SnippetPackageError(description: "no swiftc beside swift")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("snippet-parse-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let main = directory.appendingPathComponent("main.swift")
        try target.prepared.main.write(to: main, atomically: true, encoding: .utf8)
        let version = target.mode == .swift5 ? "5" : "6"
        let (_, output) = try SnippetPackage.run(swiftc, ["-parse", "-swift-version", version, main.path])
        return SnippetPackage.diagnostics(in: output).filter { $0.severity == "error" }.map(\.message)
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
}
