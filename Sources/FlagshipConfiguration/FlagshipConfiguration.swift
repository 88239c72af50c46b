#if Configuration
import Configuration
import Flagship
import Foundation

/// The SDK's settings as a server reads the rest of its configuration: from a swift-configuration
/// `ConfigReader` (environment variables, a JSON file, several providers in order of precedence),
/// under the `flagship` scope.
///
/// | key | environment variable | value | default |
/// |---|---|---|---|
/// | `flagship.envId` | `FLAGSHIP_ENV_ID` | the environment id | required |
/// | `flagship.apiKey` | `FLAGSHIP_API_KEY` | the API key (read as a secret) | required |
/// | `flagship.mode` | `FLAGSHIP_MODE` | `api` or `bucketing` | `api` |
/// | `flagship.timeout` | `FLAGSHIP_TIMEOUT` | Decision API timeout, milliseconds | 2000 |
/// | `flagship.decisionUrl` | `FLAGSHIP_DECISION_URL` | the Decision API base, `/v2` included | Flagship's |
/// | `flagship.eventsUrl` | `FLAGSHIP_EVENTS_URL` | the events base | Flagship's |
/// | `flagship.bucketingUrl` | `FLAGSHIP_BUCKETING_URL` | the bucketing file's base | Flagship's |
/// | `flagship.pollingInterval` | `FLAGSHIP_POLLING_INTERVAL` | seconds between bucketing downloads | 60 |
/// | `flagship.db` | `FLAGSHIP_DB` | the store file | `<cacheDir>/flagship-<envId>.sqlite` |
/// | `flagship.cacheDir` | `FLAGSHIP_CACHE_DIR` | the store's directory | `$XDG_CACHE_HOME/flagship`, else `~/.cache/flagship` |
/// | `flagship.logLevel` | `FLAGSHIP_LOG_LEVEL` | `NONE`, `EXCEPTIONS`, `ERROR`, `WARNING`, `DEBUG`, `INFO`, `ALL` | `WARNING` |
/// | `flagship.visitorRetention` | `FLAGSHIP_VISITOR_RETENTION` | seconds a visitor not seen is kept; 0: for ever | 2592000 (30 days) |
/// | `flagship.maxCachedVisitors` | `FLAGSHIP_MAX_CACHED_VISITORS` | visitors kept at most, least recently seen evicted | no limit |
/// | `flagship.tracking.strategy` | `FLAGSHIP_TRACKING_STRATEGY` | `continuous` or `periodic` | `continuous` |
/// | `flagship.tracking.poolMaxSize` | `FLAGSHIP_TRACKING_POOL_MAX_SIZE` | hits that make a batch | 10 |
/// | `flagship.tracking.batchInterval` | `FLAGSHIP_TRACKING_BATCH_INTERVAL` | seconds between batches | 5 |
/// | `flagship.tracking.hitLifetime` | `FLAGSHIP_TRACKING_HIT_LIFETIME` | seconds an unsent hit is kept | 14400 |
/// | `flagship.tracking.maxCachedHits` | `FLAGSHIP_TRACKING_MAX_CACHED_HITS` | the hit cache's capacity | 100000 |
///
/// ```swift
/// let reader = ConfigReader(providers: [EnvironmentVariablesProvider(), try await FileProvider<JSONSnapshot>(filePath: "config.json")])
/// let settings = try FlagshipSettings(reading: reader)
/// Flagship.sharedInstance.start(envId: settings.envId, apiKey: settings.apiKey, config: settings.configBuilder().build())
/// ```
public struct FlagshipSettings: Sendable {
    /// `flagship.envId`: the environment id, for `Flagship.start`.
    public let envId: String
    /// `flagship.apiKey`: the API key, for `Flagship.start`.
    public let apiKey: String
    private let apply: @Sendable (FSConfigBuilder) -> Void

