import FlagshipLocalServer
import FlagshipStore
import Logging
import Foundation
import XCTest

@testable import Flagship

/// Values collected from callbacks that run on SDK queues.
final class Collected<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [T] = []

    func append(_ value: T) {
        lock.lock()
        stored.append(value)
        lock.unlock()
    }

    var values: [T] {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}

/// A test's SDK: its own `Flagship` instance, a real local server on 127.0.0.1, a real SQLite
/// store in a temporary directory, and the log lines it wrote.
class SDKTestCase: XCTestCase {
    static let envId = "env_test"
    static let apiKey = "secret-api-key-0123456789"

    var server: LocalFlagshipServer!
    var directory: TemporaryDirectory!
    var log: LogCapture!
    var flagship: Flagship!
    let sdkStatuses = Collected<FSSdkStatus>()

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        log = LogCapture()
        server = LocalFlagshipServer(envId: Self.envId, apiKey: Self.apiKey, decision: .echoingVisitorId(Self.decision))
        try server.start()
        flagship = Flagship()
    }

    override func tearDown() async throws {
        await flagship?.close()
        server?.stop()
        directory?.remove()
    }

    /// A config pointing at the local server and the temporary store; hits are sent one by one.
    func configBuilder(timeout: TimeInterval = 2000, server: LocalFlagshipServer? = nil) -> FSConfigBuilder {
        let target = server ?? self.server!
        let statuses = sdkStatuses
        let capture = log!
        return FSConfigBuilder()
            .withDecisionBaseURL(target.decisionBaseURL)
            .withEventsBaseURL(target.eventsBaseURL)
            .withCacheDirectory(directory.url)
            .withTimeout(timeout)
            .withLogLevel(.ALL)
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 1, batchIntervalTimer: 60))
            .withOnSdkStatusChanged { statuses.append($0) }
            .withLogHandler { _ in capture.handler }
            // Send rounds are not spaced: most tests drive a manual clock, on which the spacing
            // would wait for an advance. `SendRoundSpacingTests` tests the spacing.
            .withTrackingSettings { $0.roundSpacing = 0 }
            // No visitor retention task: its wait would count among the waits that tests on a
            // manual or recording clock count (`waitForSleepers`, the soak's backoff waits).
            // `VisitorRetentionTests` turns it on.
            .withVisitorRetention(nil)
    }

    func start(_ builder: FSConfigBuilder? = nil) {
        flagship.start(envId: Self.envId, apiKey: Self.apiKey, config: (builder ?? configBuilder()).build())
    }

    /// Waits until every callback queued so far has run.
    func drainCallbacks() {
        Flagship.callbacks.sync {}
    }

    /// The database of the test's environment, opened read-only.
    func inspectStore() throws -> FlagshipDatabase {
        try FlagshipDatabase.openForInspection(at: StoreLocation.databaseFile(envId: Self.envId, in: directory.url))
    }

    /// The store's files (`file`, `file-wal`, `file-shm`) whose raw bytes hold `text`: every
    /// table, free space and old WAL frames included. `cacheDirectory`: the test's directory.
    func storeFilesHolding(_ text: String, cacheDirectory: URL? = nil) throws -> [String] {
        let database = StoreLocation.databaseFile(envId: Self.envId, in: cacheDirectory ?? directory.url)
        return try ["", "-wal", "-shm"].compactMap { suffix in
            let file = URL(fileURLWithPath: database.path + suffix)
            guard FileManager.default.fileExists(atPath: file.path) else { return nil }
            return try Data(contentsOf: file).range(of: Data(text.utf8)) == nil ? nil : "file" + suffix
        }
    }

    /// Two campaigns; `btnColor` is in both and the later one wins.
    static let decision: FSJSONValue = [
        "visitorId": "placeholder", "panic": false,
        "campaigns": [
            [
                "id": "c1", "name": "Campaign 1", "slug": "home-test", "type": "ab",
                "variationGroupId": "vg1", "variationGroupName": "VG 1",
                "variation": [
                    "id": "var1", "name": "Variation 1", "reference": false,
                    "modifications": ["type": "FLAG", "value": [
                        "btnColor": "green", "price": 9.99, "count": 3, "enabled": true, "nothing": nil,
                        "config": ["size": 2, "tags": ["a", "b"]], "list": [1, 2, 3], "whole": 4.0,
                    ]],
                ],
            ],
            [
                "id": "c2", "name": "Campaign 2", "type": "toggle",
                "variationGroupId": "vg2", "variationGroupName": "VG 2",
                "variation": [
                    "id": "var2", "name": "Variation 2", "reference": true,
                    "modifications": ["type": "JSON", "value": ["btnColor": "red", "banner": "summer"]],
                ],
            ],
        ],
    ]
}

extension LogCapture {
    /// A handler that writes into this capture.
    var handler: any LogHandler { logger.handler }

    /// Every line, for a search.
    var allText: String { entries.map(\.message).joined(separator: "\n") }

    /// Every line with all its event carried (metadata, source, error), for a search.
    var everything: String { entries.map { "\($0.level) \($0.message) \($0.details)" }.joined(separator: "\n") }
}
