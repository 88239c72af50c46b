import FlagshipLocalServer
import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship

/// A unique directory under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("flagship-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Log lines kept in memory, so tests can assert what the SDK said.
final class LogCapture: @unchecked Sendable {
    struct Entry: Equatable {
        let level: Logger.Level
        let message: String
        /// The rest of the event, as text: source, metadata (the logger's and the event's), error.
        var details = ""
    }

    private let lock = NSLock()
    private var stored: [Entry] = []

    var entries: [Entry] {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }

    func messages(at level: Logger.Level) -> [String] {
        entries.filter { $0.level == level }.map(\.message)
    }

    var logger: Logger {
        Logger(label: "io.flagship") { _ in CapturingHandler(capture: self) }
    }

    fileprivate func append(_ entry: Entry) {
        lock.lock()
        stored.append(entry)
        lock.unlock()
    }
}

private struct CapturingHandler: LogHandler {
    let capture: LogCapture
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let allMetadata = metadata.merging(event.metadata ?? [:]) { $1 }
        let details = "\(event.source) \(allMetadata) \(event.error.map { "\($0)" } ?? "")"
        capture.append(LogCapture.Entry(level: event.level, message: event.message.description, details: details))
    }
}

/// A clock the test moves by hand.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = Date(timeIntervalSince1970: 1_763_700_000)) {
        current = start
    }

    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func advance(by interval: TimeInterval) {
        lock.lock()
        current += interval
        lock.unlock()
    }

    var function: @Sendable () -> Date { { self.now } }
}

/// The conformance data of the official SDKs, read in place: `$FLAGSHIP_CONFORMANCE_DIR`, else
/// `../shared/conformance` beside the package. Tests that need it skip, saying so, without it
/// (or fail, when `FLAGSHIP_REQUIRE_SHARED=1`).
enum Conformance {
    static var directory: URL? {
        if let path = ProcessInfo.processInfo.environment["FLAGSHIP_CONFORMANCE_DIR"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        let shared = SharedData.besidePackage("conformance")
        return FileManager.default.fileExists(atPath: shared.path) ? shared : nil
    }

    /// A fixture's bytes. Absent, the test skips with a notice, or fails when `FLAGSHIP_REQUIRE_SHARED=1`.
    static func fixture(_ name: String) throws -> Data {
        let path = "fixtures/\(name)"
        let found = try SharedData.require(directory ?? SharedData.besidePackage("conformance"), holding: path,
                                           what: "Conformance fixture \(name)",
                                           setting: "FLAGSHIP_CONFORMANCE_DIR, or put shared/ beside the package")
        return try Data(contentsOf: found.appendingPathComponent(path))
    }
}

/// Data shared beside the package (`../shared/`): conformance cases, the reference documents.
enum SharedData {
    /// The package's root directory, from this file's path.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared/<folder>` beside the package.
    static func besidePackage(_ folder: String) -> URL {
        packageRoot.deletingLastPathComponent().appendingPathComponent("shared", isDirectory: true)
            .appendingPathComponent(folder, isDirectory: true)
    }

    /// `directory` when it holds `marker`. Otherwise the test skips with a notice saying where it
    /// looked, or fails when `FLAGSHIP_REQUIRE_SHARED=1` (CI, where skipping would hide that
    /// nothing was checked).
    static func require(_ directory: URL, holding marker: String, what: String, setting: String) throws -> URL {
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent(marker).path) {
            return directory
        }
        let notice = "\(what) not found at \(directory.path) (set \(setting))"
        if ProcessInfo.processInfo.environment["FLAGSHIP_REQUIRE_SHARED"] == "1" {
            throw MissingSharedData(description: notice + "; FLAGSHIP_REQUIRE_SHARED=1 makes this a failure")
        }
        throw XCTSkip(notice + "; not checked")
    }
}

/// Where `swift build` put the products of the build that made this test bundle.
enum BuiltProducts {
    /// The test runner's own directory, recognised by the `flagship` executable in it.
    static func directory() throws -> URL {
        let candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
            + Bundle.allBundles.filter { $0.bundlePath.hasSuffix(".xctest") }.map { $0.bundleURL.deletingLastPathComponent() }
        guard let directory = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("flagship").path) }) else {
            throw OfflineSandbox.Failure(description: "no flagship executable in \(candidates.map(\.path)); build it (swift build --build-tests)")
        }
        return directory
    }
}

/// Shared data not found while `FLAGSHIP_REQUIRE_SHARED=1` says it must be there.
struct MissingSharedData: Error, CustomStringConvertible {
    let description: String
}

/// A hit cache document as a custom cache receives it.
func hitDictionary(visitorId: String = "v1", type: String = "EVENT", time: Int64, content: [String: Any]? = nil) -> [String: Any] {
    [
        "version": 1,
        "data": [
            "visitorId": visitorId,
            "anonymousId": NSNull(),
            "type": type,
            "time": time,
            "content": content ?? ["t": type, "vid": visitorId, "ec": "Action Tracking", "ea": "click", "ds": "APP", "cid": "env"],
        ] as [String: Any],
    ]
}

func consentHitDictionary(visitorId: String, time: Int64) -> [String: Any] {
    hitDictionary(visitorId: visitorId, type: "EVENT", time: time, content: [
        "t": "EVENT", "vid": visitorId, "ec": "User Engagement", "ea": "fs_consent", "el": "swift:false", "ds": "APP", "cid": "env",
    ])
}

/// JSON text of a Foundation value with sorted keys: equal values, equal text.
func canonicalJSON(_ value: Any) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
}

/// A test of the SDK's network layer against a real local server on 127.0.0.1, with a transport
/// of its own. Subclasses say which server with `makeServer()`.
class LocalServerTestCase: XCTestCase {
    var server: LocalFlagshipServer!
    var transport: URLSessionTransport!

    func makeServer() -> LocalFlagshipServer {
        LocalFlagshipServer(envId: "env", apiKey: "key")
    }

    override func setUpWithError() throws {
        server = makeServer()
        try server.start()
        transport = URLSessionTransport()
    }

    override func tearDown() {
        transport.shutdown()
        server.stop()
        super.tearDown()
    }
}
