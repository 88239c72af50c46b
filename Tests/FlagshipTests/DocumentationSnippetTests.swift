import Foundation
import XCTest

/// Every Swift block of the README and of the DocC articles compiles as a reader pastes it, in
/// Swift 6 mode with warnings as errors, in the one snippet package (`SnippetBuild`); every program
/// among them runs offline; a block that is a test file is one, verbatim, under `Tests/`. How each
/// block is compiled is `DocumentationSnippet.Kind`.
final class DocumentationSnippetTests: XCTestCase {
    func testEverySwiftBlockOfTheDocumentationBuildsWithoutWarnings() throws {
        let outcome = try SnippetBuild.shared()
        if let problem = outcome.report.problem { return XCTFail(problem) }
        let snippets = outcome.documentation
        XCTAssertGreaterThanOrEqual(snippets.filter { $0.document.path == "README.md" }.count, 2, "the README's Swift blocks were not found")
        XCTAssertGreaterThanOrEqual(Set(snippets.map(\.document.path)).count, 10, "the articles' Swift blocks were not found")
        print("Documentation blocks: " + [DocumentationSnippet.Kind.program, .declarations, .fragment, .testFile, .example].map { kind in
            "\(snippets.filter { $0.kind == kind }.count) \(kind)"
        }.joined(separator: ", ") + " (the snippet package: \(outcome.report.builds) build(s), \(Int(outcome.report.seconds)) s)")
        for snippet in snippets {
            guard let module = snippet.module else { continue }
            let unknown = SnippetPackage.unknownImports(of: module)
            XCTAssertTrue(unknown.isEmpty, "\(snippet.place) imports \(unknown.sorted()), which no product of this package or its dependencies provides")
            guard !outcome.report.built.contains(module.name) else { continue }
            XCTFail("\(snippet.place) does not build without warnings:\n" + outcome.report.describe(module.name, severities: ["error", "warning"]) { file, line in
                file.hasSuffix(".swift") ? "\(snippet.document.path) line \(snippet.documentLine(ofFileLine: line))" : "\(file):\(line)"
            })
        }
    }

