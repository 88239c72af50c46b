import BenchSupport
import Flagship
import FlagshipLocalServer
import Foundation

/// `Flagship.sharedInstance` started on a cache file in a directory of its own, with one visitor
/// (consented, so building it sends its consent hit). One session at a time: the SDK is shared.
final class SDKSession {
    static let envId = "bench_env"
    static let apiKey = "bench_key"

    let directory: TemporaryDirectory
    let visitor: FSVisitor

    var cacheFile: URL { Self.cacheFile(in: directory) }

    /// Starts the SDK on `directory` (a new one unless given) against `endpoints`.
    init(directory: TemporaryDirectory? = nil, endpoints: Endpoints, tracking: FSTrackingManagerConfig) throws {
        self.directory = try directory ?? TemporaryDirectory()
        Self.start(cacheFile: Self.cacheFile(in: self.directory), endpoints: endpoints, tracking: tracking)
        visitor = Flagship.sharedInstance.newVisitor(visitorId: "v", hasConsented: true, instanceType: .NEW_INSTANCE).build()
    }

    /// Starts the SDK alone, without a visitor: what a process restarting on a full cache does.
    static func start(cacheFile: URL, endpoints: Endpoints, tracking: FSTrackingManagerConfig) {
        let config = FSConfigBuilder()
            .withCacheFile(cacheFile)
            .withDecisionBaseURL(endpoints.decision)
            .withEventsBaseURL(endpoints.events)
            .withTrackingManagerConfig(tracking)
            .withLogLevel(.NONE)
            .build()
        Flagship.sharedInstance.start(envId: envId, apiKey: apiKey, config: config)
    }

    static func cacheFile(in directory: TemporaryDirectory) -> URL {
        directory.url.appendingPathComponent("flagship.sqlite")
    }

    /// The rows in the cache file: the SDK must be closed (or every hit known committed).
    func cachedRows() throws -> Int {
        try RawHitTable.count(inDatabaseAt: cacheFile.path)
    }
}

/// Where the SDK sends: a local server, or nowhere.
struct Endpoints {
    let decision: URL
    let events: URL

    init(_ server: LocalFlagshipServer) {
        decision = server.decisionBaseURL
        events = server.eventsBaseURL
    }

    /// A port on 127.0.0.1 that nobody listens on (a local server bound it, then stopped): every
    /// connection is refused at once, as with the network down, and the SDK backs off.
    static func networkDown() throws -> Endpoints {
        let server = LocalFlagshipServer(envId: SDKSession.envId, apiKey: SDKSession.apiKey)
        try server.start()
        defer { server.stop() }
        return Endpoints(server)
    }
}

/// `count` hits sent without waiting, as a bulk sender sends them: every 1,000th awaits its commit.
/// Hits nobody awaits are dropped past 20,000 waiting for the disk (README, "Accepted, then
/// committed"), and a loop can queue them faster than any disk takes them: the awaited one keeps
/// the loop within that bound, so that every hit is kept and the rate is the writer's.
func sendWithoutWaiting(_ hit: FSEvent, count: Int, from visitor: FSVisitor) async throws {
    for number in 1...count {
        if number % 1_000 == 0 {
            try await visitor.sendHit(hit)
        } else {
            visitor.sendHitInBackground(hit)
        }
    }
}
