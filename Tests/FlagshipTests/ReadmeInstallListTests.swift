import Foundation
import XCTest

/// The README says what `make demo` and `make test` install; the Makefile's `APT_PACKAGES` is
/// what they do install. A package added to one and not the other fails here.
final class ReadmeInstallListTests: XCTestCase {
    func testTheReadmeNamesEveryPackageTheMakefileInstalls() throws {
        let makefile = try String(contentsOf: SharedData.packageRoot.appendingPathComponent("Makefile"), encoding: .utf8)
        let line = try XCTUnwrap(makefile.split(separator: "\n").first { $0.hasPrefix("APT_PACKAGES :=") }, "no APT_PACKAGES in the Makefile")
        let packages = line.dropFirst("APT_PACKAGES :=".count).split(separator: " ").map(String.init)
        XCTAssertGreaterThanOrEqual(packages.count, 5, "\(packages)")
        let readme = try String(contentsOf: SharedData.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let sentence = try XCTUnwrap(readme.range(of: "Both first install what is missing").map { String(readme[$0.lowerBound...].prefix(600)) })
        for package in packages {
            XCTAssertTrue(sentence.contains("`\(package)`"), "the README's install list lacks \(package)")
        }
    }
}
