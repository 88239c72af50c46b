// swift-tools-version: 6.1
import Foundation
import PackageDescription

// The fuzz targets' bodies are `package` API of FlagshipFuzzing (`FuzzEntry`): visible only to modules
// built with Flagship's package name, which SwiftPM derives from the checkout's directory ("main"
// for `/work/main`). These targets are built with that name instead of their own
// (`packageAccess: false` stops SwiftPM from adding this package's), as `Benchmarks/` does.
let flagshipPackageName: String = {
    let directory = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent.lowercased()
    let name = String(directory.map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
    return name.first?.isNumber == true ? "_" + name : name
}()

let flagship = Target.Dependency.product(name: "Flagship", package: "flagship-swift-linux")
let flagshipFuzzing = Target.Dependency.product(name: "FlagshipFuzzing", package: "flagship-swift-linux")
let flagshipPackage: [SwiftSetting] = [.unsafeFlags(["-package-name", flagshipPackageName])]

/// One libFuzzer executable: its `main.swift` exports `LLVMFuzzerTestOneInput`, which runs one
/// `FuzzEntry`, and `<module>_main` (SwiftPM's name for an executable's entry), which starts
/// libFuzzer's driver. Only these are compiled for libFuzzer: `swift build --sanitize=fuzzer`
/// would link its runtime's `main` into every executable, the main package's build tool
/// `EmbedMigrationsTool` included, which then has two and fails to link. The coverage the fuzzer
/// steers by comes from `-sanitize-coverage` on every module (`Scripts/fuzz.sh`).
func fuzzTarget(_ name: String) -> Target {
    .executableTarget(name: name, dependencies: ["FuzzSupport", flagship, flagshipFuzzing], packageAccess: false,
                      swiftSettings: flagshipPackage + [.unsafeFlags(["-parse-as-library", "-sanitize=fuzzer"])],
                      linkerSettings: [.unsafeFlags(["-sanitize=fuzzer"])])
}

// libFuzzer targets, in their own package so that users of the library never build them. Built and
// run from the main package's root by `Scripts/fuzz.sh SECONDS [target...]` (`make fuzz`), with
// `--sanitize=address` and coverage instrumentation.
let package = Package(
    name: "flagship-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "flagship-swift-linux", path: ".."),
    ],
    targets: [
        // What every fuzz target's main shares: the input handed to its `FuzzEntry`, a violation trapped.
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer", flagship, flagshipFuzzing], packageAccess: false,
                swiftSettings: flagshipPackage),
        // The declaration of libFuzzer's driver, `LLVMFuzzerRunDriver`.
        .target(name: "CLibFuzzer"),
        fuzzTarget("FuzzDecisionResponse"),
        fuzzTarget("FuzzBucketing"),
        fuzzTarget("FuzzVisitorCacheDocument"),
        fuzzTarget("FuzzHitCacheDocument"),
        fuzzTarget("FuzzValidation"),
        fuzzTarget("FuzzIndexLeaves"),
        fuzzTarget("FuzzCompiledBucketing"),
    ],
    swiftLanguageModes: [.v6]
)
