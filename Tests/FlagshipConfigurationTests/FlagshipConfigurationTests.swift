#if Configuration
import Configuration
import Flagship
import FlagshipConfiguration
import Foundation
import XCTest

/// `FlagshipSettings(reading:)`: the SDK's settings from the environment (`FLAGSHIP_*`) and from a
/// JSON file, key by key, and what is refused.
final class FlagshipConfigurationTests: XCTestCase {
    private func settings(environment: [String: String]) throws -> FlagshipSettings {
        try FlagshipSettings(reading: ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: environment)))
    }

    func testEveryKeyIsReadFromItsEnvironmentVariable() throws {
        let settings = try settings(environment: [
            "FLAGSHIP_ENV_ID": "shop_env", "FLAGSHIP_API_KEY": "secret", "FLAGSHIP_MODE": "bucketing", "FLAGSHIP_TIMEOUT": "1500",
            "FLAGSHIP_DECISION_URL": "http://127.0.0.1:8080/v2", "FLAGSHIP_EVENTS_URL": "http://127.0.0.1:8080",
            "FLAGSHIP_BUCKETING_URL": "http://127.0.0.1:8081", "FLAGSHIP_POLLING_INTERVAL": "30", "FLAGSHIP_DB": "/var/lib/shop/flags.sqlite",
            "FLAGSHIP_CACHE_DIR": "/var/cache/shop", "FLAGSHIP_LOG_LEVEL": "error", "FLAGSHIP_TRACKING_STRATEGY": "periodic",
            "FLAGSHIP_TRACKING_POOL_MAX_SIZE": "50", "FLAGSHIP_TRACKING_BATCH_INTERVAL": "2.5", "FLAGSHIP_TRACKING_HIT_LIFETIME": "600",
            "FLAGSHIP_TRACKING_MAX_CACHED_HITS": "5000", "FLAGSHIP_VISITOR_RETENTION": "604800", "FLAGSHIP_MAX_CACHED_VISITORS": "250000",
        ])
        XCTAssertEqual(settings.envId, "shop_env")
        XCTAssertEqual(settings.apiKey, "secret")
        let config = settings.configBuilder().build()
        XCTAssertEqual(config.mode, .BUCKETING)
        XCTAssertEqual(config.timeout, 1500)
        XCTAssertEqual(config.decisionBaseURL.absoluteString, "http://127.0.0.1:8080/v2")
        XCTAssertEqual(config.eventsBaseURL.absoluteString, "http://127.0.0.1:8080")
        XCTAssertEqual(config.bucketingBaseURL.absoluteString, "http://127.0.0.1:8081")
        XCTAssertEqual(config.pollingInterval, 30)
        XCTAssertEqual(config.cacheFile?.path, "/var/lib/shop/flags.sqlite")
        XCTAssertEqual(config.cacheDirectory?.path, "/var/cache/shop")
        XCTAssertEqual(config.logLevel, .ERROR)
        XCTAssertEqual(config.trackingConfig.strategy, .PERIODIC_CACHING)
        XCTAssertEqual(config.trackingConfig.poolMaxSize, 50)
        XCTAssertEqual(config.trackingConfig.batchIntervalTimer, 2.5)
        XCTAssertEqual(config.trackingConfig.hitLifetime, 600)
        XCTAssertEqual(config.trackingConfig.maxCachedHits, 5000)
        XCTAssertEqual(config.visitorRetention, 604_800)
        XCTAssertEqual(config.maxCachedVisitors, 250_000)
    }

    func testAVisitorRetentionOfZeroKeepsVisitorsForEverAndABudgetAloneKeepsTheDefaultRetention() throws {
        let base = ["FLAGSHIP_ENV_ID": "e", "FLAGSHIP_API_KEY": "k"]
        let forever = try settings(environment: base.merging(["FLAGSHIP_VISITOR_RETENTION": "0"]) { $1 }).configBuilder().build()
        XCTAssertNil(forever.visitorRetention)
        XCTAssertNil(forever.maxCachedVisitors)

        let budget = try settings(environment: base.merging(["FLAGSHIP_MAX_CACHED_VISITORS": "1000"]) { $1 }).configBuilder().build()
        XCTAssertEqual(budget.visitorRetention, 30 * 86_400)
        XCTAssertEqual(budget.maxCachedVisitors, 1_000)
    }

    func testOnlyTheRequiredKeysGiveTheSDKsDefaults() throws {
        let config = try settings(environment: ["FLAGSHIP_ENV_ID": "e", "FLAGSHIP_API_KEY": "k"]).configBuilder().build()
        let defaults = FSConfigBuilder().build()
        XCTAssertEqual(config.mode, .DECISION_API)
        XCTAssertEqual(config.timeout, defaults.timeout)
        XCTAssertEqual(config.decisionBaseURL, defaults.decisionBaseURL)
        XCTAssertEqual(config.logLevel, defaults.logLevel)
        XCTAssertEqual(config.trackingConfig.maxCachedHits, defaults.trackingConfig.maxCachedHits)
        XCTAssertNil(config.cacheFile)
        XCTAssertEqual(config.visitorRetention, defaults.visitorRetention)
        XCTAssertEqual(defaults.visitorRetention, 30 * 86_400)
        XCTAssertNil(config.maxCachedVisitors)
    }

    func testAJSONFileNestsTheSameKeysAndTheEnvironmentTakesPrecedence() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-config-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"""
            {"flagship": {"envId": "from_file", "apiKey": "file_key", "mode": "api", "timeout": 900,
                          "tracking": {"poolMaxSize": 25, "batchInterval": 1}}}
            """#.utf8).write(to: file)
        let reader = ConfigReader(providers: [
            EnvironmentVariablesProvider(environmentVariables: ["FLAGSHIP_ENV_ID": "from_environment"]),
            // The file provider configured as a server would configure it: its path read from the environment.
            try await FileProvider<JSONSnapshot>(config: ConfigReader(provider: EnvironmentVariablesProvider(
                environmentVariables: ["FILE_PATH": file.path]))),
        ])
        let settings = try FlagshipSettings(reading: reader)
        XCTAssertEqual(settings.envId, "from_environment")
        XCTAssertEqual(settings.apiKey, "file_key")
        let config = settings.configBuilder().build()
        XCTAssertEqual(config.timeout, 900)
        XCTAssertEqual(config.trackingConfig.poolMaxSize, 25)
        XCTAssertEqual(config.trackingConfig.batchIntervalTimer, 1)
    }

    func testMissingAndUnusableValuesAreRefusedNamingTheKey() {
        let base = ["FLAGSHIP_ENV_ID": "e", "FLAGSHIP_API_KEY": "k"]
        let cases: [([String: String], FlagshipSettingsError)] = [
            (["FLAGSHIP_API_KEY": "k"], .missing(key: "flagship.envId")),
            (["FLAGSHIP_ENV_ID": "e"], .missing(key: "flagship.apiKey")),
            (base.merging(["FLAGSHIP_MODE": "fast"]) { $1 }, .invalid(key: "flagship.mode", value: "fast", expected: "api or bucketing")),
            (base.merging(["FLAGSHIP_TIMEOUT": "soon"]) { $1 }, .invalid(key: "flagship.timeout", value: "soon", expected: "a positive number")),
            (base.merging(["FLAGSHIP_DECISION_URL": "decision.example"]) { $1 },
             .invalid(key: "flagship.decisionUrl", value: "decision.example", expected: "an absolute http or https URL")),
            (base.merging(["FLAGSHIP_VISITOR_RETENTION": "-1"]) { $1 },
             .invalid(key: "flagship.visitorRetention", value: "-1.0", expected: "a number of seconds, 0 or more")),
            (base.merging(["FLAGSHIP_VISITOR_RETENTION": "a month"]) { $1 },
             .invalid(key: "flagship.visitorRetention", value: "a month", expected: "a number of seconds, 0 or more")),
            (base.merging(["FLAGSHIP_MAX_CACHED_VISITORS": "0"]) { $1 },
             .invalid(key: "flagship.maxCachedVisitors", value: "0", expected: "a positive whole number")),
            (base.merging(["FLAGSHIP_TRACKING_POOL_MAX_SIZE": "0"]) { $1 },
             .invalid(key: "flagship.tracking.poolMaxSize", value: "0", expected: "a positive whole number")),
        ]
        for (environment, expected) in cases {
            XCTAssertThrowsError(try settings(environment: environment), "\(environment)") { error in
                XCTAssertEqual(error as? FlagshipSettingsError, expected)
            }
        }
        XCTAssertThrowsError(try settings(environment: base.merging(["FLAGSHIP_LOG_LEVEL": "loud"]) { $1 })) { error in
            guard let error = error as? FlagshipSettingsError, error.code == .invalid else { return XCTFail("\(error)") }
            XCTAssertEqual(error.key, "flagship.logLevel")
            XCTAssertEqual(error.value, "loud")
        }
    }

    /// The error is a struct with a code to switch on (a `default` for codes added later), its
    /// details as properties, and the same log line as when it was an enum.
    func testTheSettingsErrorHasACodeToSwitchOnItsDetailsAndItsLine() {
        func kind(_ error: FlagshipSettingsError) -> String {
            switch error.code {
            case .missing: "missing"
            case .invalid: "invalid"
            default: "unknown"
            }
        }
        let missing = FlagshipSettingsError.missing(key: "flagship.envId")
        let invalid = FlagshipSettingsError.invalid(key: "flagship.mode", value: "fast", expected: "api or bucketing")

        XCTAssertEqual(kind(missing), "missing")
        XCTAssertEqual(kind(invalid), "invalid")
        XCTAssertEqual(missing.description, "the Flagship setting flagship.envId is missing")
        XCTAssertEqual(invalid.description, "the Flagship setting flagship.mode is 'fast': expected api or bucketing")
        XCTAssertEqual([missing.key, missing.value, missing.expected], ["flagship.envId", nil, nil])
        XCTAssertEqual([invalid.key, invalid.value, invalid.expected], ["flagship.mode", "fast", "api or bucketing"])

        XCTAssertTrue(missing.code == .missing)
        XCTAssertEqual(invalid.code, FlagshipSettingsError.Code.invalid)
        XCTAssertNotEqual(FlagshipSettingsError.Code.missing, .invalid)
        XCTAssertEqual(Set([missing.code, invalid.code, FlagshipSettingsError.missing(key: "other").code]).count, 2)
        XCTAssertEqual("\(FlagshipSettingsError.Code.missing) \(FlagshipSettingsError.Code.invalid)", "missing invalid")
        XCTAssertEqual(missing, .missing(key: "flagship.envId"))
        XCTAssertNotEqual(missing, .missing(key: "flagship.apiKey"))
    }
}
#endif