    /// Reads the `flagship` keys of `reader`.
    ///
    /// - Throws: ``FlagshipSettingsError`` with code `.missing` when the env id or the API key is
    ///   absent, and `.invalid` for a value that cannot be used (an unknown mode, a URL that is not absolute…),
    ///   naming the key: a server fails at start rather than running on a default it did not choose.
    public init(reading reader: ConfigReader) throws(FlagshipSettingsError) {
        let flagship = reader.scoped(to: "flagship")
        guard let envId = flagship.string(forKey: "envId"), !envId.isEmpty else { throw .missing(key: "flagship.envId") }
        guard let apiKey = flagship.string(forKey: "apiKey", isSecret: true), !apiKey.isEmpty else {
            throw .missing(key: "flagship.apiKey")
        }
        self.envId = envId
        self.apiKey = apiKey

        let mode = try Self.choice(flagship, "mode", ["api": true, "bucketing": false], default: true)
        let timeout = try Self.positive(flagship, "timeout")
        let decisionURL = try Self.url(flagship, "decisionUrl")
        let eventsURL = try Self.url(flagship, "eventsUrl")
        let bucketingURL = try Self.url(flagship, "bucketingUrl")
        let pollingInterval = try Self.positive(flagship, "pollingInterval")
        let db = flagship.string(forKey: "db").map { URL(fileURLWithPath: $0) }
        let cacheDir = flagship.string(forKey: "cacheDir").map { URL(fileURLWithPath: $0, isDirectory: true) }
        let levels = Dictionary(uniqueKeysWithValues: FSLevel.allCases.map { ("\($0)", $0) })
        let logLevel: FSLevel? = try flagship.string(forKey: "logLevel").map { text throws(FlagshipSettingsError) in
            guard let level = levels[text.uppercased()] else {
                throw .invalid(key: "flagship.logLevel", value: text, expected: levels.keys.sorted().joined(separator: ", "))
            }
            return level
        }
        let visitorRetention = try Self.nonNegative(flagship, "visitorRetention")
        let maxCachedVisitors = try Self.positiveInt(flagship, "maxCachedVisitors", scope: "flagship")
        let tracking = flagship.scoped(to: "tracking")
        let continuous = try Self.choice(tracking, "strategy", ["continuous": true, "periodic": false], default: true, scope: "flagship.tracking")
        let poolMaxSize = try Self.positiveInt(tracking, "poolMaxSize", scope: "flagship.tracking")
        let batchInterval = try Self.positive(tracking, "batchInterval", scope: "flagship.tracking")
        let hitLifetime = try Self.positive(tracking, "hitLifetime", scope: "flagship.tracking")
        let maxCachedHits = try Self.positiveInt(tracking, "maxCachedHits", scope: "flagship.tracking")
        let trackingConfig = FSTrackingManagerConfig(
            poolMaxSize: poolMaxSize ?? 10, batchIntervalTimer: batchInterval ?? 5,
            strategy: continuous ? .CONTINUOUS_CACHING : .PERIODIC_CACHING,
            hitLifetime: hitLifetime ?? 4 * 3600, maxCachedHits: maxCachedHits ?? 100_000)

        apply = { builder in
            if mode { builder.DecisionApi() } else { builder.Bucketing() }
            if let timeout { builder.withTimeout(timeout) }
            if let decisionURL { builder.withDecisionBaseURL(decisionURL) }
            if let eventsURL { builder.withEventsBaseURL(eventsURL) }
            if let bucketingURL { builder.withBucketingBaseURL(bucketingURL) }
            if let pollingInterval { builder.withBucketingPollingIntervals(pollingInterval) }
            if let cacheDir { builder.withCacheDirectory(cacheDir) }
            if let db { builder.withCacheFile(db) }
            if let logLevel { builder.withLogLevel(logLevel) }
            builder.withTrackingManagerConfig(trackingConfig)
            if visitorRetention != nil || maxCachedVisitors != nil {
                // 0 keeps visitors for ever; absent, the SDK's default.
                builder.withVisitorRetention(visitorRetention ?? FlagshipConfig.defaultVisitorRetention, maxVisitors: maxCachedVisitors)
            }
        }
    }

    /// A builder with every setting read; add what a configuration file cannot hold (callbacks,
    /// a logger, an instrumentation) before `build()`.
    public func configBuilder() -> FSConfigBuilder {
        let builder = FSConfigBuilder()
        apply(builder)
        return builder
    }

    // MARK: Reading one value

    private static func choice<T>(_ reader: ConfigReader, _ key: String, _ choices: [String: T], default value: T,
                                  scope: String = "flagship") throws(FlagshipSettingsError) -> T {
        guard let text = reader.string(forKey: ConfigKey(key)) else { return value }
        guard let chosen = choices[text.lowercased()] else {
            throw .invalid(key: "\(scope).\(key)", value: text, expected: choices.keys.sorted().joined(separator: " or "))
        }
        return chosen
    }

    /// A number, whether the provider holds it as a number (a JSON file) or as text (the
    /// environment); present but not a positive number: refused.
    private static func positive(_ reader: ConfigReader, _ key: String, scope: String = "flagship") throws(FlagshipSettingsError) -> Double? {
        let configKey = ConfigKey(key)
        let number = reader.double(forKey: configKey) ?? reader.int(forKey: configKey).map(Double.init)
        if let number, number.isFinite, number > 0 { return number }
        if let number { throw .invalid(key: "\(scope).\(key)", value: "\(number)", expected: "a positive number") }
        if let text = reader.string(forKey: configKey) { throw .invalid(key: "\(scope).\(key)", value: text, expected: "a positive number") }
        return nil
    }

