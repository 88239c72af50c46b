// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "flagship-swift-linux",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "Flagship", targets: ["Flagship"]),
        // A Flagship-compatible backend on loopback, so apps can test against it offline.
        .library(name: "FlagshipLocalServer", targets: ["FlagshipLocalServer"]),
        .executable(name: "flagship", targets: ["flagship"]),
        // The SDK as a swift-service-lifecycle `Service`: its own product, so that an app that
        // depends on `Flagship` alone never compiles ServiceLifecycle.
        .library(name: "FlagshipServiceLifecycle", targets: ["FlagshipServiceLifecycle"]),
        // The SDK's instrumentation reported through swift-metrics: its own product, so that an
        // app that depends on `Flagship` alone never compiles swift-metrics.
        .library(name: "FlagshipMetrics", targets: ["FlagshipMetrics"]),
        // Spans and W3C trace context through swift-distributed-tracing: its own product too.
        .library(name: "FlagshipTracing", targets: ["FlagshipTracing"]),
        // The SDK's configuration read with swift-configuration (environment, JSON file...): its own product.
        .library(name: "FlagshipConfiguration", targets: ["FlagshipConfiguration"]),
        // The fuzz targets' bodies (`FuzzEntry`, `package` access), for `Fuzz/` and the regression
        // tests: out of the `Flagship` product, so that no app ships them.
        .library(name: "FlagshipFuzzing", targets: ["FlagshipFuzzing"]),
        // The store on PostgreSQL for a fleet of instances (postgres-nio): its own product, so that
        // an app that depends on `Flagship` alone never compiles SwiftNIO.
        .library(name: "FlagshipPostgres", targets: ["FlagshipPostgres"]),
        // Flag values set by a test, answered in-process to the real SDK, with every hit and
        // activate it sent read back: apps' tests run without a server and without a mock.
        .library(name: "FlagshipTesting", targets: ["FlagshipTesting"]),
        // A throwaway PostgreSQL server (Debian's binaries, a temporary directory, a free port):
        // for the tests and the benchmarks (`Benchmarks/`, a package of its own).
        .library(name: "PostgresTestSupport", targets: ["PostgresTestSupport"]),
        // The SDK under a flow of visitors at a rate, against the local server, sampled over time
        // (`flagship-soak --rate 500 --duration 600 --csv soak.csv --svg soak.svg`).
        .executable(name: "flagship-soak", targets: ["flagship-soak"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // The system SQLite (Debian: libsqlite3-dev).
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Turns Migrations/*.sql into Swift source for FlagshipStore at build time.
        .executableTarget(
            name: "EmbedMigrationsTool",
            path: "Plugins/EmbedMigrationsTool"
        ),
        .plugin(
            name: "EmbedMigrations",
            capability: .buildTool(),
            dependencies: ["EmbedMigrationsTool"],
            path: "Plugins/EmbedMigrations"
        ),
        .target(
            name: "FlagshipStore",
            dependencies: ["CSQLite"],
            plugins: ["EmbedMigrations"]
        ),
        .target(
            name: "Flagship",
            dependencies: [
                "FlagshipStore",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "FlagshipFuzzing", dependencies: ["Flagship"]),
        // A Flagship-compatible HTTP server on 127.0.0.1 (POSIX sockets), deciding with the
        // SDK's own bucketing engine when given a bucketing file.
        .target(name: "FlagshipLocalServer", dependencies: ["Flagship", "FlagshipStore"]),
        .executableTarget(
            name: "flagship",
            dependencies: [
                "Flagship",
                "FlagshipStore",
                "FlagshipLocalServer",
                "FlagshipPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(
            name: "FlagshipServiceLifecycle",
            dependencies: [
                "Flagship",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "FlagshipMetrics",
            dependencies: [
                "Flagship",
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "FlagshipTracing",
            dependencies: [
                "Flagship",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "FlagshipConfiguration",
            dependencies: [
                "Flagship",
                .product(name: "Configuration", package: "swift-configuration"),
            ]
        ),
        .target(
            name: "FlagshipPostgres",
            dependencies: [
                "Flagship",
                "FlagshipStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            plugins: ["EmbedMigrations"]
        ),
        // The real SDK against test data, through an in-process transport (no sockets); `Locked`
        // from FlagshipStore, which `Flagship` depends on already.
        .target(name: "FlagshipTesting", dependencies: ["Flagship", "FlagshipStore"]),
        // A PostgreSQL server for the tests, started from Debian's binaries in a temporary directory.
        .target(name: "PostgresTestSupport", path: "Tests/Support/PostgresTestSupport"),
        // A child process for the lifecycle tests: the SDK and a flow of awaited hits under a
        // `ServiceGroup`, stopped by SIGTERM.
        .executableTarget(
            name: "flagship-service-probe",
            dependencies: [
                "Flagship",
                "FlagshipServiceLifecycle",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/Support/flagship-service-probe"
        ),
        // A child process for the PostgreSQL fleet tests: one instance of a fleet, killed at will.
        .executableTarget(
            name: "flagship-fleet-probe",
            dependencies: ["Flagship", "FlagshipPostgres", .product(name: "Logging", package: "swift-log")],
            path: "Tests/Support/flagship-fleet-probe"
        ),
        // Torture runs: kills the SDK's process at random points and checks nothing is lost
        // (`make torture`; a short run in `make test`).
        .executableTarget(
            name: "flagship-torture",
            dependencies: [
                "Flagship",
                "FlagshipStore",
                "FlagshipLocalServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Soak runs: an open loop of visitors at a rate, sampled (backlog, store, memory,
        // latencies), a closed-loop burst, and the bisection for the highest steady rate.
        .executableTarget(
            name: "flagship-soak",
            dependencies: [
                "Flagship",
                "FlagshipStore",
                "FlagshipLocalServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "FlagshipStoreTests",
            dependencies: ["FlagshipStore"]
        ),
        // The migrations' build tool run as the plugin runs it: deterministic, and a no-op build
        // left a no-op (the generated file untouched when its text is unchanged).
        .testTarget(
            name: "EmbedMigrationsToolTests",
            dependencies: ["EmbedMigrationsTool"]
        ),
        .testTarget(
            name: "FlagshipTests",
            dependencies: [
                "Flagship",
                "FlagshipFuzzing",
                "FlagshipStore",
                "FlagshipLocalServer",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FlagshipLocalServerTests",
            dependencies: ["FlagshipLocalServer", "Flagship", "FlagshipStore"]
        ),
        .testTarget(
            name: "flagshipTests",
            dependencies: [
                "flagship",
                "flagship-torture",
                "FlagshipStore",
                "FlagshipLocalServer",
                "FlagshipPostgres",
                "PostgresTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "flagship-soakTests",
            dependencies: ["flagship-soak"]
        ),
        .testTarget(
            name: "FlagshipMetricsTests",
            dependencies: [
                "FlagshipMetrics",
                "Flagship",
                "FlagshipLocalServer",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "FlagshipTracingTests",
            dependencies: [
                "FlagshipTracing",
                "Flagship",
                "FlagshipLocalServer",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "FlagshipConfigurationTests",
            dependencies: [
                "FlagshipConfiguration",
                "Flagship",
                .product(name: "Configuration", package: "swift-configuration"),
            ]
        ),
        .testTarget(
            name: "FlagshipPostgresTests",
            dependencies: [
                "FlagshipPostgres",
                "PostgresTestSupport",
                "Flagship",
                "FlagshipStore",
                "FlagshipLocalServer",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FlagshipTestingTests",
            dependencies: ["FlagshipTesting", "Flagship", "FlagshipStore"]
        ),
        .testTarget(
            name: "FlagshipServiceLifecycleTests",
            dependencies: [
                "flagship-service-probe",
                "FlagshipServiceLifecycle",
                "Flagship",
                "FlagshipStore",
                "FlagshipLocalServer",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
