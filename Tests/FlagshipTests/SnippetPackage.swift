import Foundation

/// The language mode a snippet target builds in.
enum SnippetMode: String, CaseIterable, Sendable {
    case swift6 = "Swift6"
    case swift5 = "Swift5"
    /// Swift 6 with `-warnings-as-errors` (the README's blocks).
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

/// One snippet in one language mode: an executable target of the snippet package.
struct SnippetTarget: Sendable {
    let snippet: DocumentSnippet
    let mode: SnippetMode
    let prepared: SnippetHarness.Prepared

    /// A module name: `Ref000_07_Swift6`, `README_02_Swift6NoWarnings`.
    var name: String {
        let document = snippet.document.allSatisfy(\.isNumber) ? "Ref" + snippet.document : snippet.document
        return "\(document)_\(String(format: "%02d", snippet.number))_\(mode.rawValue)"
    }

    /// The document line of a `main.swift` line.
    func documentLine(ofMainLine line: Int) -> Int {
        snippet.line + line - 1 - prepared.linesBefore
    }
}

/// A compiler diagnostic, from a build's output.
struct SnippetDiagnostic: Hashable, Sendable {
    let file: String
    let line: Int
    let severity: String
    let message: String
}

/// Every target of the snippet package: which built, and what the compiler said of each.
struct SnippetBuildReport: Sendable {
    var built: Set<String> = []
    var diagnostics: [String: [SnippetDiagnostic]] = [:]
    /// Set when the build failed for a reason no snippet explains (the package itself, resolution).
    var problem: String?

    func errors(of target: SnippetTarget) -> [SnippetDiagnostic] {
        diagnostics[target.name, default: []].filter { $0.severity == "error" }
    }

    /// `000 line 902: error: …` lines for a target, mapped back to the document where they come
    /// from its `main.swift`.
    func describe(_ target: SnippetTarget, severities: Set<String> = ["error"]) -> String {
        diagnostics[target.name, default: []].filter { severities.contains($0.severity) }.map { diagnostic in
            let place = diagnostic.file.hasSuffix("/main.swift")
                ? "\(target.snippet.document) line \(target.documentLine(ofMainLine: diagnostic.line))"
                : "\((diagnostic.file as NSString).lastPathComponent):\(diagnostic.line)"
            return "    \(place): \(diagnostic.severity): \(diagnostic.message)"
        }.joined(separator: "\n")
    }
}

/// One throwaway package that depends on this one by path, with an executable target per
/// snippet and mode, built with `swift build`. It lives in `<repo>/.build-snippets` (ignored by
/// git like every `.build-*`) and is kept between runs: files are rewritten only when their
/// contents change, so a re-run rebuilds only what changed.
///
/// `swift build` stops scheduling work at the first target that fails, so a failed build is run
/// again without the targets that failed, until it succeeds or fails for a reason no snippet
/// explains.
struct SnippetPackage {
    let repository: URL

    var root: URL { repository.appendingPathComponent(".build-snippets", isDirectory: true) }
    var packageDirectory: URL { root.appendingPathComponent("pkg", isDirectory: true) }
    var scratch: URL { root.appendingPathComponent("build", isDirectory: true) }

    func build(_ targets: [SnippetTarget]) throws -> SnippetBuildReport {
        try writeSources(targets)
        guard let swift = Self.swiftExecutable() else {
            return SnippetBuildReport(problem: "No `swift` found next to the running toolchain or on PATH")
        }
        var report = SnippetBuildReport()
        var excluded = Set<String>()
        while true {
            let included = targets.filter { !excluded.contains($0.name) }
            try writeIfChanged(manifest(for: included), to: packageDirectory.appendingPathComponent("Package.swift"))
            let (status, output) = try Self.run(swift, ["build", "--package-path", packageDirectory.path,
                                                        "--scratch-path", scratch.path])
            var failed = Set<String>()
            for diagnostic in Self.diagnostics(in: output) {
                guard let target = targetName(of: diagnostic.file) else { continue }
                if !report.diagnostics[target, default: []].contains(diagnostic) {
                    report.diagnostics[target, default: []].append(diagnostic)
                }
                if diagnostic.severity == "error" { failed.insert(target) }
            }
            if status == 0 {
                report.built = Set(included.map(\.name))
                return report
            }
            failed.subtract(excluded)
            if failed.isEmpty {
                report.problem = "`swift build` of \(packageDirectory.path) failed outside the snippets:\n"
                    + output.split(separator: "\n").suffix(40).joined(separator: "\n")
                return report
            }
            excluded.formUnion(failed)
        }
    }

    // MARK: Files

    private func writeSources(_ targets: [SnippetTarget]) throws {
        let sources = packageDirectory.appendingPathComponent("Sources", isDirectory: true)
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        let names = Set(targets.map(\.name))
        for stale in try FileManager.default.contentsOfDirectory(atPath: sources.path) where !names.contains(stale) {
            try FileManager.default.removeItem(at: sources.appendingPathComponent(stale))
        }
        for target in targets {
            let directory = sources.appendingPathComponent(target.name, isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try writeIfChanged(target.prepared.main, to: directory.appendingPathComponent("main.swift"))
            let context = directory.appendingPathComponent("Context.swift")
            if let text = target.prepared.context {
                try writeIfChanged(text, to: context)
            } else if FileManager.default.fileExists(atPath: context.path) {
                try FileManager.default.removeItem(at: context)
            }
        }
        // The same dependency versions as this package, so the nested resolution needs no network
        // when SwiftPM's cache has them.
        let resolved = repository.appendingPathComponent("Package.resolved")
        if let pins = try? String(contentsOf: resolved, encoding: .utf8) {
            try writeIfChanged(pins, to: packageDirectory.appendingPathComponent("Package.resolved"))
        }
    }

    private func manifest(for targets: [SnippetTarget]) -> String {
        let identity = repository.lastPathComponent.lowercased()
        let lines = targets.map { target in
            let products = target.snippet.document == "README" ? "readme" : "sdk"
            return #"        .executableTarget(name: "\#(target.name)", dependencies: \#(products), path: "Sources/\#(target.name)"\#(target.mode.manifestSettings)),"#
        }
        return """
            // swift-tools-version: 6.1
            // Generated by ReferenceSnippetTests: one executable target per snippet and language mode.
            import PackageDescription

            let sdk: [Target.Dependency] = [.product(name: "Flagship", package: "\(identity)")]
            let sdkAndServer = sdk + [.product(name: "FlagshipLocalServer", package: "\(identity)")]
            // The README's blocks may also run the SDK as a service of swift-service-lifecycle, and
            // against test data (FlagshipTesting).
            let readme = sdkAndServer + [
                .product(name: "FlagshipTesting", package: "\(identity)"),
                .product(name: "FlagshipServiceLifecycle", package: "\(identity)"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]

            let package = Package(
                name: "ReferenceSnippets",
                platforms: [.macOS(.v13)],
                dependencies: [
                    .package(path: "\(repository.path)", traits: ["ServiceLifecycle"]),
                    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
                ],
                targets: [
            \(lines.joined(separator: "\n"))
                ]
            )

            """
    }

    private func writeIfChanged(_ text: String, to url: URL) throws {
        if let existing = try? String(contentsOf: url, encoding: .utf8), existing == text { return }
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    private func targetName(of file: String) -> String? {
        let prefix = packageDirectory.appendingPathComponent("Sources").path + "/"
        guard file.hasPrefix(prefix) else { return nil }
        return file.dropFirst(prefix.count).split(separator: "/").first.map(String.init)
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
    static func run(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
