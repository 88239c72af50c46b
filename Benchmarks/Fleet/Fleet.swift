import BenchSupport
import Benchmark
import Flagship
import FlagshipLocalServer
import FlagshipPostgres
import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport

/// Issue 21's figures, on a throwaway PostgreSQL of this run: hits committed to the shared table
/// per second by one instance and by three, beside raw multi-row INSERTs of the same rows through
/// postgres-nio; and 100,000 hits left in the table replayed by three instances to the local
/// server, each delivered once. (The server loop on PostgreSQL is in the ServerLoop suite, beside
/// its SQLite run.)
let benchmarks: @Sendable () -> Void = {
    let postgres: TemporaryPostgres
    switch TemporaryPostgres.sharedDurable {
    case .success(let server): postgres = server
    case .failure(let reason): fatalError("The fleet suite needs PostgreSQL (make deps installs it): \(reason)")
    }
    let commits = Benchmark.Configuration(
        metrics: [.wallClock, rowsPerSecond],
        timeUnits: .milliseconds,
        units: [rowsPerSecond: .count],
        warmupIterations: 1,
        maxDuration: .seconds(120),
        maxIterations: 5
    )

    // The floor: the same rows, 64 to a statement (about what one group commit carries with 64
    // callers), on one connection, then on three at once.
    for connections in [1, 3] {
        let raw = Box<RawFleetInserts>()
        Benchmark("fleet commits: raw multi-row INSERTs, 64 rows a statement, \(connections) connection(s)",
                  configuration: commits) { (benchmark: Benchmark, inserts: RawFleetInserts) async in
            for _ in benchmark.scaledIterations {
                do {
                    let elapsed = try await measure(benchmark) { try await inserts.insertRound() }
                    benchmark.measurement(rowsPerSecond, rate(inserts.rowsPerRound, elapsed))
                } catch {
                    benchmark.error("\(error)")
                }
            }
        } setup: {
            let inserts = try await RawFleetInserts.make(postgres, connections: connections)
            raw.value = inserts
            return inserts
        } teardown: {
            await raw.value?.close()
        }
    }

    // The SDK: 64 tasks per instance, each awaiting the commit of its hit (`try await sendHit`)
    // before sending the next, the events endpoint down (hits stay in the table).
    for instances in [1, 3] {
        let fleet = Box<FleetSession>()
        Benchmark("fleet commits: SDK, \(instances) instance(s), 64 tasks each awaiting sendHit",
                  configuration: commits) { (benchmark: Benchmark, session: FleetSession) async in
            for _ in benchmark.scaledIterations {
                do {
                    let elapsed = try await measure(benchmark) { try await session.sendRound() }
                    benchmark.measurement(rowsPerSecond, rate(session.hitsPerRound, elapsed))
                } catch {
                    benchmark.error("\(error)")
                }
            }
            if let problem = await session.checkCommitted() { benchmark.error(problem) }
        } setup: {
            let session = try await FleetSession.start(postgres, instances: instances, events: try Fleet.refusingEndpoint())
            fleet.value = session
            return session
        } teardown: {
            await fleet.value?.close()
        }
    }

    // Replay: one instance leaves 100,000 hits in the table (the events endpoint down), then
    // three instances on a reachable local server deliver them; measured from their start until
    // the table is empty and the server has every hit. Each hit must arrive exactly once.
    Benchmark("fleet replay: 100,000 hits left in PostgreSQL, sent by 3 instances to the local server",
              configuration: .init(metrics: [.wallClock, rowsPerSecond], timeUnits: .milliseconds, units: [rowsPerSecond: .count],
                                   warmupIterations: 0, maxDuration: .seconds(300), maxIterations: 3)) { benchmark in
        do {
            let replay = try await FleetReplay.prepare(postgres, hits: Fleet.replayedHits)
            let elapsed = try await measure(benchmark) { try await replay.run() }
            benchmark.measurement(rowsPerSecond, rate(Fleet.replayedHits, elapsed))
            if let problem = replay.checkEachDeliveredOnce() { benchmark.error(problem) }
            await replay.close()
        } catch {
            benchmark.error("\(error)")
        }
    }
}

enum Fleet {
    static let envId = "fleet_bench_env"
    static let apiKey = "fleet_bench_key"
    static let tasksPerInstance = 64
    static let hitsPerInstanceRound = 12_800
    static let replayedHits = 100_000

    /// A port on 127.0.0.1 nobody listens on: every send is refused at once, hits stay in the table.
    static func refusingEndpoint() throws -> URL {
        let server = LocalFlagshipServer(envId: envId, apiKey: apiKey)
        try server.start()
        defer { server.stop() }
        return server.eventsBaseURL
    }

    /// A store on its own client, as each instance of a fleet has.
    static func store(_ postgres: TemporaryPostgres, database: String) -> FlagshipPostgresStore {
        FlagshipPostgresStore(.init(host: postgres.host, port: postgres.port, username: postgres.username,
                                    password: postgres.password, database: database))
    }

