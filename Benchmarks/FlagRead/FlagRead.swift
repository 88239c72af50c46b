import BenchSupport
import Benchmark
import Flagship
import FlagshipLocalServer
import Foundation

/// A flag read as an app makes it, `visitor.getFlag(key:).value(defaultValue:)`, on a visitor
/// whose flags were fetched from the local server, beside the floor it is judged against: one
/// lookup in a `[String: Any]` behind an `NSLock`, measured in the same run.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        timeUnits: .nanoseconds,
        warmupIterations: 10_000,
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )

    let baseline = LockedDictionary(["btnColor": "green", "btnSize": 14, "price": 9.99, "showBanner": true])
    Benchmark("baseline: locked [String: Any] lookup, as String") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(baseline.value(forKey: "btnColor") as? String ?? "blue")
        }
    }

    let session = Box<FlagSession>()
    Benchmark("getFlag(key:).value(defaultValue:), exposed already") { (benchmark: Benchmark, visitor: FSVisitor) in
        for _ in benchmark.scaledIterations {
            blackHole(visitor.getFlag(key: "btnColor").value(defaultValue: "blue"))
        }
    } setup: {
        try await FlagSession.start(into: session)
    } teardown: {
        await session.value?.stop()
    }

    Benchmark("getFlag(key:).value(defaultValue:visitorExposed: false)") { (benchmark: Benchmark, visitor: FSVisitor) in
        for _ in benchmark.scaledIterations {
            blackHole(visitor.getFlag(key: "btnColor").value(defaultValue: "blue", visitorExposed: false))
        }
    } setup: {
        try await FlagSession.start(into: session)
    } teardown: {
        await session.value?.stop()
    }

    // Issue 22: the same read with its explanation (reason, variation, campaign), beside the
    // plain read above, in the same run.
    Benchmark("getFlag(key:).details(defaultValue:), exposed already") { (benchmark: Benchmark, visitor: FSVisitor) in
        for _ in benchmark.scaledIterations {
            blackHole(visitor.getFlag(key: "btnColor").details(defaultValue: "blue"))
        }
    } setup: {
        try await FlagSession.start(into: session)
    } teardown: {
        await session.value?.stop()
    }

    // Issue 34: the plain read above is the read of an SDK without hooks; the same read with one
    // hook that does nothing shows what a hook costs, in the same run.
    Benchmark("getFlag(key:).value(defaultValue:), one no-op hook, exposed already") { (benchmark: Benchmark, visitor: FSVisitor) in
        for _ in benchmark.scaledIterations {
            blackHole(visitor.getFlag(key: "btnColor").value(defaultValue: "blue"))
        }
    } setup: {
        try await FlagSession.start(into: session, hooks: [NoOpHook()])
    } teardown: {
        await session.value?.stop()
    }

    Benchmark("getFlag(key:).value(defaultValue:) as Int, exposed already") { (benchmark: Benchmark, visitor: FSVisitor) in
        for _ in benchmark.scaledIterations {
            blackHole(visitor.getFlag(key: "btnSize").value(defaultValue: 12))
        }
    } setup: {
        try await FlagSession.start(into: session)
    } teardown: {
        await session.value?.stop()
    }
}

/// A hook with every stage left to its default: the cost of running hooks, not of their work.
struct NoOpHook: FlagshipHook {}

/// The floor: what any thread-safe flag store pays for one read.
final class LockedDictionary: @unchecked Sendable {
    // `@unchecked`: `values` is only read under `lock`.
    private let lock = NSLock()
    private let values: [String: Any]

    init(_ values: [String: Any]) {
        self.values = values
    }

    func value(forKey key: String) -> Any? {
        lock.lock()
        defer { lock.unlock() }
        return values[key]
    }
}

/// The SDK started against the local server's sample decision, one visitor fetched, and each
/// flag read once (so its exposure is already sent: what a steady-state read costs).
final class FlagSession: @unchecked Sendable {
    // `@unchecked`: set up once in `setup`, read in `teardown`, never concurrently.
    let server: LocalFlagshipServer
    let directory: TemporaryDirectory
    let visitor: FSVisitor

    private init(server: LocalFlagshipServer, directory: TemporaryDirectory, visitor: FSVisitor) {
        self.server = server
        self.directory = directory
        self.visitor = visitor
    }

    static func start(into box: Box<FlagSession>, hooks: [any FlagshipHook] = []) async throws -> FSVisitor {
        let server = LocalFlagshipServer(envId: "bench_env", apiKey: "bench_key")
        try server.start()
        let directory = try TemporaryDirectory()
        let config = FSConfigBuilder()
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(directory.url.appendingPathComponent("flagship.sqlite"))
            .withLogLevel(.NONE)
            .withHooks(hooks)
            .build()
        Flagship.sharedInstance.start(envId: "bench_env", apiKey: "bench_key", config: config)
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "reader", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        for key in ["btnColor", "btnSize"] {
            _ = visitor.getFlag(key: key).value(defaultValue: nil as Any?)
        }
        box.value = FlagSession(server: server, directory: directory, visitor: visitor)
        return visitor
    }

    func stop() async {
        await Flagship.sharedInstance.close()
        server.stop()
        directory.remove()
    }
}
