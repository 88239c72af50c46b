#if Postgres
import FlagshipStore
import Foundation
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import FlagshipPostgres

/// Visitor retention on a fleet's store: the prune by last-seen time and budget with the
/// visitors' decisions, lookups counted as sightings, one instance pruning at a time.
final class PostgresRetentionTests: PostgresTestCase {
    private static let day: Int64 = 86_400_000
    private let now: Int64 = 1_763_700_000_000

    private func record(_ id: String, daysAgo: Int64) -> VisitorRecord {
        var record = VisitorRecord(visitorId: id, anonymousId: nil, consent: true, document: #"{"version":1}"#,
                                   updatedAt: now - daysAgo * Self.day)
        record.decisions = [DecisionRecord(visitorId: id, decidedAt: record.updatedAt, campaignId: "c1", variationGroupId: "vg1",
                                           variationId: "var1", source: .bucketingFile, reason: "SPLIT", fileVersion: nil,
                                           context: "{}", flags: "{}")]
        return record
    }

    private func visitorIds(_ server: TemporaryPostgres, _ database: String, table: String = "visitors") throws -> String {
        try server.psql(database, "SELECT coalesce(string_agg(DISTINCT visitor_id, ',' ORDER BY visitor_id), '') FROM flagship.\(table) WHERE env_id = 'env'")
    }

    func testPruneDeletesTheVisitorsNotSeenWithTheirDecisionsInBatchesAndLeavesOtherEnvironments() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let connection = try await connect(server, database: database)
        let visitors = PostgresVisitorStore(connection: connection, envId: "env", logger: logger)
        try await visitors.save((0..<5).map { record("old-\($0)", daysAgo: 40) } + [record("kept", daysAgo: 29)])
        try await PostgresVisitorStore(connection: connection, envId: "other", logger: logger).save([record("old-0", daysAgo: 40)])
        let store = store(server, database: database)

        let prune = try await store.pruneVisitors(envId: "env", notSeenSince: now - 30 * Self.day, keepingAtMost: nil, batchSize: 2)

        XCTAssertEqual(prune, VisitorPrune(expired: 5, decisionRows: 5, transactions: 3))
        XCTAssertEqual(try visitorIds(server, database), "kept")
        XCTAssertEqual(try visitorIds(server, database, table: "decisions"), "kept")
        XCTAssertEqual(try server.psql(database, "SELECT count(*) FROM flagship.visitors WHERE env_id = 'other'"), "1")
        try await connection.close()
        await store.close()
    }

    func testALookupRecordsTheSightingSoAReturningVisitorIsKept() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let connection = try await connect(server, database: database)
        let visitors = PostgresVisitorStore(connection: connection, envId: "env", logger: logger)
        try await visitors.save([record("returning", daysAgo: 40), record("gone", daysAgo: 40)])

        let found = try await visitors.visitor(id: "returning", seenAt: now)
        let store = store(server, database: database)
        let prune = try await store.pruneVisitors(envId: "env", notSeenSince: now - 30 * Self.day, keepingAtMost: nil)

        XCTAssertEqual(found?.updatedAt, now - 40 * Self.day, "a sighting is not a write of the document")
        XCTAssertEqual(prune?.expired, 1)
        XCTAssertEqual(try visitorIds(server, database), "returning")
        XCTAssertEqual(try server.psql(database, "SELECT last_seen_at FROM flagship.visitors WHERE visitor_id = 'returning'"), "\(now)")
        try await connection.close()
        await store.close()
    }

    func testALookupWithinTheHourOfTheLastSightingWritesNothing() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let connection = try await connect(server, database: database)
        let visitors = PostgresVisitorStore(connection: connection, envId: "env", logger: logger)
        try await visitors.save([VisitorRecord(visitorId: "v", anonymousId: nil, consent: true, document: "{}", updatedAt: now)])

        _ = try await visitors.visitor(id: "v", seenAt: now + VisitorSightings.defaultResolutionMilliseconds - 1)

        XCTAssertEqual(try server.psql(database, "SELECT last_seen_at FROM flagship.visitors WHERE visitor_id = 'v'"), "\(now)")
        try await connection.close()
    }

    func testTheBudgetEvictsTheLeastRecentlySeenFirst() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let connection = try await connect(server, database: database)
        try await PostgresVisitorStore(connection: connection, envId: "env", logger: logger).save(
            [record("seen-5", daysAgo: 5), record("seen-1", daysAgo: 1), record("seen-9", daysAgo: 9), record("seen-3", daysAgo: 3)])
        let store = store(server, database: database)

        let prune = try await store.pruneVisitors(envId: "env", notSeenSince: nil, keepingAtMost: 2, batchSize: 1)

        XCTAssertEqual(prune, VisitorPrune(evicted: 2, decisionRows: 2, transactions: 3))
        XCTAssertEqual(try visitorIds(server, database), "seen-1,seen-3")
        try await connection.close()
        await store.close()
    }

    func testOnlyOneInstancePrunesAnEnvironmentAtATime() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let other = try await connect(server, database: database)
        try await PostgresVisitorStore(connection: other, envId: "env", logger: logger).save([record("old", daysAgo: 40)])
        // Another instance pruning this environment now.
        try await other.query("SELECT pg_advisory_lock(\(FlagshipPostgresStore.pruneLockClass), hashtext('env'))", logger: logger)
        let store = store(server, database: database)

        let whileHeld = try await store.pruneVisitors(envId: "env", notSeenSince: now, keepingAtMost: nil)
        XCTAssertNil(whileHeld)
        XCTAssertEqual(try visitorIds(server, database), "old")

        try await other.query("SELECT pg_advisory_unlock(\(FlagshipPostgresStore.pruneLockClass), hashtext('env'))", logger: logger)
        let afterwards = try await store.pruneVisitors(envId: "env", notSeenSince: now, keepingAtMost: nil)
        XCTAssertEqual(afterwards?.expired, 1)
        XCTAssertEqual(try server.psql(database, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = \(FlagshipPostgresStore.pruneLockClass)"),
                       "0", "the prune let its lock go")
        try await other.close()
        await store.close()
    }
}
#endif
