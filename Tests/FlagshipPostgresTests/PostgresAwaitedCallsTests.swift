#if Postgres
import FlagshipStore
import Foundation
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import Flagship
@testable import FlagshipPostgres

/// The sender's calls into PostgreSQL (claims, settlements) are awaited: while PostgreSQL does
/// not answer, they hold no thread, the cooperative pool's or another, and each ends at the
/// store's `callTimeout` with `.unreachable`.
final class PostgresAwaitedCallsTests: PostgresTestCase {
    private let callTimeout: Duration = .seconds(1)

    /// What `calls` concurrent calls of `call` did: each one's error code (`nil`: it worked),
    /// how long a task started after them on the pool waited to run, and how long they all took.
    private func concurrently(_ calls: Int, _ call: @escaping @Sendable (Int) async throws -> Void) async
        -> (codes: [FSCacheError.Code?], probeWaited: Duration, took: Duration) {
        let started = ContinuousClock.now
        let (codes, probeWaited) = await withTaskGroup(of: FSCacheError.Code?.self) { group in
            for number in 0..<calls {
                group.addTask {
                    do {
                        try await call(number)
                        return nil
                    } catch {
                        return (error as? FSCacheError)?.code
                    }
                }
            }
            // Started after the calls, on the same pool.
            let probe = Task.detached { ContinuousClock.now - started }
            let probeWaited = await probe.value
            var codes: [FSCacheError.Code?] = []
            for await code in group { codes.append(code) }
            return (codes, probeWaited)
        }
        return (codes, probeWaited, ContinuousClock.now - started)
    }

    private func impatientStore(_ server: TemporaryPostgres, database: String) -> FlagshipPostgresStore {
        FlagshipPostgresStore(.init(host: server.host, port: server.port, username: server.username,
                                    password: server.password, database: database),
                              sharesDatabase: false, logger: logger, callTimeout: callTimeout, retryAfter: 1)
    }

    private func queue(_ store: FlagshipPostgresStore, owner: String) -> PostgresHitQueue {
        PostgresHitQueue(store: store, envId: "env", owner: owner, leaseMilliseconds: 60_000, logger: logger,
                         now: { Int64((Date().timeIntervalSince1970 * 1000).rounded()) })
    }

    /// 64 claims and 64 settlements wait for a table another session keeps locked: a task started
    /// after them runs at once (none of them holds a thread of the pool, which has two here, one
    /// in the one-thread job), and each ends at the timeout, unreachable. Once the lock goes, a
    /// claim works again.
    func testClaimsAndSettlementsWaitingForPostgreSQLHoldNoThread() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let store = impatientStore(server, database: database)
        try await store.prepare()
        let locker = try await connect(server, database: database)
        try await locker.query("BEGIN", logger: logger)
        try await locker.query("LOCK TABLE flagship.hits IN ACCESS EXCLUSIVE MODE", logger: logger)

        let queues = (0..<64).map { queue(store, owner: "instance-\($0)") }
        let (codes, probeWaited, took) = await concurrently(128) { number in
            let queue = queues[number / 2]
            if number.isMultiple(of: 2) {
                _ = try await queue.claim(.events, limit: 10, now: queue.now())
            } else {
                try await queue.settle(HitSettlement(delivered: ["v\(number):0001"]))
            }
        }
        try await locker.query("ROLLBACK", logger: logger)
        try await locker.close()
        let after = queue(store, owner: "after")
        let claimedAfter = try await after.claim(.events, limit: 10, now: after.now())
        await store.close()

