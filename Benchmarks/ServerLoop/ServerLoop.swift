import BenchSQLite
import BenchSupport
import Benchmark
import Flagship
import FlagshipAsyncHTTPClient
import FlagshipLocalServer
import Foundation
import PostgresTestSupport

/// The SDK as a server uses it (issue 19): 64 requests at once, each a new visitor with a
/// context, `fetchFlags`, three flag reads that report their exposure, one awaited event. Beside
/// it, in the same run, what the same work costs at its floor: the bucketing decisions alone, the
/// same rows written with the SQLite C API (one transaction per 64 visitors), and, in Decision
/// API mode, the same decision requests sent with URLSession alone. Also `close()` in the cases
/// that used to hold it past its deadline, and a flag read while another process holds the lock.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, visitorsPerSecond, deliveredPercent, .cpuTotal],
        timeUnits: .milliseconds,
        units: [visitorsPerSecond: .count],
        warmupIterations: 1,
        maxDuration: .seconds(120),
        maxIterations: ServerLoop.measuredRounds
    )
    let fixture: ServerLoopFixture
    do {
        fixture = try ServerLoopFixture()
    } catch {
        fatalError("The server loop's bucketing file does not parse: \(error)")
    }

    // One iteration is a round of 2,000 visitors: 1 round of warm-up, then 10 (20,000 visitors).
    // On the SDK's SQLite file, then with the fleet's store (issue 21): hits and visitor
    // documents in PostgreSQL, on a throwaway server of this run. Each with decision provenance
    // (the default: every assignment recorded with its version and context, issue 22) and
    // without it, the baseline of its cost.
    for (onPostgres, provenance) in [(false, true), (false, false), (true, true), (true, false)] {
        let bucketing = Box<ServerSession>()
        let name = "server loop, bucketing: SDK\(onPostgres ? " on PostgreSQL" : "")\(provenance ? "" : ", provenance off"), 64 tasks"
        Benchmark(name) { (benchmark: Benchmark, session: ServerSession) async in
            await session.serveRounds(benchmark)
        } setup: {
            try await ServerSession.start(.bucketing, fixture: fixture, into: bucketing,
                                          postgres: onPostgres ? try TemporaryPostgres.sharedDurable.get() : nil,
                                          provenance: provenance)
        } teardown: {
            await bucketing.value?.stop()
        }
    }

    // Rounds are numbered across iterations (the closure runs once per iteration): new visitors each time.
    let engineRounds = Locked(0)
    Benchmark("server loop, bucketing: engine only (same decisions, no SDK), 64 tasks") { benchmark in
        for _ in benchmark.scaledIterations {
            let round = engineRounds.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            let elapsed = await measure(benchmark) { await fixture.decideRound(round) }
            benchmark.measurement(visitorsPerSecond, rate(ServerLoop.visitorsPerRound, elapsed))
        }
    }

    // The same rows written with the C API; and, `delivering`, then claimed and deleted as the
    // sender does: the floor of the loop's whole store work (the SDK's run reports how much of it
    // was done before its end).
    for (name, delivering) in [("a transaction per 64 visitors", false), ("then claimed and deleted as delivered", true)] {
        let raw = Box<RawServerRows>()
        let rounds = Locked(0)
        Benchmark("server loop, bucketing: raw SQLite (same rows, \(name))") { (benchmark: Benchmark, rows: RawServerRows) in
            for _ in benchmark.scaledIterations {
                let round = rounds.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                do {
                    let elapsed = try measure(benchmark) { try rows.insertRound(round, fixture: fixture) }
                    benchmark.measurement(visitorsPerSecond, rate(ServerLoop.visitorsPerRound, elapsed))
                } catch {
                    benchmark.error("\(error)")
                }
            }
        } setup: {
            let rows = try RawServerRows(delivering: delivering)
            raw.value = rows
            return rows
        } teardown: {
            raw.value?.remove()
        }
    }

    // Decision API mode through URLSession, and (issue 46) through async-http-client
    // (`AsyncHTTPClientTransport()`, FlagshipAsyncHTTPClient); beside each client's raw POSTs.
    // New visitors with an event each, as above; then returning visitors that only read, a
    // server's usual page, whose request is the decision POST and lookups (their consent and
    // exposures were reported when they were new).
    for (visitors, throughAsyncHTTPClient) in [(ServerSession.Visitors.new, false), (.new, true),
                                               (.returningReadingOnly, false), (.returningReadingOnly, true)] {
        let api = Box<ServerSession>()
        let transport = throughAsyncHTTPClient ? " through async-http-client" : ""
        let who = visitors == .new ? "" : ", returning visitors reading only"
        Benchmark("server loop, Decision API: SDK\(transport)\(who), 64 tasks") { (benchmark: Benchmark, session: ServerSession) async in
            await session.serveRounds(benchmark)
        } setup: {
            try await ServerSession.start(.decisionAPI, fixture: fixture, into: api,
                                          transport: throughAsyncHTTPClient ? AsyncHTTPClientTransport() : nil, visitors: visitors)
        } teardown: {
            await api.value?.stop()
        }
    }

    for asyncHTTPClient in [true, false] {
        let posts = Box<RawDecisionPoster>()
        let client = asyncHTTPClient ? "async-http-client" : "URLSession"
        Benchmark("server loop, Decision API: raw \(client) POSTs of the same bodies, 64 tasks") {
            (benchmark: Benchmark, poster: RawDecisionPoster) async in
            for _ in benchmark.scaledIterations {
                let elapsed = await measure(benchmark) { await poster.postRound() }
                benchmark.measurement(visitorsPerSecond, rate(ServerLoop.visitorsPerRound, elapsed))
            }
            if let failure = poster.failure { benchmark.error(failure) }
        } setup: {
            let poster = try RawDecisionPoster(fixture: fixture, asyncHTTPClient: asyncHTTPClient)
            posts.value = poster
            return poster
        } teardown: {
            await posts.value?.stop()
        }
    }

    // close(): one wall-clock run per case; the README's deadline is 5 s.
    let closeConfiguration = Benchmark.Configuration(metrics: [.wallClock], timeUnits: .milliseconds, warmupIterations: 0,
                                                     maxDuration: .seconds(60), maxIterations: 1)
    for scenario in CloseScenario.allCases {
        Benchmark("close(): \(scenario.rawValue)", configuration: closeConfiguration) { benchmark in
            do {
                let stuck = try await scenario.prepare()
                benchmark.startMeasurement()
                await stuck.flagship.close()
                benchmark.stopMeasurement()
                stuck.release()
            } catch {
                benchmark.error("\(error)")
            }
        }
    }

    // A flag read with its exposure, each on a visitor not exposed yet, while another connection
    // holds the store's write lock, beside a locked dictionary lookup: per-read percentiles.
    let readConfiguration = Benchmark.Configuration(metrics: [.wallClock], timeUnits: .nanoseconds, warmupIterations: 100,
                                                    maxDuration: .seconds(20), maxIterations: LockedReadSession.visitors - 100)
    let locked = Box<LockedReadSession>()
    Benchmark("flag read with exposure, store locked by another connection", configuration: readConfiguration) {
        (benchmark: Benchmark, session: LockedReadSession) in
        for _ in benchmark.scaledIterations {
            let visitor = session.next()
            benchmark.startMeasurement()
            blackHole(visitor.getFlag(key: "btnColor").value(defaultValue: "none"))
            benchmark.stopMeasurement()
        }
    } setup: {
        let session = try await LockedReadSession.start(fixture: fixture)
        locked.value = session
        return session
    } teardown: {
        await locked.value?.stop()
    }

    let dictionary = LockedValues(["btnColor": "green", "freeShipping": true])
    Benchmark("baseline: locked [String: Any] lookup, as String", configuration: readConfiguration) { benchmark in
        for _ in benchmark.scaledIterations {
            benchmark.startMeasurement()
            blackHole(dictionary.value(forKey: "btnColor") as? String ?? "none")
            benchmark.stopMeasurement()
        }
    }
}

/// The share of the hits a run produced that were delivered before its end (the rest wait in the
/// store): whether the sender kept up with the loop.
let deliveredPercent = BenchmarkMetric.custom("hits delivered during the run (%)", polarity: .prefersLarger, useScalingFactor: false)

/// Visitors served per second by one iteration (a round).
let visitorsPerSecond = BenchmarkMetric.custom("visitors/s", polarity: .prefersLarger, useScalingFactor: false)

enum ServerLoop {
    static let concurrency = 64
    static let visitorsPerRound = 2_000
    static let measuredRounds = 10
    /// The returning visitors of the reading-only rounds, each served once before them.
    static let returningVisitors = 256
    static let envId = "bench_env"
    static let apiKey = "bench_key"
}

/// The floor of a read: a dictionary behind an `NSLock`.
final class LockedValues: Sendable {
    private let values: Locked<[String: String]>

    init(_ values: [String: Any]) {
        self.values = Locked(values.mapValues { "\($0)" })
    }

    func value(forKey key: String) -> Any? {
        values.withLock { $0[key] }
    }
}
