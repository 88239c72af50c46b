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
        let store = FlagshipPostgresStore(.init(host: server.host, port: server.port, username: server.username,
                                                password: server.password, database: database),
                                          sharesDatabase: false, logger: logger, callTimeout: callTimeout, retryAfter: 1)
        try await store.prepare()
        let locker = try await connect(server, database: database)
        try await locker.query("BEGIN", logger: logger)
        try await locker.query("LOCK TABLE flagship.hits IN ACCESS EXCLUSIVE MODE", logger: logger)

        let started = ContinuousClock.now
        let (codes, probeWaited) = await withTaskGroup(of: FSCacheError.Code?.self) { group in
            for number in 0..<64 {
                let queue = queue(store, owner: "instance-\(number)")
                group.addTask {
                    do {
                        _ = try await queue.claim(.events, limit: 10, now: queue.now())
                        return nil
                    } catch {
                        return (error as? FSCacheError)?.code
                    }
                }
                group.addTask {
                    do {
                        try await queue.settle(HitSettlement(delivered: ["v\(number):0001"]))
                        return nil
                    } catch {
                        return (error as? FSCacheError)?.code
                    }
                }
            }
            // Started after the 128 calls, on the same pool.
            let probe = Task.detached { ContinuousClock.now - started }
            let probeWaited = await probe.value
            var codes: [FSCacheError.Code?] = []
            for await code in group { codes.append(code) }
            return (codes, probeWaited)
        }
        let took = ContinuousClock.now - started
        try await locker.query("ROLLBACK", logger: logger)
        try await locker.close()
        let claimedAfter = try await queue(store, owner: "after").claim(.events, limit: 10, now: queue(store, owner: "x").now())
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
        let store = FlagshipPostgresStore(.init(host: server.host, port: server.port, username: server.username,
                                                password: server.password, database: database),
                                          sharesDatabase: false, logger: logger, callTimeout: callTimeout, retryAfter: 1)
        try await store.prepare()
        let files = PostgresBucketingFiles(store: store, envId: "env", logger: logger)
        let locker = try await connect(server, database: database)
        try await locker.query("BEGIN", logger: logger)
        try await locker.query("LOCK TABLE flagship.bucketing IN ACCESS EXCLUSIVE MODE", logger: logger)

        let started = ContinuousClock.now
        let (codes, probeWaited) = await withTaskGroup(of: FSCacheError.Code?.self) { group in
            for _ in 0..<32 {
                group.addTask {
                    do {
                        _ = try await files.file()
                        return nil
                    } catch {
                        return (error as? FSCacheError)?.code
                    }
                }
            }
            let probe = Task.detached { ContinuousClock.now - started }
            let probeWaited = await probe.value
            var codes: [FSCacheError.Code?] = []
            for await code in group { codes.append(code) }
            return (codes, probeWaited)
        }
        let took = ContinuousClock.now - started
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
}
#endif
