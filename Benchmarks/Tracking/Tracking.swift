import BenchSupport
import Benchmark
import Flagship
import FlagshipLocalServer
import Foundation

/// The tracking manager through the public API, as an app uses it: hits accepted with the network
/// down (continuous caching, so each is committed to SQLite), and cached hits replayed to a local
/// server. The raw SQLite baselines these compare with are in the HitStore suite: run both at once.
let benchmarks: @Sendable () -> Void = {
    let hitCount = 100_000
    let click = FSEvent(eventCategory: .Action_Tracking, eventAction: "click")
    // Defaults, but for a cap that keeps every hit of the throughput runs (no eviction).
    let keepEveryHit = FSTrackingManagerConfig(
        poolMaxSize: 10, batchIntervalTimer: 5, strategy: .CONTINUOUS_CACHING, hitLifetime: 4 * 3600,
        maxCachedHits: 10 * hitCount, maxBatchBytes: 2_500_000
    )

    let throughput = Benchmark.Configuration(
        metrics: [.wallClock, rowsPerSecond, .cpuTotal, .peakMemoryResident],
        timeUnits: .milliseconds,
        units: [rowsPerSecond: .count],
        warmupIterations: 0,
        maxDuration: .seconds(60),
        maxIterations: 5
    )

    // From the first sendHit to close() returning: close() waits for every accepted hit to be
    // committed, tries one last send (refused at once), and leaves the rest in SQLite.
    Benchmark("sendHit 100k fire-and-forget, then close (network down)", configuration: throughput) { benchmark in
        do {
            let session = try SDKSession(endpoints: try .networkDown(), tracking: keepEveryHit)
            defer { session.directory.remove() }
            // Start-up done and the consent hit in before the clock starts.
            try await session.visitor.sendHit(click)
            let elapsed = try await measure(benchmark) {
                try await sendWithoutWaiting(click, count: hitCount, from: session.visitor)
                await Flagship.sharedInstance.close()
            }
            benchmark.measurement(rowsPerSecond, rate(hitCount, elapsed))
            try expectRows(hitCount + 2, in: session, benchmark, what: "the hits, the consent hit and the first hit")
        } catch {
            benchmark.error("\(error)")
        }
    }

    // 16 callers, each awaiting the commit of its hit before sending the next: the group commit
    // is what lets them share transactions.
    let callers = 16
    Benchmark("sendHit 100k awaited, \(callers) tasks (network down)", configuration: throughput) { benchmark in
        do {
            let session = try SDKSession(endpoints: try .networkDown(), tracking: keepEveryHit)
            defer { session.directory.remove() }
            try await session.visitor.sendHit(click)
            let visitor = session.visitor
            let elapsed = try await measure(benchmark) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<callers {
                        group.addTask {
                            for _ in 0..<(hitCount / callers) {
                                try await visitor.sendHit(click)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            benchmark.measurement(rowsPerSecond, rate(hitCount, elapsed))
            await Flagship.sharedInstance.close()
            try expectRows(hitCount + 2, in: session, benchmark, what: "the hits, the consent hit and the first hit")
        } catch {
            benchmark.error("\(error)")
        }
    }

    // One caller, one hit per iteration: the time from sendHit to its commit.
    let latencySession = Box<SDKSession>()
    Benchmark(
        "sendHit awaited, one caller: latency to commit (network down)",
        configuration: .init(
            metrics: [.wallClock],
            timeUnits: .microseconds,
            warmupIterations: 100,
            maxDuration: .seconds(20),
            maxIterations: 10_000
        )
    ) { (benchmark: Benchmark, visitor: FSVisitor) async in
        benchmark.startMeasurement()
        do {
            try await visitor.sendHit(click)
        } catch {
            benchmark.error("\(error)")
        }
        benchmark.stopMeasurement()
    } setup: {
        let session = try SDKSession(endpoints: try .networkDown(), tracking: FSTrackingManagerConfig())
        latencySession.value = session
        return session.visitor
    } teardown: {
        await Flagship.sharedInstance.close()
        latencySession.value?.directory.remove()
    }

    // Memory while a burst far larger than the cache cap (the default, 100,000) is accepted: the
    // oldest are evicted as the newest are committed.
    let burst = 1_000_000
    Benchmark(
        "sendHit 1M fire-and-forget, then close (network down): peak memory",
        configuration: .init(
            metrics: [.wallClock, rowsPerSecond, .peakMemoryResident, .peakMemoryResidentDelta],
            timeUnits: .milliseconds,
            units: [rowsPerSecond: .count],
            warmupIterations: 0,
            maxDuration: .seconds(300),
            maxIterations: 1
        )
    ) { benchmark in
        do {
            let session = try SDKSession(endpoints: try .networkDown(), tracking: FSTrackingManagerConfig())
            defer { session.directory.remove() }
            let elapsed = try await measure(benchmark) {
                try await sendWithoutWaiting(click, count: burst, from: session.visitor)
                await Flagship.sharedInstance.close()
            }
            benchmark.measurement(rowsPerSecond, rate(burst, elapsed))
            try expectRows(FSTrackingManagerConfig().maxCachedHits, in: session, benchmark, what: "the cache cap")
        } catch {
            benchmark.error("\(error)")
        }
    }

    // A process restarting on a full cache: from start() until the local server has every hit.
    // Nothing throttles a replay: the sender goes on while its pages come full, whatever the
    // pool size and interval; bodies at the endpoint's maximum size.
    let replayed = hitCount
    let delivery = Benchmark.Configuration(
        metrics: [.wallClock, rowsPerSecond, .cpuTotal],
        timeUnits: .milliseconds,
        units: [rowsPerSecond: .count],
        warmupIterations: 0,
        maxDuration: .seconds(120),
        maxIterations: 3
    )
    let filledCache = Box<TemporaryDirectory>()
    Benchmark("replay 100k cached hits to the local server", configuration: delivery) {
        (benchmark: Benchmark, template: TemporaryDirectory) async in
        do {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            try copyCacheFiles(from: template, to: directory)
            let delivered = DeliveredHits()
            let server = try delivered.startServer()
            defer { server.stop() }
            let elapsed = try await measure(benchmark) {
                SDKSession.start(cacheFile: SDKSession.cacheFile(in: directory), endpoints: Endpoints(server), tracking: keepEveryHit)
                try await delivered.wait(for: replayed, timeout: .seconds(60))
            }
            benchmark.measurement(rowsPerSecond, rate(replayed, elapsed))
            await Flagship.sharedInstance.close()
            // Hits carry no id on the wire: exactly as many arrived, and none is left.
            let left = try RawHitTable.count(inDatabaseAt: SDKSession.cacheFile(in: directory).path)
            if delivered.value != replayed || left != 0 {
                benchmark.error("the server accepted \(delivered.value) hits and \(left) stay cached; expected \(replayed) and 0")
            }
        } catch {
            benchmark.error("\(error)")
        }
    } setup: {
        // The consent hit and the rest, written with the network down and left by close().
        let session = try SDKSession(endpoints: try .networkDown(), tracking: keepEveryHit)
        filledCache.value = session.directory
        try await sendWithoutWaiting(click, count: replayed - 1, from: session.visitor)
        await Flagship.sharedInstance.close()
        let rows = try session.cachedRows()
        guard rows == replayed else { throw FillFailed(rows: rows, expected: replayed) }
        return session.directory
    } teardown: {
        filledCache.value?.remove()
    }

    // The floor of the replay: the same hits, in batches of the sender's page size, posted one
    // after the other by URLSession to the same server. No SQLite, no SDK: what the transport and
    // the local server (which parses every body before it answers) cost by themselves.
    let page = 500
    Benchmark("local server alone: 100k hits posted in batches of \(page)", configuration: delivery) {
        (benchmark: Benchmark, bodies: [Data]) async in
        do {
            let delivered = DeliveredHits()
            let server = try delivered.startServer()
            defer { server.stop() }
            let elapsed = try await measure(benchmark) {
                try await EventBatch.post(bodies, to: server.eventsBaseURL)
            }
            benchmark.measurement(rowsPerSecond, rate(replayed, elapsed))
            if delivered.value != replayed {
                benchmark.error("the server accepted \(delivered.value) hits; expected \(replayed)")
            }
        } catch {
            benchmark.error("\(error)")
        }
    } setup: {
        try EventBatch.bodies(hits: replayed, perBatch: page, envId: SDKSession.envId)
    }
}

struct FillFailed: Error, CustomStringConvertible {
    let rows: Int
    let expected: Int

    var description: String { "the filled cache holds \(rows) hits, not \(expected)" }
}

/// Copies the cache (and its write-ahead log, if close() left one) into a new directory.
private func copyCacheFiles(from source: TemporaryDirectory, to destination: TemporaryDirectory) throws {
    let manager = FileManager.default
    for name in try manager.contentsOfDirectory(atPath: source.url.path) where name.hasPrefix("flagship.sqlite") {
        try manager.copyItem(at: source.url.appendingPathComponent(name), to: destination.url.appendingPathComponent(name))
    }
}

private func expectRows(_ expected: Int, in session: SDKSession, _ benchmark: Benchmark, what: String) throws {
    let found = try session.cachedRows()
    if found != expected {
        benchmark.error("expected \(expected) rows (\(what)) in the cache after close(), found \(found)")
    }
}