    static func start(_ store: FlagshipPostgresStore, events: URL, directory: TemporaryDirectory, number: Int) -> Flagship {
        let flagship = Flagship()
        flagship.start(envId: envId, apiKey: apiKey, config: FSConfigBuilder()
            .withDecisionBaseURL(events.appendingPathComponent("v2"))
            .withEventsBaseURL(events)
            .withCacheDirectory(directory.url.appendingPathComponent("instance-\(number)"))
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 100, batchIntervalTimer: 0.1, maxCachedHits: 1_000_000))
            .withLogLevel(.NONE)
            .withPostgresStore(store)
            .build())
        return flagship
    }
}

/// Multi-row INSERTs into `flagship.hits` through postgres-nio: the SDK's rows (their document
/// is one the SDK wrote), new ids each round, 64 to a statement, one statement at a time per
/// connection.
final class RawFleetInserts: Sendable {
    let rowsPerRound: Int
    private let connections: [PostgresConnection]
    private let document: String
    private let round = Locked(0)

    private init(connections: [PostgresConnection], document: String) {
        self.connections = connections
        self.document = document
        rowsPerRound = connections.count * Fleet.hitsPerInstanceRound
    }

    static func make(_ postgres: TemporaryPostgres, connections count: Int) async throws -> RawFleetInserts {
        let database = try postgres.createDatabase("raw")
        let document = try await Self.documentTheSDKWrites(postgres, database: database)
        var connections: [PostgresConnection] = []
        for number in 0..<count {
            connections.append(try await PostgresConnection.connect(
                configuration: .init(host: postgres.host, port: postgres.port, username: postgres.username,
                                     password: postgres.password, database: database, tls: .disable),
                id: number, logger: Logger(label: "raw")))
        }
        return RawFleetInserts(connections: connections, document: document)
    }

