import Foundation

/// The user documentation: the README and every article of the DocC catalogs beside the sources.
enum Documentation {
    struct Document: Sendable {
        /// Relative to the repository: `README.md`, `Sources/Flagship/Flagship.docc/TheStore.md`.
        let path: String
        let text: String

        /// A short name for module names and messages: `README`, `TheStore`.
        var name: String { ((path as NSString).lastPathComponent as NSString).deletingPathExtension }
    }

    static func documents(in repository: URL = SharedData.packageRoot) throws -> [Document] {
        var paths = ["README.md"]
        let sources = repository.appendingPathComponent("Sources")
        for target in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted() {
            let folder = sources.appendingPathComponent(target)
            for catalog in (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.sorted() ?? [] where catalog.hasSuffix(".docc") {
                let enumerator = FileManager.default.enumerator(atPath: folder.appendingPathComponent(catalog).path)
                while let file = enumerator?.nextObject() as? String {
                    if file.hasSuffix(".md") { paths.append("Sources/\(target)/\(catalog)/\(file)") }
                }
            }
        }
        return try paths.sorted { ($0 == "README.md" ? "" : $0) < ($1 == "README.md" ? "" : $1) }.map {
            Document(path: $0, text: try String(contentsOf: repository.appendingPathComponent($0), encoding: .utf8))
        }
    }

    /// A fenced block of a document.
    struct Block: Equatable, Sendable {
        /// The document line of the block's first line.
        let line: Int
        /// What follows the backticks: `swift`, `sh`, `swift Package.swift`.
        let info: String
        let text: String
    }

    /// Every fenced block, in order.
    static func blocks(_ markdown: String) -> [Block] {
        var blocks: [Block] = []
        var open: (line: Int, info: String, lines: [String])?
        for (index, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let current = open {
                if trimmed == "```" {
                    blocks.append(Block(line: current.line, info: current.info, text: current.lines.joined(separator: "\n")))
                    open = nil
                } else {
                    open = (current.line, current.info, current.lines + [String(line)])
                }
            } else if trimmed.hasPrefix("```") {
                open = (index + 2, String(trimmed.dropFirst(3)).trimmingCharacters(in: .whitespaces), [])
            }
        }
        return blocks
    }

    /// The blocks fenced with exactly `info`.
    static func fenced(_ markdown: String, info: String) -> [Block] {
        blocks(markdown).filter { $0.info == info }
    }
}

/// A Swift block of the documentation, and how the snippet package compiles it. The block's text
/// goes into its module unchanged, except for a fragment:
///
/// - **program**: it imports and has statements at the top level, as a `main.swift` does. An
///   executable module; the tests run it offline.
/// - **declarations**: it imports and holds only declarations (functions, types, constants). A
///   library module of its own: compiled, not linked.
/// - **fragment**: it imports nothing. It goes into a function of a library module that imports
///   Flagship and Foundation, with `_ = name` after it for each constant it declares (unused in a
///   function body, they would warn, where a reader's file would use them).
/// - **test file**: declarations that import XCTest or an integration (`mainBuildModules`). The
///   main build compiles it: a file under `Tests/` holds it verbatim (a test target of the product
///   it shows, run by `make test`). The main build already compiles SwiftNIO, swift-configuration
///   and the others, which the snippet package would compile a second time.
/// - **example**: a program that imports an integration. The main build compiles it too: the
///   `main.swift` of an executable under `Examples/Documentation/` holds it verbatim (declared in
///   `Package.swift` for `make build`), and the tests run that executable offline.
struct DocumentationSnippet: Sendable {
    enum Kind: Equatable, Sendable { case program, declarations, fragment, testFile, example }

    /// What a block may import only when the main build compiles it: XCTest, and the integration
    /// products with the packages they bring.
    static let mainBuildModules = [
        "XCTest", "FlagshipPostgres", "FlagshipServiceLifecycle", "FlagshipMetrics", "FlagshipTracing", "FlagshipConfiguration",
        "FlagshipAsyncHTTPClient", "PostgresNIO", "ServiceLifecycle", "Metrics", "Tracing", "Configuration", "AsyncHTTPClient",
        // This package's system library over libsqlite3 (not a product): the app's own SQLite
        // connection in HitsAndDelivery's program.
        "CSQLite",
    ]

    let document: Documentation.Document
    let block: Documentation.Block
    /// 1-based, among the document's Swift blocks.
    let number: Int

    var kind: Kind {
        let code = SwiftSource.codeOnly(block.text)
        if !code.split(separator: "\n").contains(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("import ") }) {
            return .fragment
        }
        let isProgram = SwiftSource.topLevelItems(code).contains(where: \.isStatement)
        if Self.mainBuildModules.contains(where: { SwiftSource.imports(code, $0) }) {
            return isProgram ? .example : .testFile
        }
        return isProgram ? .program : .declarations
    }