        XCTAssertLessThan(probeWaited, .milliseconds(500), "a task on the pool ran while the calls waited")
        XCTAssertEqual(codes.count, 128)
        XCTAssertEqual(codes.filter { $0 == .unreachable }.count, 128, "each call ended unreachable: \(codes)")
        XCTAssertGreaterThanOrEqual(took, callTimeout)
        XCTAssertLessThan(took, callTimeout * 4, "the calls ended at their timeout, together")
        XCTAssertEqual(claimedAfter, [], "the table answers again, empty")
    }

    /// The fleet's bucketing file is read and written the same way: 32 reads wait for a locked
    /// `flagship.bucketing` holding no thread, and end at the timeout; then a save and a read work.
    func testTheFleetsBucketingFileIsAwaitedToo() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let store = impatientStore(server, database: database)
        try await store.prepare()
        let files = PostgresBucketingFiles(store: store, envId: "env", logger: logger)
        let locker = try await connect(server, database: database)
        try await locker.query("BEGIN", logger: logger)
        try await locker.query("LOCK TABLE flagship.bucketing IN ACCESS EXCLUSIVE MODE", logger: logger)

        let (codes, probeWaited, took) = await concurrently(32) { _ in _ = try await files.file() }
        try await locker.query("ROLLBACK", logger: logger)
        try await locker.close()
        let record = BucketingRecord(envId: "env", document: #"{"campaigns":[]}"#, lastModified: nil, downloadedAt: 1_000)
        try await files.save(record)
        let read = try await files.file()
        await store.close()

        XCTAssertLessThan(probeWaited, .milliseconds(500), "a task on the pool ran while the reads waited")
        XCTAssertEqual(codes.filter { $0 == .unreachable }.count, 32, "each read ended unreachable: \(codes)")
        XCTAssertLessThan(took, callTimeout * 4, "the reads ended at their timeout, together")
        XCTAssertEqual(read?.document, record.document)
        XCTAssertEqual(read?.downloadedAt, 1_000)
    }

    /// A caller that gives up (a visitor lookup past its deadline is cancelled) is not an outage:
    /// the spill neither says PostgreSQL cannot be used nor stops trying it for its retry delay,
    /// whether it was cancelled before it reached PostgreSQL or while it waited for a connection
    /// (postgres-nio's `requestCancelled`). The next
    /// hit is committed to PostgreSQL.
    func testACancelledCallerIsNotAPostgreSQLOutage() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let store = impatientStore(server, database: database)
        try await store.prepare()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-cancelled-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let local = try FlagshipDatabase.open(at: directory.appendingPathComponent("flagship.sqlite"))
        defer { local.close() }
        let warnings = WarningLog()
        let now: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
        let spilling = SpillingHitQueue(primary: queue(store, owner: "instance"),
                                        spill: LocalHitsAndVisitors(hits: SQLiteHitQueue(store: local, capacity: 100, leaseDuration: 60, logger: logger),
                                                                    store: local),
                                        retryAfter: 60, logger: warnings.logger, now: now)

        // Cancelled before it reaches PostgreSQL.
        let early = Task { try await spilling.lookUpVisitor(id: "visitor") }
        early.cancel()
        _ = try? await early.value
        // Cancelled while it waits for a connection of the pool (8): another session locks the
        // visitors table, and 8 lookups wait for it, one on each connection.
        let locker = try await connect(server, database: database)
        try await locker.query("BEGIN", logger: logger)
        try await locker.query("LOCK TABLE flagship.visitors IN ACCESS EXCLUSIVE MODE", logger: logger)
        let holding = (0..<8).map { _ in Task { try await spilling.lookUpVisitor(id: "visitor") } }
        try await Task.sleep(for: .milliseconds(200))
        let waiting = Task { try await spilling.lookUpVisitor(id: "visitor") }
        try await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        _ = try? await waiting.value
        try await locker.query("ROLLBACK", logger: logger)
        try await locker.close()
        for lookup in holding {
            let found = try await lookup.value
            XCTAssertNil(found, "the 8 lookups that waited for the lock were answered")
        }

        XCTAssertTrue(spilling.primaryIsUp, "PostgreSQL is still tried")
        XCTAssertEqual(warnings.lines.filter { $0.contains("cannot be used") }, [])
        let hit = CachedHit(OutgoingHit(id: "visitor:000001", type: "EVENT", createdAt: now(), fields: [
            "t": .string("EVENT"), "vid": .string("visitor"), "ds": .string("APP"), "cid": .string("env"),
            "ec": .string("Action Tracking"), "ea": .string("after"),
        ]))
        _ = try await spilling.save([hit])
        XCTAssertEqual(try server.psql(database, "SELECT count(*) FROM flagship.hits WHERE visitor_id = 'visitor'"), "1",
                       "the hit is committed to PostgreSQL, not to the local spill")
        let spilled = try await local.read { try $0.hits.count() }
        XCTAssertEqual(spilled, 0)
        await store.close()
    }
}
#endif
