// swift-tools-version: 6.1
import PackageDescription

// An HTTP service that serves a visitor's flags, as a server developer would write it:
// Hummingbird for HTTP, the SDK run by swift-service-lifecycle, its metrics in Prometheus's text
// format, every setting read from the environment with swift-configuration. Its own package,
// depending on this repository by path.
let package = Package(
    name: "HummingbirdServer",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The traits bring the integrations this server uses (and their dependencies): without
        // them, FlagshipServiceLifecycle, FlagshipMetrics and FlagshipConfiguration are empty.
        .package(name: "flagship-swift-linux", path: "../..", traits: ["ServiceLifecycle", "Metrics", "Configuration"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "HummingbirdServer",
            dependencies: [
                .product(name: "Flagship", package: "flagship-swift-linux"),
                .product(name: "FlagshipServiceLifecycle", package: "flagship-swift-linux"),
                .product(name: "FlagshipMetrics", package: "flagship-swift-linux"),
                .product(name: "FlagshipConfiguration", package: "flagship-swift-linux"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
