// swift-tools-version: 6.1
import PackageDescription

// The benchmark suites live in their own package so that users of the library never build
// package-benchmark. Run from this directory: `swift package benchmark`.
let package = Package(
    name: "flagship-benchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "flagship-swift-linux", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // The system SQLite, for the raw baseline: the main package's CSQLite is not a product.
        .systemLibrary(
            name: "BenchSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // What both suites share: the raw table, the hit fixture, temporary directories, metrics.
        .target(
            name: "BenchSupport",
            dependencies: [
                "BenchSQLite",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Support"
        ),
        // The hit cache and the raw SQLite baselines it is measured against.
        .executableTarget(
            name: "HitStore",
            dependencies: [
                "BenchSupport",
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "HitStore",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The tracking manager through the public API: sendHit to commit, memory, replay.
        .executableTarget(
            name: "Tracking",
            dependencies: [
                "BenchSupport",
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "FlagshipLocalServer", package: "flagship-swift-linux"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Tracking",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
