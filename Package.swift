// swift-tools-version: 6.1
import PackageDescription

// What each trait brings (see `traits` below).
let postgres = TargetDependencyCondition.when(traits: ["Postgres"])
let serviceLifecycle = TargetDependencyCondition.when(traits: ["ServiceLifecycle"])
let metrics = TargetDependencyCondition.when(traits: ["Metrics"])
let tracing = TargetDependencyCondition.when(traits: ["Tracing"])
let configuration = TargetDependencyCondition.when(traits: ["Configuration"])
let asyncHTTPClient = TargetDependencyCondition.when(traits: ["AsyncHTTPClient"])

let package = Package(
    name: "flagship-swift-linux",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Flagship", targets: ["Flagship"]),
        // A Flagship-compatible backend on loopback, so apps can test against it offline.
        .library(name: "FlagshipLocalServer", targets: ["FlagshipLocalServer"]),
        // No `.executable` product: the tools (`flagship`, `flagship-soak`, `flagship-torture`) are
        // built in this repository, where SwiftPM makes a product of each executable target
        // (`swift build --product flagship`). A declared product would make every app that depends
        // on this package resolve and clone swift-argument-parser, which only the tools use:
        // SwiftPM resolves a dependency package's dependencies for all of its declared products.
        //
        // The integrations: each its own product, with the trait that brings its dependency and
        // its code, so that an app that depends on `Flagship` alone never resolves them.
        // The SDK as a swift-service-lifecycle `Service` (trait `ServiceLifecycle`).
        .library(name: "FlagshipServiceLifecycle", targets: ["FlagshipServiceLifecycle"]),
        // The SDK's instrumentation reported through swift-metrics (trait `Metrics`).
        .library(name: "FlagshipMetrics", targets: ["FlagshipMetrics"]),
        // Spans and W3C trace context through swift-distributed-tracing (trait `Tracing`).
        .library(name: "FlagshipTracing", targets: ["FlagshipTracing"]),
        // The SDK's configuration read with swift-configuration, environment, JSON file... (trait `Configuration`).
        .library(name: "FlagshipConfiguration", targets: ["FlagshipConfiguration"]),
        // The fuzz targets' bodies (`FuzzEntry`, `package` access), for `Fuzz/` and the regression
        // tests: out of the `Flagship` product, so that no app ships them.
        .library(name: "FlagshipFuzzing", targets: ["FlagshipFuzzing"]),
        // The SDK's requests through async-http-client: the app's `HTTPClient`, or one of the
        // SDK's on the singleton event loop group (trait `AsyncHTTPClient`).
        .library(name: "FlagshipAsyncHTTPClient", targets: ["FlagshipAsyncHTTPClient"]),
        // The store on PostgreSQL for a fleet of instances, with postgres-nio (trait `Postgres`).
        .library(name: "FlagshipPostgres", targets: ["FlagshipPostgres"]),
        // Flag values set by a test, answered in-process to the real SDK, with every hit and
        // activate it sent read back: apps' tests run without a server and without a mock.
        .library(name: "FlagshipTesting", targets: ["FlagshipTesting"]),
        // A throwaway PostgreSQL server (Debian's binaries, a temporary directory, a free port):
        // for the tests and the benchmarks (`Benchmarks/`, a package of its own).
        .library(name: "PostgresTestSupport", targets: ["PostgresTestSupport"]),
    ],
    // None on by default: an app that asks for `Flagship` alone resolves swift-log and nothing
    // else (SwiftPM leaves out of resolution a package that only trait-guarded dependencies use).
    // A trait also compiles its modules' sources, empty without it (`#if Postgres`...); an app
    // names the ones it needs: `.package(url: ..., from: ..., traits: ["Postgres"])`.
    traits: [
        .trait(name: "Postgres", description: "FlagshipPostgres (postgres-nio, SwiftNIO), and PostgreSQL stores in the flagship tool."),
        .trait(name: "ServiceLifecycle", description: "FlagshipServiceLifecycle: the SDK as a swift-service-lifecycle Service."),
        .trait(name: "Metrics", description: "FlagshipMetrics: the SDK's instrumentation through swift-metrics."),
        .trait(name: "Tracing", description: "FlagshipTracing: spans and trace context through swift-distributed-tracing."),
        .trait(name: "Configuration", description: "FlagshipConfiguration: the SDK's configuration read with swift-configuration."),
        .trait(name: "AsyncHTTPClient", description: "FlagshipAsyncHTTPClient: the SDK's requests through async-http-client."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // TLS for FlagshipPostgres (sslmode): the version postgres-nio itself resolves.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.25.0"),
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
        // FoundationNetworking's check of each request's host, in a version that frees what it
        // allocates (Swift 6.3's loses some 150 bytes per request): see URLHostCheck.c.
        .target(name: "CFlagshipURLHostCheck"),
        .target(
            name: "Flagship",
            dependencies: [
                "FlagshipStore",
                .target(name: "CFlagshipURLHostCheck", condition: .when(platforms: [.linux])),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "FlagshipFuzzing", dependencies: ["Flagship", "FlagshipStore"]),
        // A Flagship-compatible HTTP server on 127.0.0.1 (POSIX sockets), deciding with the
        // SDK's own bucketing engine when given a bucketing file.
        .target(name: "FlagshipLocalServer", dependencies: ["Flagship", "FlagshipStore"]),
        .executableTarget(
            name: "flagship",
            dependencies: [
                "Flagship",
                "FlagshipStore",
                "FlagshipLocalServer",
                .target(name: "FlagshipPostgres", condition: postgres),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The SDK's log lines written in the tool's style (`ToolLogHandler`).
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "FlagshipServiceLifecycle",
            dependencies: [
                "Flagship",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: serviceLifecycle),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "FlagshipMetrics",
            dependencies: [
                "Flagship",
                "FlagshipStore",
                .product(name: "Metrics", package: "swift-metrics", condition: metrics),
            ]
        ),
        .target(
            name: "FlagshipTracing",
            dependencies: [
                "Flagship",
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: tracing),
            ]
        ),
        .target(
            name: "FlagshipConfiguration",
            dependencies: [
                "Flagship",
                .product(name: "Configuration", package: "swift-configuration", condition: configuration),
            ]
        ),
        .target(
            name: "FlagshipAsyncHTTPClient",
            dependencies: [
                "Flagship",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: asyncHTTPClient),
                .product(name: "NIOCore", package: "swift-nio", condition: asyncHTTPClient),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: asyncHTTPClient),
            ]
        ),
        .target(
            name: "FlagshipPostgres",
            dependencies: [
                "Flagship",
                "FlagshipStore",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: postgres),
                .product(name: "Logging", package: "swift-log"),
            ],
            plugins: ["EmbedMigrations"]
        ),
        // The real SDK against test data, through an in-process transport (no sockets); `Locked`
        // from FlagshipStore, which `Flagship` depends on already.
        .target(name: "FlagshipTesting", dependencies: ["Flagship", "FlagshipStore"]),
        // glibc's heap in use (`mallinfo2`), for the tests that check what the host check frees:
        // a test helper, out of every shipped target.
        .target(name: "CHeapProbe", path: "Tests/Support/CHeapProbe"),
        // With FLAGSHIP_ONE_COOPERATIVE_THREAD=1, Swift concurrency's global executor on one
        // thread for the whole test bundle, installed at load time (the executor is in
        // FlagshipTests, OneCooperativeThread.swift).
        .target(name: "COneCooperativeThread", path: "Tests/Support/COneCooperativeThread"),
        // A PostgreSQL server for the tests, started from Debian's binaries in a temporary directory.
        .target(name: "PostgresTestSupport", path: "Tests/Support/PostgresTestSupport"),
        // A child process for the lifecycle tests: the SDK and a flow of awaited hits under a
        // `ServiceGroup`, stopped by SIGTERM.
        .executableTarget(
            name: "flagship-service-probe",
            dependencies: [
                "Flagship",
                "FlagshipServiceLifecycle",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: serviceLifecycle),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/Support/flagship-service-probe"
        ),
        // A child process for the PostgreSQL fleet tests: one instance of a fleet, killed at will;
        // also an app writing hits in its own transactions (PostgreSQL, and SQLite through CSQLite).
        .executableTarget(
            name: "flagship-fleet-probe",
            dependencies: [
                "CSQLite",
                "Flagship",
                "FlagshipPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
                .product(name: "Logging", package: "swift-log"),
            ],
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
                "CSQLite",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
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
                .target(name: "CFlagshipURLHostCheck", condition: .when(platforms: [.linux])),
                .target(name: "CHeapProbe", condition: .when(platforms: [.linux])),
                .target(name: "COneCooperativeThread", condition: .when(platforms: [.linux])),
                "FlagshipFuzzing",
                "FlagshipStore",
                "FlagshipLocalServer",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FlagshipLocalServerTests",
            dependencies: ["FlagshipLocalServer", "Flagship", "FlagshipStore", "FlagshipTesting"]
        ),
        .testTarget(
            name: "flagshipTests",
            dependencies: [
                "flagship",
                "flagship-torture",
                "FlagshipStore",
                "FlagshipLocalServer",
                .target(name: "FlagshipPostgres", condition: postgres),
                .target(name: "PostgresTestSupport", condition: postgres),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "flagship-soakTests",
            dependencies: ["flagship-soak", "FlagshipStore"]
        ),
        .testTarget(
            name: "FlagshipMetricsTests",
            dependencies: [
                "FlagshipMetrics",
                "FlagshipTracing",
                "Flagship",
                "FlagshipLocalServer",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics", condition: metrics),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: metrics),
            ]
        ),
        .testTarget(
            name: "FlagshipTracingTests",
            dependencies: [
                "FlagshipTracing",
                "Flagship",
                "FlagshipLocalServer",
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: tracing),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing", condition: tracing),
            ]
        ),
        .testTarget(
            name: "FlagshipConfigurationTests",
            dependencies: [
                "FlagshipConfiguration",
                "Flagship",
                .product(name: "Configuration", package: "swift-configuration", condition: configuration),
            ]
        ),
        .testTarget(
            name: "FlagshipAsyncHTTPClientTests",
            dependencies: [
                "FlagshipAsyncHTTPClient",
                "Flagship",
                "FlagshipLocalServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: asyncHTTPClient),
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
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
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
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: serviceLifecycle),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// `make docs` (FLAGSHIP_DOCS=1) generates the DocC catalogs with swift-docc-plugin. Only then is
// the plugin a dependency: an app that depends on this package never resolves it.
if Context.environment["FLAGSHIP_DOCS"] != nil {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}

// `make test` (FLAGSHIP_EXAMPLE=1) builds Examples/HummingbirdServer's program here, in the build
// with every trait, where SwiftNIO and the integrations are already compiled: the example's own
// package would compile them all a second time. Only then are Hummingbird and swift-prometheus
// dependencies. The example's manifest stays what a user copies; ExampleManifestTests keeps the
// two lists below equal to it, and `make example` builds it as its own package.
if Context.environment["FLAGSHIP_EXAMPLE"] != nil {
    package.dependencies += [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ]
    package.targets.append(.executableTarget(
        name: "HummingbirdServer",
        dependencies: [
            "Flagship",
            "FlagshipServiceLifecycle",
            "FlagshipMetrics",
            "FlagshipConfiguration",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Configuration", package: "swift-configuration"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Logging", package: "swift-log"),
        ],
        path: "Examples/HummingbirdServer/Sources/HummingbirdServer"
    ))
}

// The documentation's programs that import an integration, each verbatim in a main.swift of
// Examples/Documentation: compiled by `make build` too, rather than in the snippet package of the
// documentation tests, which would compile the integrations' dependencies a second time
// (DocumentationSnippetTests runs them offline).
if Context.environment["FLAGSHIP_EXAMPLE"] != nil {
    package.targets.append(.executableTarget(
        name: "RunningInAServer",
        dependencies: [
            "Flagship",
            "FlagshipLocalServer",
            "FlagshipServiceLifecycle",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
        ],
        path: "Examples/Documentation/RunningInAServer"
    ))
    package.targets.append(.executableTarget(
        name: "HitsInTransactions",
        dependencies: ["CSQLite", "Flagship", "FlagshipLocalServer"],
        path: "Examples/Documentation/HitsInTransactions"
    ))
}
