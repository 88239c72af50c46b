// swift-tools-version: 6.1
import Foundation
import PackageDescription

// The bucketing engine is `package` API of Flagship: visible only to modules built with Flagship's
// package name, which SwiftPM derives from the checkout's directory ("main" for `/work/main`,
// "flagship_swift_linux" for a clone of that name). The Bucketing suite is built with that name
// instead of its own (`packageAccess: false` stops SwiftPM from adding this package's), so it
// measures the engine itself without the engine being made public.
let flagshipPackageName: String = {
    let directory = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().lastPathComponent.lowercased()
    let name = String(directory.map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
    return name.first?.isNumber == true ? "_" + name : name
}()

// The benchmark suites live in their own package so that users of the library never build
// package-benchmark. Run from this directory: `swift package benchmark`.
let package = Package(
    name: "flagship-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // `Postgres`: FlagshipPostgres, for the ServerLoop and Fleet suites.
        .package(name: "flagship-swift-linux", path: "..", traits: ["Postgres", "AsyncHTTPClient"]),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
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
        // A flag read through the public API beside a locked dictionary lookup.
        .executableTarget(
            name: "FlagRead",
            dependencies: [
                "BenchSupport",
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "FlagshipLocalServer", package: "flagship-swift-linux"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "FlagRead",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The bucketing decision engine alone (one visitor over 100 campaigns, beside its
        // baselines), and a bucketing fetchFlags through the SDK: decision + visitor cache write.
        .executableTarget(
            name: "Bucketing",
            dependencies: [
                "BenchSupport",
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "FlagshipLocalServer", package: "flagship-swift-linux"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Bucketing",
            packageAccess: false,
            swiftSettings: [.unsafeFlags(["-package-name", flagshipPackageName])],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Issue 19's server loop: 64 visitors at once through the SDK (on SQLite, and on
        // PostgreSQL for issue 21), beside the engine alone, raw SQLite and raw URLSession;
        // close() held up; a flag read with the store locked. Built with Flagship's package
        // name, as the Bucketing suite, for the engine-only baseline.
        .executableTarget(
            name: "ServerLoop",
            dependencies: [
                "BenchSupport",
                "BenchSQLite",
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "FlagshipLocalServer", package: "flagship-swift-linux"),
                .product(name: "FlagshipPostgres", package: "flagship-swift-linux"),
                .product(name: "FlagshipAsyncHTTPClient", package: "flagship-swift-linux"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresTestSupport", package: "flagship-swift-linux"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "ServerLoop",
            packageAccess: false,
            swiftSettings: [.unsafeFlags(["-package-name", flagshipPackageName])],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Issue 45: a server's requests of new and returning visitors, what the platform
        // receives of each, with the default deduplication and with the reference's behaviour.
        // Built with Flagship's package name: it waits for delivery (`waitUntilTrackingIsIdle`).
        .executableTarget(
            name: "Requests",
            dependencies: [
                "BenchSupport",
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "FlagshipLocalServer", package: "flagship-swift-linux"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Requests",
            packageAccess: false,
            swiftSettings: [.unsafeFlags(["-package-name", flagshipPackageName])],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Issue 22: from a changed bucketing file on the server to the SDK's change event.
        .executableTarget(
            name: "Provenance",
            dependencies: [
                "BenchSupport",
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "FlagshipLocalServer", package: "flagship-swift-linux"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Provenance",
            packageAccess: false,
            swiftSettings: [.unsafeFlags(["-package-name", flagshipPackageName])],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "FlagChanges",
            dependencies: [
                "BenchSupport",
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "FlagshipLocalServer", package: "flagship-swift-linux"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "FlagChanges",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Issue 21's fleet on PostgreSQL: commits per second by one and three instances beside raw
        // multi-row INSERTs, and 100,000 hits replayed by three instances. Built with Flagship's
        // package name, for several SDK instances in one process.
        .executableTarget(
            name: "Fleet",
            dependencies: [
                "BenchSupport",
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "FlagshipPostgres", package: "flagship-swift-linux"),
                .product(name: "FlagshipLocalServer", package: "flagship-swift-linux"),
                .product(name: "PostgresTestSupport", package: "flagship-swift-linux"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Fleet",
            packageAccess: false,
            swiftSettings: [.unsafeFlags(["-package-name", flagshipPackageName])],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Issue 34: an order's transaction with its hit written in it, beside the same transaction
        // without it, on SQLite (the SDK's file) and on PostgreSQL (the fleet's database).
        .executableTarget(
            name: "TransactionalHits",
            dependencies: [
                "BenchSQLite",
                "BenchSupport",
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "FlagshipPostgres", package: "flagship-swift-linux"),
                .product(name: "FlagshipLocalServer", package: "flagship-swift-linux"),
                .product(name: "PostgresTestSupport", package: "flagship-swift-linux"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "TransactionalHits",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
