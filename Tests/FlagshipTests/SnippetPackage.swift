import Foundation

/// The language mode a snippet module builds in.
enum SnippetMode: String, CaseIterable, Sendable {
    case swift6 = "Swift6"
    case swift5 = "Swift5"
    /// Swift 6 with `-warnings-as-errors` (the README's and the articles' blocks).
    case swift6NoWarnings = "Swift6NoWarnings"

    var label: String {
        switch self {
        case .swift6: return "Swift 6"
        case .swift5: return "Swift 5"
        case .swift6NoWarnings: return "Swift 6, warnings as errors"
        }
    }

    fileprivate var manifestSettings: String {
        switch self {
        case .swift6: return ""
        case .swift5: return ", swiftSettings: [.swiftLanguageMode(.v5)]"
        case .swift6NoWarnings: return #", swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]"#
        }
    }
}

/// One module of the snippet package: an executable target (a program, with its `main.swift`) or
/// a library target (declarations only: compiled, never linked).
struct SnippetModule: Sendable {
    enum Kind: Sendable { case executable, library }

    let name: String
    let kind: Kind
    let mode: SnippetMode
    /// File name → contents.
    let files: [String: String]
    /// An executable that imports Flagship alone can link it from the package's shared library
    /// (`SnippetPackage.runtimeDirectory`) instead of linking a copy of its objects: the link is
    /// a fraction of the time, and it is the link that dominates a small program's build.
    var linksRuntime = false

    /// The modules its files import (`import X`, `@testable import X`, `@_exported import X`).
    var imports: Set<String> {
        var found = Set<String>()
        for text in files.values {
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ").filter { !$0.hasPrefix("@") }
                if words.count == 2, words[0] == "import" { found.insert(String(words[1])) }
            }
        }
        return found
    }
}

/// A compiler diagnostic, from a build's output.
struct SnippetDiagnostic: Hashable, Sendable {
    let file: String
    let line: Int
    let severity: String
    let message: String
}

/// Every module of the snippet package: which built, and what the compiler said of each.
struct SnippetBuildReport: Sendable {
    var built: Set<String> = []
    var diagnostics: [String: [SnippetDiagnostic]] = [:]
    /// Set when the build failed for a reason no snippet explains (the package itself, resolution).
    var problem: String?
    /// How many times `swift build` ran (1 when every module built), and how long they took.
    var builds = 0
    var seconds = 0.0

    /// `file:line: severity: message` lines of a module; `place` maps a file and line to where the
    /// snippet is written (a document's line).
    func describe(_ module: String, severities: Set<String> = ["error"],
                  place: (_ file: String, _ line: Int) -> String) -> String {
        diagnostics[module, default: []].filter { severities.contains($0.severity) }.map { diagnostic in
            "    \(place((diagnostic.file as NSString).lastPathComponent, diagnostic.line)): \(diagnostic.severity): \(diagnostic.message)"
        }.joined(separator: "\n")
    }
}

/// One throwaway package holding every snippet as a module of its own, built with one `swift
/// build`. It depends on this repository the way Getting started tells an app to: by path, through
/// a folder named unlike the package (`.build-snippets/flagship-checkout`, a symbolic link), with
/// `name: "flagship-swift-linux"` and no trait, as an app that wants the core products has it. It
/// lives in `<repo>/.build-snippets` (ignored by git like every `.build-*`) and is kept between
/// runs: files are rewritten only when their contents change, so a re-run rebuilds only what
/// changed.
///
/// `swift build` stops scheduling work at the first module that fails, so a failed build is run
/// again without the modules that failed, until it succeeds or fails for a reason no snippet
/// explains. When every snippet builds, the package is built once.
struct SnippetPackage {
    /// The name an app's manifest gives the dependency, whatever its folder is called.
    static let packageName = "flagship-swift-linux"

    /// Where each module a snippet imports comes from: a product of this repository (`package`
    /// nil) or of one of its dependencies. The integrations are not here: a block that imports one
    /// is compiled by the main build (`DocumentationSnippet.mainBuildModules`), so that this
    /// package builds the core products and swift-log only.
    static let products: [String: (product: String, package: String?)] = [
        "Flagship": ("Flagship", nil),
        "FlagshipLocalServer": ("FlagshipLocalServer", nil),
        "FlagshipTesting": ("FlagshipTesting", nil),
        "Logging": ("Logging", "swift-log"),
    ]

    /// Modules of the toolchain, which need no dependency.
    static let toolchainModules: Set<String> = ["Foundation", "Dispatch", "Glibc", "XCTest", "FoundationEssentials"]

    /// What every build in `scratch` is given. No debug information: nobody debugs a snippet, and
    /// without it the objects are smaller and the links faster (about a quarter of the build,
    /// measured on 2 cores). A package built there with other settings would compile the
    /// repository's modules again.
    static let buildSettings = ["-debug-info-format", "none"]

    let repository: URL

