#if Postgres
import FlagshipLocalServer
import FlagshipStore
import Logging
import PostgresTestSupport
import Foundation
import XCTest

@testable import Flagship
@testable import FlagshipPostgres

/// Instances of the SDK sharing one PostgreSQL store, in one process: an acknowledged hit is a
/// row of the shared table, and the fleet delivers each hit once.
final class PostgresFleetTests: PostgresTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-fleet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Instance `number` on `store`; its lines go to `logger` when given (the default's at WARNING).
    private func instance(_ number: Int, store: FlagshipPostgresStore, server: LocalFlagshipServer, logger: Logger? = nil,
                          clock: (@Sendable () -> Date)? = nil) -> Flagship {
        let flagship = Flagship()
        var config = FSConfigBuilder()
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheDirectory(directory.appendingPathComponent("instance-\(number)"))
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 5, batchIntervalTimer: 0.05))
            .withPostgresStore(store)
        config = logger.map { config.withLogger($0) } ?? config.withLogLevel(.WARNING)
        config = clock.map { config.withClock($0) } ?? config
        flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: config.build())
        return flagship
    }

    /// Waits (20 s at most) until the server received an event of each action in `expected`.
    private func waitForDelivery(of expected: Set<String>, to server: LocalFlagshipServer) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        var actions: Set<String> { Set(server.hits.compactMap { $0["ea"]?.stringValue }) }
        while !actions.isSuperset(of: expected), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTAssertTrue(actions.isSuperset(of: expected), "delivered: \(actions.sorted())")
    }

    /// A server of the test's own, which it stops and starts (the shared one serves the other
    /// tests), and a database there.
    private func ownPostgres() throws -> (TemporaryPostgres, String) {
        _ = try postgres()   // skips, or fails in CI, as the others do
        let postgres = try TemporaryPostgres()
        return (postgres, try postgres.createDatabase())
    }

    /// A PostgreSQL server and database of the test's own, a local server, an impatient store
    /// prepared there, and instance 0 on it; `stop()` ends both servers.
    private struct OwnFleet {
        let postgres: TemporaryPostgres
        let database: String
        let server: LocalFlagshipServer
        let store: FlagshipPostgresStore
        let flagship: Flagship

        func stop() {
            server.stop()
            postgres.stop()
        }
    }

    private func ownFleet() async throws -> OwnFleet {
        let (postgres, database) = try ownPostgres()
        let server = LocalFlagshipServer(envId: "fleet_env", apiKey: "fleet_key")
        do {
            try server.start()
            let store = impatientStore(postgres, database: database)
            try await store.prepare()
            return OwnFleet(postgres: postgres, database: database, server: server, store: store,
                            flagship: instance(0, store: store, server: server))
        } catch {
            server.stop()
            postgres.stop()
            throw error
        }
    }

    /// A store that gives up on PostgreSQL after 1 s and tries it again 1 s later.
    private func impatientStore(_ postgres: TemporaryPostgres, database: String) -> FlagshipPostgresStore {
        FlagshipPostgresStore(.init(host: postgres.host, port: postgres.port, username: postgres.username,
                                    password: postgres.password, database: database),
                              sharesDatabase: false, logger: logger, callTimeout: .seconds(1), retryAfter: 1)
    }

    /// Three instances, each on its own client of one database, send 30 awaited hits each: each
    /// acknowledgement is a committed row of the shared table (seen while the server holds the
    /// first batches), and every hit reaches the server once.
    func testThreeInstancesSharingTheStoreDeliverEachAcknowledgedHitOnce() async throws {
        let postgres = try postgres()
        let database = try postgres.createDatabase()
        let server = try startedFleetServer()
        defer { server.stop() }
        let stores = (0..<3).map { _ in store(postgres, database: database) }
        for store in stores { try await store.prepare() }
        let latency = server.injectFault(.latency(.milliseconds(500)), on: .events)
        let instances = stores.enumerated().map { instance($0.offset, store: $0.element, server: server) }

        let visitors = await withTaskGroup(of: FSVisitor.self) { group in
            for (number, flagship) in instances.enumerated() {
                group.addTask {
                    await flagship.newVisitor(visitorId: "visitor-\(number)", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for visitor in visitors {
                group.addTask {
                    for number in 1...30 {
                        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "click").withLabel("\(visitor.visitorId)-\(number)"))
                    }
                }
            }
            try await group.waitForAll()
        }
        // Acknowledged means committed in PostgreSQL: every acknowledged hit (90 clicks, 3 consent
        // hits) is a row of the shared table, or was delivered (and its row deleted) before it
        // was counted. Read in that order, the two counts cannot both miss a hit.
        let rows = Int(try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE env_id = 'fleet_env'")) ?? -1
        let deliveredSoFar = server.hits.count
        XCTAssertGreaterThanOrEqual(rows + deliveredSoFar, 93, "\(rows) rows, \(deliveredSoFar) delivered")
        XCTAssertGreaterThan(rows, 0, "the server holds the batches: hits wait in the shared table")
        server.removeFault(latency)

        let delivered = try await server.waitForHits(count: 93, timeout: .seconds(30))
        for flagship in instances { await flagship.close() }
        for store in stores { await store.close() }

        let labels = delivered.compactMap { $0["el"]?.stringValue }.filter { $0.hasPrefix("visitor-") && !$0.contains(":") }
        XCTAssertEqual(labels.count, 90, "each click once")
        XCTAssertEqual(Set(labels).count, 90)
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.hits"), "0", "delivered hits leave the table")
    }

    /// The fleet's table is capped: an instance whose write finds it above `maximumHits` deletes
    /// the oldest hits, and counts exactly what it deleted (here nothing is sent: every hit
    /// acknowledged is a row or was evicted).
    func testTheFleetsTableKeepsItsCapAndTheInstanceCountsWhatItEvicted() async throws {
        let postgres = try postgres()
        let database = try postgres.createDatabase()
        let store = FlagshipPostgresStore(.init(host: postgres.host, port: postgres.port, username: postgres.username,
                                                password: postgres.password, database: database),
                                          sharesDatabase: false, logger: logger, callTimeout: .seconds(5), retryAfter: 5,
                                          maximumHits: 30, capCheckInterval: 0)
        try await store.prepare()
        let flagship = Flagship()
        flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
            .withCacheDirectory(directory.appendingPathComponent("instance-0"))
            .withLogLevel(.ERROR)
            .withNetworkDisabled()
            .withPostgresStore(store)
            .build())
        let visitor = await flagship.newVisitor(visitorId: "v", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        for number in 1...60 {
            try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "click").withLabel("click-\(number)"))
        }
        let rows = Int(try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE env_id = 'fleet_env'")) ?? -1
        let newest = try postgres.psql(database, """
            SELECT string_agg(document::json->'data'->'content'->>'el', ',' ORDER BY created_at DESC, id DESC) FROM (
                SELECT * FROM flagship.hits WHERE env_id = 'fleet_env' ORDER BY created_at DESC, id DESC LIMIT 2) AS newest
            """)
        let reported = await flagship.trackingStatistics()
        let statistics = try XCTUnwrap(reported)
        await flagship.close()
        await store.close()

        XCTAssertEqual(rows, 30)
        XCTAssertEqual(statistics.evicted, 31, "61 hits acknowledged (the consent hit too), 30 kept")
        XCTAssertEqual(newest, "click-60,click-59", "the oldest went")
    }

    /// PostgreSQL stopped mid-traffic, then started again: every awaited hit is acknowledged
    /// (committed to the instance's local SQLite file while PostgreSQL is away, sent from there),
    /// and every hit reaches the server once.
    func testWhilePostgresIsAwayHitsAreCommittedLocallyAndAllAreDeliveredOnce() async throws {
        let fleet = try await ownFleet()
        defer { fleet.stop() }
        let (postgres, database, server, store, flagship) = (fleet.postgres, fleet.database, fleet.server, fleet.store, fleet.flagship)
        let visitor = await flagship.newVisitor(visitorId: "visitor-0", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        func send(_ numbers: ClosedRange<Int>) async throws {
            for number in numbers {
                try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "click").withLabel("visitor-0-\(number)"))
            }
        }

        try await send(1...5)
        _ = try await server.waitForHits(count: 6, timeout: .seconds(10))
        try postgres.kill()
        try await send(6...15)                 // none throws hitNotCached: each is committed locally
        _ = try await server.waitForHits(count: 16, timeout: .seconds(20))
        try postgres.start()
        try await Task.sleep(for: .seconds(1.2))  // past the spill's window: PostgreSQL is tried again
        try await send(16...20)
        let delivered = try await server.waitForHits(count: 21, timeout: .seconds(20))
        await flagship.close()
        await store.close()

        let labels = delivered.compactMap { $0["el"]?.stringValue }.filter { $0.hasPrefix("visitor-0-") }
        XCTAssertEqual(labels.sorted(), (1...20).map { "visitor-0-\($0)" }.sorted(), "each once")
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.hits"), "0")
    }

    /// Consent withdrawn while PostgreSQL is away: the local rows go at once, and the erasure waits
    /// in the local store (a restart would carry it too) until PostgreSQL answers; then the
    /// visitor's document, decisions and waiting hits go there, its consent hits stay.
    func testAConsentWithdrawalMadeWhilePostgresIsAwayIsCarriedOutOnceItIsBack() async throws {
        let fleet = try await ownFleet()
        defer { fleet.stop() }
        let (postgres, database, server, store, flagship) = (fleet.postgres, fleet.database, fleet.server, fleet.store, fleet.flagship)
        let runtime = try XCTUnwrap(flagship.currentRuntime)
        let local = try XCTUnwrap(runtime.caches?.store)
        let leaving = await flagship.newVisitor(visitorId: "leaving", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await leaving.fetchFlags()
        server.stop()   // the hits wait in PostgreSQL
        for number in 1...3 {
            try await leaving.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "click").withLabel("leaving-\(number)"))
        }
        await runtime.flushCaches()
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.visitors WHERE visitor_id = 'leaving'"), "1")

        try postgres.kill()
        leaving.setConsent(hasConsented: false)
        await runtime.flushCaches()
        let pending = try await local.read { try $0.state.value(forKey: "postgres_erasure_pending.leaving") }
        XCTAssertNotNil(pending, "kept in the local store until PostgreSQL takes it")

        try postgres.start()
        // Writes go on; once the spill's window has passed, one of them tries PostgreSQL again and
        // carries the erasure. On a busy machine the first try may still find it starting: the
        // next write tries again (20 s at most).
        let staying = await flagship.newVisitor(visitorId: "staying", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        let deadline = ContinuousClock.now + .seconds(20)
        repeat {
            try await Task.sleep(for: .milliseconds(400))
            try await staying.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "click"))
            await runtime.flushCaches()
        } while try await local.read({ try $0.state.value(forKey: "postgres_erasure_pending.leaving") }) != nil
            && ContinuousClock.now < deadline

        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.visitors WHERE visitor_id = 'leaving'"), "0")
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.decisions WHERE visitor_id = 'leaving'"), "0")
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE visitor_id = 'leaving' AND NOT is_consent"), "0")
        XCTAssertNotEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE visitor_id = 'leaving' AND is_consent"), "0",
                          "its consent hits stay")
        let left = try await local.read { try $0.state.value(forKey: "postgres_erasure_pending.leaving") }
        XCTAssertNil(left, "done: it leaves the local store")
        await flagship.close()
        await store.close()
    }

    /// PostgreSQL stopped: a visitor decided meanwhile is kept in the instance's local store (a
    /// lookup finds it there); PostgreSQL back, the next write moves the document to the shared
    /// table and out of the local file.
    func testWhilePostgresIsAwayVisitorsAreKeptLocallyThenMovedToTheSharedStore() async throws {
        let fleet = try await ownFleet()
        defer { fleet.stop() }
        let (postgres, database, store, flagship) = (fleet.postgres, fleet.database, fleet.store, fleet.flagship)
        let runtime = try XCTUnwrap(flagship.currentRuntime)
        let caches = try XCTUnwrap(runtime.caches)
        func local(_ id: String) throws -> VisitorRecord? {
            try caches.store.read { try $0.visitors.visitor(id: id) }
        }
        func localDecisions(_ id: String) throws -> Int {
            try caches.store.read { try $0.decisions.decisions(visitorId: id).count }
        }

        try postgres.kill()
        let offline = await flagship.newVisitor(visitorId: "offline-visitor", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await offline.fetchFlags()
        await runtime.flushCaches()
        XCTAssertNotNil(try local("offline-visitor"), "kept in the local store while PostgreSQL is away")
        let decided = try localDecisions("offline-visitor")
        XCTAssertGreaterThan(decided, 0, "its decisions kept with it")
        guard case .found(let document) = await caches.lookupVisitor("offline-visitor") else {
            return XCTFail("a lookup reads the local store while PostgreSQL is away")
        }
        XCTAssertEqual(document.visitorId, "offline-visitor")

        try postgres.start()
        try await Task.sleep(for: .seconds(1.2))  // past the spill's window: PostgreSQL is tried again
        let online = await flagship.newVisitor(visitorId: "online-visitor", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await online.fetchFlags()
        await runtime.flushCaches()
        XCTAssertEqual(try postgres.psql(database, "SELECT visitor_id FROM flagship.visitors ORDER BY visitor_id"), "offline-visitor\nonline-visitor")
        XCTAssertNil(try local("offline-visitor"), "moved: the local store holds only what PostgreSQL has not got")
        XCTAssertEqual(try localDecisions("offline-visitor"), 0)
        XCTAssertEqual(try postgres.psql(database, """
            SELECT count(*) FROM flagship.decisions, jsonb_array_elements(assignments::jsonb)
            WHERE visitor_id = 'offline-visitor'
            """), "\(decided)", "its decisions moved with it")
        guard case .found = await caches.lookupVisitor("offline-visitor") else { return XCTFail("found in PostgreSQL") }
        await flagship.close()
        await store.close()
    }

    /// Bounded storage on a fleet: an instance's retention task prunes the shared store (under
    /// its advisory lock), deleting the environment's visitors not seen for 30 days and their
    /// decisions, and nothing of this instance's local store.
    func testAnInstancePrunesTheFleetsVisitorsNotSeenForTheRetention() async throws {
        let postgres = try postgres()
        let database = try await migratedDatabase(postgres)
        let server = try startedFleetServer()
        defer { server.stop() }
        let now = Date().unixMilliseconds
        let connection = try await connect(postgres, database: database)
        func visitor(_ id: String, updatedAt: Int64) -> VisitorRecord {
            var record = VisitorRecord(visitorId: id, anonymousId: nil, consent: true, document: "{}", updatedAt: updatedAt)
            record.decisions = [DecisionRecord(visitorId: id, decidedAt: updatedAt, campaignId: "c1", variationGroupId: "vg1",
                                               variationId: "var1", source: .bucketingFile, reason: "SPLIT", fileVersion: nil,
                                               context: "{}", flags: "{}")]
            return record
        }
        // Written by other instances: one 40 days ago, one an hour ago.
        try await PostgresVisitorStore(connection: connection, envId: "fleet_env", logger: logger).save([
            visitor("gone", updatedAt: now - 40 * 86_400_000), visitor("recent", updatedAt: now - 3_600_000),
        ])
        try await connection.close()
        let store = store(postgres, database: database)
        try await store.prepare()
        let flagship = Flagship()
        flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheDirectory(directory)
            .withLogLevel(.WARNING)
            .withRetentionSchedule(pruneEvery: 3_600, recordLookupsEvery: 0.05)
            .withPostgresStore(store)
            .build())
        let retention = try XCTUnwrap(flagship.currentRuntime?.retention)

        let deadline = Date().addingTimeInterval(10)
        while retention.counts.prunes == 0, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }

        XCTAssertEqual(retention.counts.prunes, 1)
        XCTAssertEqual(retention.counts.expired, 1)
        XCTAssertEqual(retention.counts.decisionRows, 1)
        XCTAssertEqual(try postgres.psql(database, "SELECT string_agg(visitor_id, ',') FROM flagship.visitors"), "recent")
        XCTAssertEqual(try postgres.psql(database, "SELECT string_agg(visitor_id, ',') FROM flagship.decisions"), "recent")
        await flagship.close()
        await store.close()
    }

    /// A store `prepare()` refused (here: a database holding another application's tables) is
    /// not used at all: acknowledged hits and visitors go to the local store, the bucketing file
    /// too, and nothing is written to that database.
    func testAStoreThatPrepareRefusedIsNotUsedAndTheSDKRunsOnItsLocalStore() async throws {
        let postgres = try postgres()
        let database = try postgres.createDatabase()
        try postgres.psql(database, "CREATE TABLE orders (id integer PRIMARY KEY)")
        let server = try startedFleetServer()
        defer { server.stop() }
        let refused = store(postgres, database: database)
        do {
            try await refused.prepare()
            XCTFail("another application's database is refused")
        } catch {
            XCTAssertEqual(error.code, .sharedDatabase)
        }
        let failing = server.injectFault(.status(500), on: .events)   // hits wait where they were committed
        let flagship = instance(0, store: refused, server: server)
        let visitor = await flagship.newVisitor(visitorId: "local-visitor", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "click"))
        let runtime = try XCTUnwrap(flagship.currentRuntime)
        await runtime.flushCaches()
        let caches = try XCTUnwrap(runtime.caches)
        func local() throws -> (VisitorRecord?, Int) {
            try caches.store.read { db in (try db.visitors.visitor(id: "local-visitor"), try db.hits.count()) }
        }
        let (localVisitor, localHits) = try local()
        XCTAssertNotNil(localVisitor, "the visitor is in the local store")
        XCTAssertGreaterThanOrEqual(localHits, 2, "the click and the consent hit are in the local store")
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'flagship'"), "0",
                       "nothing written to that database")
        server.removeFault(failing)
        await flagship.close()
        await refused.close()
    }

    /// PostgreSQL is away when the instance starts (`prepare()` fails as unreachable): hits are
    /// committed locally; once PostgreSQL is back, the first call that reaches it prepares the
    /// store (the schema is created then), and the hits that follow go there.
    ///
    /// The spill tries PostgreSQL again a second (`retryAfter`) after its last failure. The test
    /// moves the instance's clock past that window rather than waiting for it; a call that began
    /// before PostgreSQL was back may still fail after that and open a new window, so each hit
    /// after the restart moves the clock again, until one is in PostgreSQL (20 s at most).
    func testAStorePostgresWasAwayForAtStartIsPreparedOnceItIsBack() async throws {
        let (postgres, database) = try ownPostgres()
        defer { postgres.stop() }
        try postgres.kill()
        let server = try startedFleetServer()
        defer { server.stop() }
        let failing = server.injectFault(.status(500), on: .events)   // hits wait where they were committed
        let store = impatientStore(postgres, database: database)
        do {
            try await store.prepare(timeout: .seconds(2))
            XCTFail("PostgreSQL is away")
        } catch {
            XCTAssertEqual(error.code, .unreachable)
        }
        let offset = Locked(0.0)
        let flagship = instance(0, store: store, server: server, clock: { Date().addingTimeInterval(offset.withLock { $0 }) })
        let visitor = await flagship.newVisitor(visitorId: "visitor-0", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "while-away"))

        try postgres.start()
        func sharedHits() throws -> Int {
            guard try postgres.psql(database, "SELECT count(*) FROM pg_tables WHERE schemaname = 'flagship' AND tablename = 'hits'") == "1" else {
                return 0
            }
            return Int(try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE document LIKE '%once-back%'")) ?? 0
        }
        var sent: Set<String> = []
        let deadline = ContinuousClock.now + .seconds(20)
        repeat {
            offset.withLock { $0 += 2 }   // past the spill's window: PostgreSQL is tried again
            let action = "once-back-\(sent.count)"
            try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: action))
            sent.insert(action)
        } while try sharedHits() == 0 && ContinuousClock.now < deadline
        XCTAssertEqual(try sharedHits(), 1, "a hit sent once PostgreSQL was back is committed there")
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.schema_migrations"), "\(PostgresMigrator().latestVersion)",
                       "prepared by the SDK once reachable")
        server.removeFault(failing)
        let delivered = try await server.waitForHits(count: 2 + sent.count, timeout: .seconds(20))
        let actions = Set(delivered.compactMap { $0["ea"]?.stringValue })
        XCTAssertEqual(actions.intersection(sent.union(["while-away"])), sent.union(["while-away"]), "every hit delivered: \(actions)")
        await flagship.close()
        await store.close()
    }

    /// A full disk on the PostgreSQL server refuses new rows while reads, claims and deletes still
    /// work (simulated by a trigger that fails every insert into the hits table as a full disk
    /// does, SQLSTATE 53100). The instance says once that the store cannot be used, not again at
    /// each read that works after each retry window; and once that it is back, when hits are
    /// committed there again. Every hit is delivered.
    func testAFullDiskThatRefusesNewHitsIsOneOutageNotALineAtEachRetry() async throws {
        let postgres = try postgres()
        let database = try await migratedDatabase(postgres)
        let server = try startedFleetServer()
        defer { server.stop() }
        try postgres.psql(database, """
            CREATE FUNCTION flagship.test_full_disk() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$;
            CREATE TRIGGER test_full_disk BEFORE INSERT ON flagship.hits FOR EACH ROW EXECUTE FUNCTION flagship.test_full_disk();
            """)
        // Tried again 100 ms after each failure.
        let store = FlagshipPostgresStore(.init(host: postgres.host, port: postgres.port, username: postgres.username,
                                                password: postgres.password, database: database),
                                          sharesDatabase: false, logger: logger, callTimeout: .seconds(5), retryAfter: 0.1)
        try await store.prepare()
        let warnings = WarningLog()
        let flagship = instance(0, store: store, server: server, logger: warnings.logger)

        // Each round: past the window, a visitor looked up (a read that works), a hit sent (an
        // insert that fails), the sender's claims and settlements between them.
        for round in 1...12 {
            try await Task.sleep(for: .milliseconds(150))
            let visitor = await flagship.newVisitor(visitorId: "visitor-\(round % 3)", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
            try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "full-\(round)"))
        }
        let outageLines = { warnings.lines.filter { $0.hasPrefix("The PostgreSQL store cannot be used") } }
        let backLines = { warnings.lines.filter { $0.hasPrefix("The PostgreSQL store is back") } }
        XCTAssertEqual(outageLines().count, 1, warnings.lines.joined(separator: "\n"))
        XCTAssertTrue(outageLines().first?.contains("No space left on device") ?? false, warnings.lines.joined(separator: "\n"))
        XCTAssertEqual(backLines().count, 0, "no hit was committed to PostgreSQL: " + warnings.lines.joined(separator: "\n"))
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.hits"), "0")

        try postgres.psql(database, "DROP TRIGGER test_full_disk ON flagship.hits")
        try await Task.sleep(for: .milliseconds(150))
        let visitor = await flagship.newVisitor(visitorId: "visitor-back", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "room-again"))
        XCTAssertEqual(backLines().count, 1, warnings.lines.joined(separator: "\n"))
        XCTAssertEqual(outageLines().count, 1)

        try await waitForDelivery(of: Set((1...12).map { "full-\($0)" } + ["room-again"]), to: server)
        await flagship.close()
        await store.close()
    }

    /// A row PostgreSQL refuses for what it holds (here a check a DBA added, SQLSTATE 23514; a
    /// character the database's encoding lacks does the same) is kept alone in the instance's
    /// local store and sent from there: the other visitors' hits of the same group commits are in
    /// PostgreSQL, no outage is said, and every hit is delivered once the events endpoint answers.
    func testARowPostgresRefusesIsKeptLocallyAloneAndTheRestOfTheCommitIsShared() async throws {
        let postgres = try postgres()
        let database = try await migratedDatabase(postgres)
        let server = try startedFleetServer()
        defer { server.stop() }
        try postgres.psql(database, """
            ALTER TABLE flagship.hits ADD CONSTRAINT test_refused CHECK (visitor_id <> 'refused');
            ALTER TABLE flagship.visitors ADD CONSTRAINT test_refused CHECK (visitor_id <> 'refused');
            """)
        let store = store(postgres, database: database)
        try await store.prepare()
        let failing = server.injectFault(.status(500), on: .events)   // hits wait where they were committed
        let warnings = WarningLog()
        let flagship = instance(0, store: store, server: server, logger: warnings.logger)

        // Sent at once, so that group commits hold the refused visitor's rows beside the others'.
        let ids = ["alice", "refused", "bob", "carol"]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in ids {
                group.addTask {
                    let visitor = await flagship.newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
                    try await visitor.fetchFlags()
                    for number in 1...5 {
                        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "\(id)-\(number)"))
                    }
                }
            }
            try await group.waitForAll()
        }
        await flagship.currentRuntime?.flushCaches()

        XCTAssertEqual(warnings.lines.filter { $0.hasPrefix("The PostgreSQL store cannot be used") }, [], "no outage")
        let refusals = warnings.lines.filter { $0.hasPrefix("The PostgreSQL store refused") }
        XCTAssertFalse(refusals.isEmpty, warnings.lines.joined(separator: "\n"))
        XCTAssertTrue(refusals.allSatisfy { $0.contains("test_refused") && $0.contains("kept in this instance's local store") }, refusals.joined(separator: "\n"))
        XCTAssertEqual(try postgres.psql(database, "SELECT count(*) FROM flagship.hits WHERE NOT is_consent"), "15", "the other visitors' hits are shared")
        XCTAssertEqual(try postgres.psql(database, "SELECT string_agg(visitor_id, ',' ORDER BY visitor_id) FROM flagship.visitors"), "alice,bob,carol")
        let caches = try XCTUnwrap(flagship.currentRuntime?.caches)
        let (local, refusedDocument) = try await caches.store.read { db in
            (try db.hits.page(limit: 100).filter { !$0.isConsent }.map(\.visitorId), try db.visitors.visitor(id: "refused"))
        }
        XCTAssertEqual(local, Array(repeating: "refused", count: 5), "only the refused visitor's hits are local")
        XCTAssertNotNil(refusedDocument, "and its document, which lookups read")

        server.removeFault(failing)
        try await waitForDelivery(of: Set(ids.flatMap { id in (1...5).map { "\(id)-\($0)" } }), to: server)
        await flagship.close()
        await store.close()
    }

    /// Instance A downloads the bucketing file and shares it; instance B starts with a store of
    /// its own and no bucketing server to reach: it decides from the fleet's file.
    func testNewInstanceDecidesFromTheFleetsBucketingFileWhenItCannotDownloadOne() async throws {
        let postgres = try postgres()
        let database = try await migratedDatabase(postgres)
        let server = try startedFleetServer()
        defer { server.stop() }
        try server.setBucketingFile(PostgresFleetProcessTests.bucketingFile(greenShare: 100))
        let stores = [store(postgres, database: database), store(postgres, database: database)]
        for store in stores { try await store.prepare() }
        func bucketing(_ number: Int, bucketingURL: URL) -> Flagship {
            let flagship = Flagship()
            flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
                .Bucketing().withBucketingBaseURL(bucketingURL)
                .withDecisionBaseURL(server.decisionBaseURL).withEventsBaseURL(server.eventsBaseURL)
                .withCacheDirectory(directory.appendingPathComponent("instance-\(number)"))
                .withLogLevel(.NONE)
                .withPostgresStore(stores[number]).build())
            return flagship
        }
        let first = bucketing(0, bucketingURL: server.bucketingBaseURL)
        let deadline = ContinuousClock.now + .seconds(10)
        while try postgres.psql(database, "SELECT count(*) FROM flagship.bucketing") != "1", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        await first.close()

        let nowhere = URL(string: "http://127.0.0.1:9/")!   // the discard port: nothing answers
        let second = bucketing(1, bucketingURL: nowhere)
        let statusDeadline = ContinuousClock.now + .seconds(10)
        while second.getStatus() != .SDK_INITIALIZED, ContinuousClock.now < statusDeadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTAssertEqual(second.getStatus(), .SDK_INITIALIZED, "ready from the fleet's file")
        let visitor = await second.newVisitor(visitorId: "anyone", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none"), "green")
        await second.close()
        for store in stores { await store.close() }
    }
}

private extension FSEvent {
    func withLabel(_ label: String) -> FSEvent {
        self.label = label
        return self
    }
}
#endif
