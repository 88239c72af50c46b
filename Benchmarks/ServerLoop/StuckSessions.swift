import BenchSQLite
import BenchSupport
import Benchmark
import Flagship
import FlagshipLocalServer
import Foundation

/// What used to hold `close()` past its 5 s deadline.
enum CloseScenario: String, CaseIterable, Sendable {
    case batchInFlight = "a batch in flight to a server that never answers"
    case storeLocked = "the store locked by another connection, a hit waiting to be written"
    case customCacheBlocked = "a custom hit cache whose cacheHits does not return"

    /// An SDK started and held up by this scenario, ready for `close()`.
    func prepare() async throws -> StuckSDK {
        let server = LocalFlagshipServer(envId: ServerLoop.envId, apiKey: ServerLoop.apiKey)
        try server.start()
        let directory = try TemporaryDirectory()
        let storeFile = directory.url.appendingPathComponent("flagship.sqlite")
        let cache = BlockingHitCache()
        var builder = FSConfigBuilder()
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(storeFile)
            .withLogLevel(.NONE)
        if self == .customCacheBlocked { builder = builder.withCacheManager(FSCacheManager(nil, cache)) }
        let flagship = Flagship.sharedInstance
        flagship.start(envId: ServerLoop.envId, apiKey: ServerLoop.apiKey, config: builder.build())
        let visitor = await flagship.newVisitor(visitorId: "stuck", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "purchase")
        var holder: OpaquePointer?
        switch self {
        case .batchInFlight:
            _ = server.injectFault(.latency(.seconds(120)), on: .events)
            try await visitor.sendHit(event)
            try await waitUntil { !server.received(.events).isEmpty }
        case .storeLocked:
            try await visitor.sendHit(event)
            await flagship.flushCaches()
            guard sqlite3_open_v2(storeFile.path, &holder, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else {
                throw FixtureError(description: "cannot open the store")
            }
            sqlite3_exec(holder, "BEGIN IMMEDIATE", nil, nil, nil)
            visitor.sendHitInBackground(event)
        case .customCacheBlocked:
            visitor.sendHitInBackground(event)
            try await waitUntil { cache.entered }
        }
        let locked = holder.map(SQLiteHandle.init)
        return StuckSDK(flagship: flagship) {
            if let locked {
                sqlite3_exec(locked.handle, "ROLLBACK", nil, nil, nil)
                sqlite3_close_v2(locked.handle)
            }
            cache.release()
            server.stop()
            directory.remove()
        }
    }

    private func waitUntil(_ condition: @Sendable () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(10)
        while !condition() {
            guard Date() < deadline else { throw FixtureError(description: "\(rawValue): not set up within 10 s") }
            try await Task.sleep(nanoseconds: 2_000_000)
        }
    }
}

/// A raw connection handed to a cleanup closure.
struct SQLiteHandle: @unchecked Sendable {
    // `@unchecked`: used by the closure that made it, then by the cleanup, never at once.
    let handle: OpaquePointer
}

/// An SDK held up by a `CloseScenario`, and how to let go of what holds it.
struct StuckSDK: Sendable {
    let flagship: Flagship
    let release: @Sendable () -> Void
}

/// A custom hit cache whose `cacheHits` waits until released.
final class BlockingHitCache: FSHitCacheDelegate, Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let state = Locked(false)

    var entered: Bool { state.withLock { $0 } }

    func release() {
        gate.signal()
    }

    func cacheHits(hits: [String: [String: Any]]) {
        state.withLock { $0 = true }
        gate.wait()
        gate.signal()
    }

    func lookupHits() -> [String: [String: Any]] { [:] }
    func flushHits(hitIds: [String]) {}
    func flushAllHits() {}
}

/// Visitors decided in bucketing mode and not exposed yet, the store then locked by another
/// connection: each read of the benchmark is a first read, which reports an exposure.
final class LockedReadSession: Sendable {
    static let visitors = 2_100

    private let server: LocalFlagshipServer
    private let directory: TemporaryDirectory
    private let flagship: Flagship
    private let ready: [FSVisitor]
    private let holder: SQLiteHandle
    private let cursor = Locked(0)

    private init(server: LocalFlagshipServer, directory: TemporaryDirectory, flagship: Flagship, ready: [FSVisitor], holder: SQLiteHandle) {
        self.server = server
        self.directory = directory
        self.flagship = flagship
        self.ready = ready
        self.holder = holder
    }

    static func start(fixture: ServerLoopFixture) async throws -> LockedReadSession {
        let server = LocalFlagshipServer(envId: ServerLoop.envId, apiKey: ServerLoop.apiKey)
        try server.setBucketingFile(fixture.json)
        try server.start()
        let directory = try TemporaryDirectory()
        let storeFile = directory.url.appendingPathComponent("flagship.sqlite")
        let config = FSConfigBuilder().Bucketing()
            .withBucketingBaseURL(server.bucketingBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(storeFile)
            .withLogLevel(.NONE)
            .build()
        let flagship = Flagship.sharedInstance
        flagship.start(envId: ServerLoop.envId, apiKey: ServerLoop.apiKey, config: config)
        var ready: [FSVisitor] = []
        for index in 0..<visitors {
            let visitor = await flagship.newVisitor(visitorId: "reader-\(index)", hasConsented: true, instanceType: .NEW_INSTANCE)
                .withContext(context: ServerLoopFixture.context(index: index))
                .buildAsync()
            try await visitor.fetchFlags()
            ready.append(visitor)
        }
        await flagship.flushCaches()
        var handle: OpaquePointer?
        guard sqlite3_open_v2(storeFile.path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let handle else {
            throw FixtureError(description: "cannot open the store")
        }
        sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil)
        return LockedReadSession(server: server, directory: directory, flagship: flagship, ready: ready, holder: SQLiteHandle(handle: handle))
    }

    /// The next visitor whose flag was never read.
    func next() -> FSVisitor {
        let index = cursor.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        return ready[index % ready.count]
    }

    func stop() async {
        sqlite3_exec(holder.handle, "ROLLBACK", nil, nil, nil)
        sqlite3_close_v2(holder.handle)
        await flagship.close()
        server.stop()
        directory.remove()
    }
}