    var root: URL { repository.appendingPathComponent(".build-snippets", isDirectory: true) }
    var packageDirectory: URL { root.appendingPathComponent("pkg", isDirectory: true) }
    var scratch: URL { root.appendingPathComponent("build", isDirectory: true) }
    /// The repository under a folder name that is not the package's.
    var checkoutLink: URL { root.appendingPathComponent("flagship-checkout", isDirectory: true) }
    /// A package of one dynamic library product, `SnippetRuntime`: the `Flagship` library, linked
    /// once, for the modules that `linksRuntime`.
    var runtimeDirectory: URL { root.appendingPathComponent("snippet-runtime", isDirectory: true) }

    /// The modules' imports that no dependency provides, if any.
    static func unknownImports(of module: SnippetModule) -> Set<String> {
        module.imports.subtracting(toolchainModules).filter { products[$0] == nil }
    }

    func build(_ modules: [SnippetModule]) throws -> SnippetBuildReport {
        try writeSources(modules)
        guard let swift = Self.swiftExecutable() else {
            return SnippetBuildReport(problem: "No `swift` found next to the running toolchain or on PATH")
        }
        var report = SnippetBuildReport()
        var excluded = Set<String>()
        let started = Date()
        while true {
            let included = modules.filter { !excluded.contains($0.name) }
            try writeIfChanged(try manifest(for: included), to: packageDirectory.appendingPathComponent("Package.swift"))
            report.builds += 1
            let (status, output) = try Self.run(swift, ["build", "--package-path", packageDirectory.path,
                                                        "--scratch-path", scratch.path] + Self.buildSettings)
            var failed = Set<String>()
            for diagnostic in Self.diagnostics(in: output) {
                guard let module = moduleName(of: diagnostic.file) else { continue }
                if !report.diagnostics[module, default: []].contains(diagnostic) {
                    report.diagnostics[module, default: []].append(diagnostic)
                }
                if diagnostic.severity == "error" { failed.insert(module) }
            }
            if status == 0 {
                report.built = Set(included.map(\.name))
                report.seconds = Date().timeIntervalSince(started)
                return report
            }
            failed.subtract(excluded)
            if failed.isEmpty {
                report.problem = "`swift build` of \(packageDirectory.path) failed outside the snippets:\n"
                    + output.split(separator: "\n").suffix(40).joined(separator: "\n")
                report.seconds = Date().timeIntervalSince(started)
                return report
            }
            excluded.formUnion(failed)
        }
    }

    // MARK: Files

    private func writeSources(_ modules: [SnippetModule]) throws {
        let sources = packageDirectory.appendingPathComponent("Sources", isDirectory: true)
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        let names = Set(modules.map(\.name))
        for stale in try FileManager.default.contentsOfDirectory(atPath: sources.path) where !names.contains(stale) {
            try FileManager.default.removeItem(at: sources.appendingPathComponent(stale))
        }
        for module in modules {
            let directory = sources.appendingPathComponent(module.name, isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for stale in try FileManager.default.contentsOfDirectory(atPath: directory.path) where module.files[stale] == nil {
                try FileManager.default.removeItem(at: directory.appendingPathComponent(stale))
            }
            for (file, text) in module.files {
                try writeIfChanged(text, to: directory.appendingPathComponent(file))
            }
        }
        try linkCheckout()
        let runtimeSources = runtimeDirectory.appendingPathComponent("Sources/SnippetRuntime", isDirectory: true)
        try FileManager.default.createDirectory(at: runtimeSources, withIntermediateDirectories: true)
        try writeIfChanged("@_exported import Flagship\n", to: runtimeSources.appendingPathComponent("SnippetRuntime.swift"))
        try writeIfChanged("""
            // swift-tools-version: 6.1
            // Generated by the snippet tests: the Flagship library as one shared library, which the
            // snippets' programs link instead of a copy each.
            import PackageDescription

            let package = Package(
                name: "snippet-runtime",
                platforms: [.macOS(.v15)],
                products: [.library(name: "SnippetRuntime", type: .dynamic, targets: ["SnippetRuntime"])],
                dependencies: [.package(name: "\(Self.packageName)", path: "../\(checkoutLink.lastPathComponent)")],
                targets: [.target(name: "SnippetRuntime", dependencies: [.product(name: "Flagship", package: "\(Self.packageName)")])]
            )

            """, to: runtimeDirectory.appendingPathComponent("Package.swift"))
        try pinDependencies(of: packageDirectory)
    }

    /// Makes `checkoutLink` point at the repository.
    func linkCheckout() throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        if (try? FileManager.default.destinationOfSymbolicLink(atPath: checkoutLink.path)) != repository.path {
            try? FileManager.default.removeItem(at: checkoutLink)
            try FileManager.default.createSymbolicLink(at: checkoutLink, withDestinationURL: repository)
        }
    }

    /// Gives a package in `directory` the same dependency versions as this repository: its
    /// resolution needs no network when SwiftPM's cache has them, and a package built in `scratch`
    /// finds swift-log and the repository's modules compiled already.
    func pinDependencies(of directory: URL) throws {
        let resolved = repository.appendingPathComponent("Package.resolved")
        if let pins = try? String(contentsOf: resolved, encoding: .utf8) {
            try writeIfChanged(pins, to: directory.appendingPathComponent("Package.resolved"))
        }
    }