    /// One event sent through the SDK and left in the table: its document, as the baseline's rows.
    private static func documentTheSDKWrites(_ postgres: TemporaryPostgres, database: String) async throws -> String {
        let store = Fleet.store(postgres, database: database)
        try await store.prepare()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let flagship = Fleet.start(store, events: try Fleet.refusingEndpoint(), directory: directory, number: 0)
        let visitor = await flagship.newVisitor(visitorId: "visitor-0", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "purchase"))
        await flagship.close()
        await store.close()
        let document = try postgres.psql(database, "SELECT document FROM flagship.hits WHERE type = 'EVENT' LIMIT 1")
        _ = try postgres.psql(database, "DELETE FROM flagship.hits")
        return document
    }

    func insertRound() async throws {
        let round = round.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        let (document, rowsPerConnection) = (document, Fleet.hitsPerInstanceRound)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (number, connection) in connections.enumerated() {
                group.addTask {
                    for start in stride(from: 0, to: rowsPerConnection, by: 64) {
                        let ids = (start..<min(start + 64, rowsPerConnection)).map { "r\(round)-c\(number)-\($0)" }
                        var bindings = PostgresBindings(capacity: ids.count * 5)
                        var values: [String] = []
                        for (offset, id) in ids.enumerated() {
                            let base = offset * 5
                            values.append("('\(Fleet.envId)', $\(base + 1), $\(base + 2), 'EVENT', false, $\(base + 3), $\(base + 4), $\(base + 5))")
                            bindings.append(id)
                            bindings.append("visitor-\(number)")
                            bindings.append(document)
                            bindings.append(now)
                            bindings.append(0)
                        }
                        let sql = "INSERT INTO flagship.hits (env_id, id, visitor_id, type, is_consent, document, created_at, attempts) VALUES "
                            + values.joined(separator: ", ")
                        try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: Logger(label: "raw"))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    func close() async {
        for connection in connections { try? await connection.close() }
    }
}

/// Instances of the SDK on one database, each on its own client, each with one visitor sending.
final class FleetSession: Sendable {
    let hitsPerRound: Int
    private let stores: [FlagshipPostgresStore]
    private let instances: [Flagship]
    private let visitors: [FSVisitor]
    private let directory: TemporaryDirectory
    private let postgres: TemporaryPostgres
    private let database: String
    private let sent = Locked(0)

    private init(stores: [FlagshipPostgresStore], instances: [Flagship], visitors: [FSVisitor], directory: TemporaryDirectory,
                 postgres: TemporaryPostgres, database: String) {
        self.stores = stores
        self.instances = instances
        self.visitors = visitors
        self.directory = directory
        self.postgres = postgres
        self.database = database
        hitsPerRound = instances.count * Fleet.hitsPerInstanceRound
    }

    static func start(_ postgres: TemporaryPostgres, instances count: Int, events: URL) async throws -> FleetSession {
        let database = try postgres.createDatabase("sdk")
        let directory = try TemporaryDirectory()
        var stores: [FlagshipPostgresStore] = []
        var instances: [Flagship] = []
        var visitors: [FSVisitor] = []
        for number in 0..<count {
            let store = Fleet.store(postgres, database: database)
            try await store.prepare()
            let flagship = Fleet.start(store, events: events, directory: directory, number: number)
            stores.append(store)
            instances.append(flagship)
            visitors.append(await flagship.newVisitor(visitorId: "visitor-\(number)", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync())
        }
        return FleetSession(stores: stores, instances: instances, visitors: visitors, directory: directory, postgres: postgres, database: database)
    }

    func sendRound() async throws {
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "purchase")
        let perTask = Fleet.hitsPerInstanceRound / Fleet.tasksPerInstance
        try await withThrowingTaskGroup(of: Void.self) { group in
            for visitor in visitors {
                for _ in 0..<Fleet.tasksPerInstance {
                    group.addTask {
                        for _ in 0..<perTask { try await visitor.sendHit(event) }
                    }
                }
            }
            try await group.waitForAll()
        }
        sent.withLock { $0 += hitsPerRound }
    }

    /// Every acknowledged event is a row of the table (nothing was delivered: the endpoint refuses).
    func checkCommitted() async -> String? {
        let rows = Int((try? postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE NOT is_consent")) ?? "") ?? -1
        let sent = sent.withLock { $0 }
        return rows == sent ? nil : "\(sent) events acknowledged, \(rows) rows in flagship.hits"
    }

    func close() async {
        for flagship in instances { await flagship.close() }
        for store in stores { await store.close() }
        directory.remove()
    }
}

/// 100,000 hits waiting in the table, and three instances that deliver them.
final class FleetReplay: Sendable {
    private let postgres: TemporaryPostgres
    private let database: String
    private let server: LocalFlagshipServer
    private let directory: TemporaryDirectory
    private let hits: Int
    private let running = Locked<[(Flagship, FlagshipPostgresStore)]>([])

    private init(postgres: TemporaryPostgres, database: String, server: LocalFlagshipServer, directory: TemporaryDirectory, hits: Int) {
        self.postgres = postgres
        self.database = database
        self.server = server
        self.directory = directory
        self.hits = hits
    }

    /// One instance sends `hits` labelled events with the endpoint down, then closes: they wait.
    static func prepare(_ postgres: TemporaryPostgres, hits: Int) async throws -> FleetReplay {
        let database = try postgres.createDatabase("replay")
        let directory = try TemporaryDirectory()
        let store = Fleet.store(postgres, database: database)
        try await store.prepare()
        let flagship = Fleet.start(store, events: try Fleet.refusingEndpoint(), directory: directory, number: 99)
        let visitor = await flagship.newVisitor(visitorId: "replayed", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<64 {
                group.addTask {
                    for number in stride(from: lane, to: hits, by: 64) {
                        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "replayed-\(number)")
                        try await visitor.sendHit(event)
                    }
                }
            }
            try await group.waitForAll()
        }
        await flagship.close()
        await store.close()
        // The run that left them met the endpoint down, and its last failed page carries that
        // run's backoff (`next_attempt_at`, up to half a minute ahead). It is over, as it is for
        // the hits a fleet finds after an outage: the replay measures the sending, not that wait
        // (which held one page back 6 - 29 s, most of the iteration's spread).
        _ = try postgres.psql(database, "UPDATE flagship.hits SET next_attempt_at = NULL")
        let server = LocalFlagshipServer(envId: Fleet.envId, apiKey: Fleet.apiKey)
        try server.start()
        return FleetReplay(postgres: postgres, database: database, server: server, directory: directory, hits: hits)
    }

    /// Three instances start and send; returns once the table holds no event and the server has them all.
    func run() async throws {
        for number in 0..<3 {
            let store = Fleet.store(postgres, database: database)
            try await store.prepare()
            let flagship = Fleet.start(store, events: server.eventsBaseURL, directory: directory, number: number)
            running.withLock { $0.append((flagship, store)) }
        }
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            if server.hits.count >= hits, try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE type = 'EVENT'") == "0" {
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw FleetFailure(description: "not replayed within 120 s: \(server.hits.count) of \(hits) delivered")
    }

    func checkEachDeliveredOnce() -> String? {
        let actions = server.hits.compactMap { $0["ea"]?.stringValue }.filter { $0.hasPrefix("replayed-") }
        let distinct = Set(actions).count
        guard actions.count == hits, distinct == hits else {
            return "\(actions.count) events delivered, \(distinct) distinct, of \(hits)"
        }
        return nil
    }

    func close() async {
        for (flagship, store) in running.withLock({ $0 }) {
            await flagship.close()
            await store.close()
        }
        server.stop()
        directory.remove()
    }
}

struct FleetFailure: Error, CustomStringConvertible {
    let description: String
}
