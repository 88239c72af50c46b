import Foundation
import XCTest

/// `make test` builds Examples/HummingbirdServer's program inside this package's build
/// (`FLAGSHIP_EXAMPLE=1`, at the end of Package.swift) rather than as the package a user copies.
/// These keep the two manifests saying the same thing: the same products, the same packages at the
/// same lowest versions, the same sources. A change to one that the other lacks fails here, not in
/// a user's build.
final class ExampleManifestTests: XCTestCase {
    private static let root = SharedData.packageRoot
    private static let examplePath = "Examples/HummingbirdServer"

    func testTheMainManifestBuildsTheExampleWithTheProductsItsOwnManifestNames() throws {
        let example = try Self.manifest(at: "\(Self.examplePath)/Package.swift")
        let main = try Self.exampleBlock(of: try Self.manifest(at: "Package.swift"))

        // The example names this repository's products as `.product(name:package: "flagship-swift-linux")`;
        // inside the repository they are its own targets, named by a string.
        let exampleProducts = Set(Self.products(in: example).map { product, package in
            package == "flagship-swift-linux" ? "local:\(product)" : "\(package):\(product)"
        })
        let localTargets = Self.matches(#"^\s*"([A-Za-z]+)",\s*$"#, in: main, options: .anchorsMatchLines).map { "local:\($0[0])" }
        let mainProducts = Set(Self.products(in: main).map { "\($1):\($0)" } + localTargets)

        XCTAssertFalse(exampleProducts.isEmpty, "no product found in the example's manifest")
        XCTAssertEqual(mainProducts, exampleProducts,
                       "Package.swift's FLAGSHIP_EXAMPLE target and \(Self.examplePath)/Package.swift name different products")
    }

    func testEveryPackageTheExampleNamesIsResolvedAtTheSameLowestVersionInTheMainBuild() throws {
        let example = try Self.manifest(at: "\(Self.examplePath)/Package.swift")
        let main = try Self.manifest(at: "Package.swift")
        let mainPackages = Dictionary(Self.packages(in: main), uniquingKeysWith: { first, _ in first })
        let examplePackages = Self.packages(in: example)
        XCTAssertGreaterThanOrEqual(examplePackages.count, 2, "the example's packages were not found")
        for (url, version) in examplePackages {
            XCTAssertEqual(mainPackages[url], version, "\(url): the example asks for \(version), Package.swift for \(mainPackages[url] ?? "nothing")")
        }
    }

    func testTheMainBuildCompilesTheExamplesOwnSourceFolder() throws {
        let main = try Self.exampleBlock(of: try Self.manifest(at: "Package.swift"))
        let paths = Self.matches(#"path:\s*"([^"]+)""#, in: main).map { $0[0] }
        XCTAssertEqual(paths, ["\(Self.examplePath)/Sources/HummingbirdServer"])
        let mainFile = Self.root.appendingPathComponent("\(Self.examplePath)/Sources/HummingbirdServer/main.swift")
        XCTAssertTrue(FileManager.default.fileExists(atPath: mainFile.path), "\(mainFile.path) is missing")
    }

    // MARK: Reading the manifests

    private static func manifest(at path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The part of Package.swift that only `FLAGSHIP_EXAMPLE` reads for the example: its first
    /// block (a second one builds the documentation's programs).
    private static func exampleBlock(of manifest: String) throws -> String {
        let marker = #"Context.environment["FLAGSHIP_EXAMPLE"]"#
        let start = try XCTUnwrap(manifest.range(of: marker), "Package.swift has no FLAGSHIP_EXAMPLE block")
        let end = manifest.range(of: marker, range: start.upperBound..<manifest.endIndex)?.lowerBound ?? manifest.endIndex
        return String(manifest[start.upperBound..<end])
    }

    private static func products(in text: String) -> [(product: String, package: String)] {
        matches(#"\.product\(\s*name:\s*"([^"]+)",\s*package:\s*"([^"]+)""#, in: text).map { ($0[0], $0[1]) }
    }

    /// `.package(url:from:)` as (the URL, the version).
    private static func packages(in text: String) -> [(String, String)] {
        matches(#"\.package\(\s*url:\s*"([^"]+)",\s*from:\s*"([^"]+)""#, in: text).map { ($0[0], $0[1]) }
    }

    private static func matches(_ pattern: String, in text: String, options: NSRegularExpression.Options = []) -> [[String]] {
        guard let expression = try? NSRegularExpression(pattern: pattern, options: options) else { return [] }
        return expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (1..<match.numberOfRanges).compactMap { Range(match.range(at: $0), in: text).map { String(text[$0]) } }
        }
    }
}