    /// As `positive`, 0 allowed (a setting whose 0 means "none").
    private static func nonNegative(_ reader: ConfigReader, _ key: String, scope: String = "flagship") throws(FlagshipSettingsError) -> Double? {
        let configKey = ConfigKey(key)
        let number = reader.double(forKey: configKey) ?? reader.int(forKey: configKey).map(Double.init)
        if let number, number.isFinite, number >= 0 { return number }
        if let number { throw .invalid(key: "\(scope).\(key)", value: "\(number)", expected: "a number of seconds, 0 or more") }
        if let text = reader.string(forKey: configKey) { throw .invalid(key: "\(scope).\(key)", value: text, expected: "a number of seconds, 0 or more") }
        return nil
    }

    private static func positiveInt(_ reader: ConfigReader, _ key: String, scope: String) throws(FlagshipSettingsError) -> Int? {
        let configKey = ConfigKey(key)
        let number = reader.int(forKey: configKey)
            ?? reader.double(forKey: configKey).flatMap { $0.rounded() == $0 && abs($0) < 1e15 ? Int($0) : nil }
        if let number, number > 0 { return number }
        if let number { throw .invalid(key: "\(scope).\(key)", value: "\(number)", expected: "a positive whole number") }
        if let text = reader.string(forKey: configKey) ?? reader.double(forKey: configKey).map({ "\($0)" }) {
            throw .invalid(key: "\(scope).\(key)", value: text, expected: "a positive whole number")
        }
        return nil
    }

    private static func url(_ reader: ConfigReader, _ key: String) throws(FlagshipSettingsError) -> URL? {
        guard let text = reader.string(forKey: ConfigKey(key)) else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else {
            throw .invalid(key: "flagship.\(key)", value: text, expected: "an absolute http or https URL")
        }
        return url
    }
}

/// Why `FlagshipSettings(reading:)` refused the settings: a required key is absent, or a key holds
/// a value that cannot be used. A struct with a ``code`` to switch on and the details as properties
/// (``key``, ``value``, ``expected``), as async-http-client's and postgres-nio's errors are: a new
/// code is a new static member, not a breaking change, and a `switch` needs a `default`.
/// ``description`` is the line to log.
///
/// ```swift
/// do {
///     _ = try FlagshipSettings(reading: reader)
/// } catch {
///     switch error.code {
///     case .missing: print("set", error.key ?? "", "before starting")
///     case .invalid: print(error.key ?? "", "must be", error.expected ?? "something else")
///     default: print(error)
///     }
/// }
/// ```
public struct FlagshipSettingsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of error, to switch on.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Base: String, Sendable, Hashable {
            case missing, invalid
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A required key (`flagship.envId`, `flagship.apiKey`) is absent or empty: ``FlagshipSettingsError/key`` names it.
        public static let missing = Code(.missing)
        /// A key holds a value that cannot be used: ``FlagshipSettingsError/key``,
        /// ``FlagshipSettingsError/value`` and ``FlagshipSettingsError/expected`` say which, what
        /// it holds and what it may hold.
        public static let invalid = Code(.invalid)

        /// The code's name as written here (`missing`, `invalid`), for a log.
        public var description: String { base.rawValue }
    }

    /// What kind of error this is.
    public let code: Code
    /// The setting's full key, scope included (`flagship.envId`, `flagship.tracking.poolMaxSize`);
    /// set for ``Code/missing`` and ``Code/invalid``.
    public let key: String?
    /// The value the key holds, as read (``Code/invalid``), `nil` for any other code.
    public let value: String?
    /// What the key may hold, as a phrase (`a positive number`, `api or bucketing`) (``Code/invalid``),
    /// `nil` for any other code.
    public let expected: String?
    /// The key, and for an invalid value the value and what was expected, as one line for a log.
    public let description: String

    private init(code: Code, key: String?, value: String? = nil, expected: String? = nil, description: String) {
        self.code = code
        self.key = key
        self.value = value
        self.expected = expected
        self.description = description
    }

    /// A required key is absent or empty (``Code/missing``).
    public static func missing(key: String) -> FlagshipSettingsError {
        FlagshipSettingsError(code: .missing, key: key, description: "the Flagship setting \(key) is missing")
    }

    /// A key holds a value that cannot be used (``Code/invalid``); `expected` says what can.
    public static func invalid(key: String, value: String, expected: String) -> FlagshipSettingsError {
        FlagshipSettingsError(code: .invalid, key: key, value: value, expected: expected,
                              description: "the Flagship setting \(key) is '\(value)': expected \(expected)")
    }
}
#endif