    /// `Doc_TheStore_03`.
    var moduleName: String {
        "Doc_\(document.name.filter { $0.isLetter || $0.isNumber })_\(String(format: "%02d", number))"
    }

    /// `Sources/Flagship/Flagship.docc/TheStore.md line 120`.
    var place: String { "\(document.path) line \(block.line)" }

    /// The document line of a line of the module's file.
    func documentLine(ofFileLine line: Int) -> Int {
        block.line + line - 1 - (kind == .fragment ? Self.fragmentLinesBefore : 0)
    }

    /// The lines a fragment's file has before the fragment.
    static let fragmentLinesBefore = 5

    var module: SnippetModule? {
        switch kind {
        case .testFile, .example:
            return nil
        case .program:
            return SnippetModule(name: moduleName, kind: .executable, mode: .swift6NoWarnings, files: ["main.swift": block.text + "\n"])
        case .declarations:
            return SnippetModule(name: moduleName, kind: .library, mode: .swift6NoWarnings, files: ["Snippet.swift": block.text + "\n"])
        case .fragment:
            let code = SwiftSource.codeOnly(block.text)
            let declared = SwiftSource.topLevelItems(code).compactMap(\.declaredConstant)
            let text = """
                import Flagship
                import Foundation

                @MainActor
                func fragment() async throws {
                \(block.text)
                \(declared.map { "_ = \($0)" }.joined(separator: "\n"))
                }

                """
            return SnippetModule(name: moduleName, kind: .library, mode: .swift6NoWarnings, files: ["Snippet.swift": text])
        }
    }

    /// Every Swift block of the documentation (`swift` fences; `swift Package.swift` ones are
    /// manifests, checked by `HostileReadmeTests`).
    static func all(in documents: [Documentation.Document]) -> [DocumentationSnippet] {
        documents.flatMap { document in
            Documentation.fenced(document.text, info: "swift").enumerated().map {
                DocumentationSnippet(document: document, block: $0.element, number: $0.offset + 1)
            }
        }
    }
}

extension SwiftSource {
    /// A declaration or statement at the top level of a file.
    struct TopLevelItem: Equatable {
        /// Its first word, attributes and modifiers skipped: `let`, `func`, `print(…`.
        let keyword: String
        let text: String

        private static let declarations: Set<String> = [
            "import", "func", "struct", "class", "enum", "extension", "protocol", "actor", "typealias", "let", "var",
        ]

        /// Whether a library file cannot hold it: an expression, or a constant whose initial
        /// value awaits or throws (a global's initializer can do neither).
        var isStatement: Bool {
            guard Self.declarations.contains(keyword) else { return true }
            guard keyword == "let" || keyword == "var" else { return false }
            return SwiftSource.uses(text, "await") || SwiftSource.uses(text, "try")
        }

        /// The name of a `let` or `var` it declares (`let x = …`, `var x: T`).
        var declaredConstant: String? {
            guard keyword == "let" || keyword == "var" else { return nil }
            let afterKeyword = text.components(separatedBy: keyword + " ").dropFirst().first ?? ""
            let name = afterKeyword.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            return name.isEmpty ? nil : String(name)
        }
    }

    private static let modifiers: Set<String> = [
        "public", "private", "fileprivate", "internal", "package", "final", "nonisolated", "static", "indirect", "open",
    ]

    /// The top-level items of `code` (comments and strings already blanked): a new item starts on a
    /// line at depth 0 whose previous line did not leave the item open (an open bracket, a trailing
    /// `=`, `,` or `.`) and which does not continue it (a line starting with `.`, `)`, `]` or `}`).
    static func topLevelItems(_ code: String) -> [TopLevelItem] {
        var items: [(keyword: String, lines: [String])] = []
        var depth = 0
        var open = false
        for line in code.split(separator: "\n").map(String.init) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            let continues = depth > 0 || open || [".", ")", "]", "}"].contains(where: trimmed.hasPrefix)
            let words = trimmed.split(whereSeparator: { $0 == " " || $0 == "(" }).map(String.init)
            // Attributes and modifiers alone on a line (`@MainActor`) belong to the next line's item.
            let keyword = words.first { !$0.hasPrefix("@") && !modifiers.contains($0) } ?? ""
            if continues, !items.isEmpty {
                items[items.count - 1].lines.append(trimmed)
            } else if let last = items.last, last.keyword.isEmpty {
                items[items.count - 1] = (keyword, last.lines + [trimmed])
            } else {
                items.append((keyword, [trimmed]))
            }
            for character in trimmed {
                if "([{".contains(character) { depth += 1 }
                if ")]}".contains(character) { depth -= 1 }
            }
            open = depth > 0 || ["=", ",", ".", "(", "[", "{"].contains(where: trimmed.hasSuffix)
        }
        return items.map { TopLevelItem(keyword: $0.keyword, text: $0.lines.joined(separator: "\n")) }
    }
}