    /// Built, each program runs to its end with exit status 0, offline: in a network namespace of
    /// its own (a request to Flagship's hosts fails at once, the local server on loopback works),
    /// with an empty home directory for its store.
    func testEveryProgramOfTheDocumentationRunsOffline() throws {
        try XCTSkipUnless(OfflineSandbox.isAvailable, "no network namespace can be made here (unshare)")
        let outcome = try SnippetBuild.shared()
        if let problem = outcome.report.problem { return XCTFail(problem) }
        let programs = outcome.documentation.filter { $0.kind == .program }
        XCTAssertFalse(programs.isEmpty, "the documentation has no program")
        for snippet in programs where outcome.report.built.contains(snippet.moduleName) {
            let result = try Self.runOffline(SnippetBuild.package.executable(snippet.moduleName))
            XCTAssertEqual(result.status, 0, "\(snippet.place) failed when run offline:\nstdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        }
    }

    /// Declarations that import XCTest or an integration are compiled by the main build: a file
    /// under `Tests/` holds them verbatim.
    func testEveryTestFileOfTheDocumentationIsATestOfThePackageVerbatim() throws {
        let testFiles = try Self.swiftFiles(under: SharedData.packageRoot.appendingPathComponent("Tests"))
        let blocks = DocumentationSnippet.all(in: try Documentation.documents()).filter { $0.kind == .testFile }
        XCTAssertFalse(blocks.isEmpty, "no test file in the documentation (Testing.md shows one)")
        for snippet in blocks {
            XCTAssertTrue(testFiles.contains { $0.text.contains(snippet.block.text) },
                          "\(snippet.place) imports XCTest or an integration: a file under Tests/ must hold it verbatim, for the main build to compile it")
        }
    }

    /// A program that imports an integration is the `main.swift` of an executable of the main build,
    /// verbatim, under `Examples/Documentation/<name>/`; built (`make build` declares it), it runs
    /// to its end offline, as the snippet package's programs do.
    func testEveryProgramThatImportsAnIntegrationIsAnExampleOfTheMainBuildAndRunsOffline() throws {
        let blocks = DocumentationSnippet.all(in: try Documentation.documents()).filter { $0.kind == .example }
        XCTAssertFalse(blocks.isEmpty, "no program of the documentation imports an integration (RunningInAServer.md shows one)")
        let examples = SharedData.packageRoot.appendingPathComponent("Examples/Documentation")
        let programs = try FileManager.default.contentsOfDirectory(atPath: examples.path).sorted().compactMap { name -> (name: String, text: String)? in
            let main = examples.appendingPathComponent(name).appendingPathComponent("main.swift")
            return (try? String(contentsOf: main, encoding: .utf8)).map { (name, $0) }
        }
        let manifest = try String(contentsOf: SharedData.packageRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        for snippet in blocks {
            guard let program = programs.first(where: { $0.text.contains(snippet.block.text) }) else {
                XCTFail("\(snippet.place) is a program that imports an integration: an Examples/Documentation/<name>/main.swift must hold it verbatim, for the main build to compile it")
                continue
            }
            XCTAssertTrue(manifest.contains(#"path: "Examples/Documentation/\#(program.name)""#),
                          "Package.swift does not build Examples/Documentation/\(program.name)")
            let binary = try BuiltProducts.directory().appendingPathComponent(program.name)
            guard FileManager.default.isExecutableFile(atPath: binary.path) else {
                let notice = "\(snippet.place): no \(program.name) built beside the tests; the build with FLAGSHIP_EXAMPLE=1 makes it (make build)"
                if ProcessInfo.processInfo.environment["FLAGSHIP_REQUIRE_EXAMPLES"] == "1" { XCTFail(notice); continue }
                throw XCTSkip(notice)
            }
            try XCTSkipUnless(OfflineSandbox.isAvailable, "no network namespace can be made here (unshare)")
            let result = try Self.runOffline(binary)
            XCTAssertEqual(result.status, 0, "\(snippet.place) (\(program.name)) failed when run offline:\nstdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        }
    }

    // MARK: How a block is read

    func testABlockIsAProgramWhenItHasStatementsAtTheTopLevelAndDeclarationsOtherwise() {
        func kind(_ text: String) -> DocumentationSnippet.Kind {
            DocumentationSnippet(document: .init(path: "X.md", text: text), block: .init(line: 1, info: "swift", text: text), number: 1).kind
        }
        XCTAssertEqual(kind("import Flagship\n\nlet config = FSConfigBuilder()\n    .Bucketing()\n    .build()"), .declarations)
        XCTAssertEqual(kind("import Flagship\n\n@MainActor\nfunc f(\n    a: Int\n) {\n    print(a)\n}\nenum E { case a }"), .declarations)
        XCTAssertEqual(kind("import Flagship\n\nlet visitor = await Flagship.sharedInstance.newVisitor(visitorId: \"a\", hasConsented: true)\n    .buildAsync()"), .program)
        XCTAssertEqual(kind("import Flagship\nlet s = \"do {\" // print(x)\nFlagship.sharedInstance.close()"), .program)
        XCTAssertEqual(kind("import Flagship\nlet s = \"print(\\(1))\" // a string and a comment are not code"), .declarations)
        XCTAssertEqual(kind("let config = FSConfigBuilder().build()"), .fragment)
        XCTAssertEqual(kind("import XCTest\nfinal class T: XCTestCase {}"), .testFile)
        XCTAssertEqual(kind("import Flagship\nimport FlagshipMetrics\n\nlet config = FSConfigBuilder()\n    .withInstrumentation(FlagshipMetrics())\n    .build()"), .testFile)
        XCTAssertEqual(kind("import Flagship\nimport ServiceLifecycle\n\nlet group = ServiceGroup(services: [], logger: logger)\ntry await group.run()"), .example)
        XCTAssertEqual(kind("import Flagship\n// import FlagshipPostgres, in a comment\nlet config = FSConfigBuilder().build()"), .declarations)
    }

    func testAFragmentIsWrappedInAFunctionThatUsesTheConstantsItDeclares() throws {
        let text = "let config = FSConfigBuilder()\n    .build()\nvar count = 1"
        let snippet = DocumentationSnippet(document: .init(path: "Sources/Flagship/Flagship.docc/X.md", text: text),
                                           block: .init(line: 10, info: "swift", text: text), number: 3)
        let module = try XCTUnwrap(snippet.module)

        XCTAssertEqual(module.name, "Doc_X_03")
        XCTAssertEqual(module.kind, .library)
        XCTAssertEqual(module.files["Snippet.swift"], """
            import Flagship
            import Foundation

            @MainActor
            func fragment() async throws {
            let config = FSConfigBuilder()
                .build()
            var count = 1
            _ = config
            _ = count
            }

            """)
        XCTAssertEqual(snippet.documentLine(ofFileLine: 6), 10, "the fragment's first line")
    }

    func testTheDocumentsAreTheReadmeAndEveryArticleOfTheCatalogs() throws {
        let paths = try Documentation.documents().map(\.path)
        XCTAssertEqual(paths.first, "README.md")
        XCTAssertTrue(paths.contains("Sources/Flagship/Flagship.docc/TheStore.md"), "\(paths)")
        XCTAssertTrue(paths.contains("Sources/FlagshipPostgres/FlagshipPostgres.docc/FlagshipPostgres.md"), "\(paths)")
    }

    // MARK: Support

    /// Runs a program offline, with an empty home directory for its store.
    private static func runOffline(_ binary: URL) throws -> (status: Int32, stdout: String, stderr: String) {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("doc-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let result = try OfflineSandbox.run(binary.path, in: home, environment: ["HOME": home.path, "PATH": "/usr/bin:/bin"], timeout: 60)
        return (result.status, result.stdout, result.stderr)
    }

    private static func swiftFiles(under directory: URL) throws -> [(path: String, text: String)] {
        var files: [(path: String, text: String)] = []
        let enumerator = FileManager.default.enumerator(atPath: directory.path)
        while let file = enumerator?.nextObject() as? String {
            guard file.hasSuffix(".swift") else { continue }
            files.append((file, try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)))
        }
        return files
    }
}