    /// The repository's own dependencies, by identity: their URL and lowest version.
    private func repositoryDependencies() throws -> [String: (url: String, from: String)] {
        let manifest = try String(contentsOf: repository.appendingPathComponent("Package.swift"), encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"\.package\(\s*url:\s*"([^"]+)",\s*from:\s*"([^"]+)""#)
        var found: [String: (url: String, from: String)] = [:]
        for match in pattern.matches(in: manifest, range: NSRange(manifest.startIndex..., in: manifest)) {
            guard let url = Range(match.range(at: 1), in: manifest).map({ String(manifest[$0]) }),
                  let from = Range(match.range(at: 2), in: manifest).map({ String(manifest[$0]) }) else { continue }
            let identity = (url as NSString).lastPathComponent.replacingOccurrences(of: ".git", with: "").lowercased()
            found[identity] = (url, from)
        }
        return found
    }

    private func manifest(for modules: [SnippetModule]) throws -> String {
        let known = try repositoryDependencies()
        var dependencies = [#"        .package(name: "\#(Self.packageName)", path: "../\#(checkoutLink.lastPathComponent)"),"#]
        if modules.contains(where: \.linksRuntime) {
            dependencies.append(#"        .package(path: "../\#(runtimeDirectory.lastPathComponent)"),"#)
        }
        for package in Set(modules.filter { !$0.linksRuntime }.flatMap(\.imports).compactMap { Self.products[$0]?.package }).sorted() {
            guard let source = known[package] else {
                throw SnippetPackageError(description: "a snippet needs \(package), which Package.swift does not depend on")
            }
            dependencies.append(#"        .package(url: "\#(source.url)", from: "\#(source.from)"),"#)
        }
        let targets = modules.map { module -> String in
            let products = module.linksRuntime ? [#".product(name: "SnippetRuntime", package: "snippet-runtime")"#]
                : module.imports.sorted().compactMap { name -> String? in
                    guard let product = Self.products[name] else { return nil }
                    return #".product(name: "\#(product.product)", package: "\#(product.package ?? Self.packageName)")"#
                }
            let kind = module.kind == .executable ? "executableTarget" : "target"
            return #"        .\#(kind)(name: "\#(module.name)", dependencies: [\#(products.joined(separator: ", "))], path: "Sources/\#(module.name)"\#(module.mode.manifestSettings)),"#
        }
        return """
            // swift-tools-version: 6.1
            // Generated by the snippet tests: one module per snippet and language mode.
            import PackageDescription

            let package = Package(
                name: "DocumentationSnippets",
                platforms: [.macOS(.v15)],
                dependencies: [
            \(dependencies.joined(separator: "\n"))
                ],
                targets: [
            \(targets.joined(separator: "\n"))
                ]
            )

            """
    }

    private func writeIfChanged(_ text: String, to url: URL) throws {
        if let existing = try? String(contentsOf: url, encoding: .utf8), existing == text { return }
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    private func moduleName(of file: String) -> String? {
        let prefix = packageDirectory.appendingPathComponent("Sources").path + "/"
        guard file.hasPrefix(prefix) else { return nil }
        return file.dropFirst(prefix.count).split(separator: "/").first.map(String.init)
    }

    /// Where an executable module's program is after the build.
    func executable(_ module: String) -> URL {
        scratch.appendingPathComponent("debug").appendingPathComponent(module)
    }

    // MARK: Running the build

    /// `path:line:column: error|warning: message` lines, each once.
    static func diagnostics(in output: String) -> [SnippetDiagnostic] {
        var seen: [SnippetDiagnostic] = []
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 4, omittingEmptySubsequences: false)
            guard parts.count == 5, parts[0].hasPrefix("/"), let number = Int(parts[1]), Int(parts[2]) != nil else { continue }
            let severity = parts[3].trimmingCharacters(in: .whitespaces)
            guard severity == "error" || severity == "warning" else { continue }
            let diagnostic = SnippetDiagnostic(file: String(parts[0]), line: number, severity: severity,
                                               message: parts[4].trimmingCharacters(in: .whitespaces))
            if !seen.contains(diagnostic) { seen.append(diagnostic) }
        }
        return seen
    }

    /// The `swift` of the toolchain this test runs on (found from where its runtime library was
    /// loaded), else the first on `PATH`.
    static func swiftExecutable() -> URL? {
        var candidates: [URL] = []
        if let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8),
           let line = maps.split(separator: "\n").first(where: { $0.hasSuffix("/lib/swift/linux/libswiftCore.so") }),
           let start = line.firstIndex(of: "/") {
            let library = URL(fileURLWithPath: String(line[start...]))
            candidates.append(library.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("bin/swift"))
        }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append(URL(fileURLWithPath: String(directory)).appendingPathComponent("swift"))
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Runs a command to its end; its output and error output, interleaved.
    static func run(_ executable: URL, _ arguments: [String], in directory: URL? = nil) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

struct SnippetPackageError: Error, CustomStringConvertible {
    let description: String
}
