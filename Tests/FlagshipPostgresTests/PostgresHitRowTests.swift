#if Postgres
import Dispatch
import FlagshipStore
import Foundation
import PostgresTestSupport
import XCTest

@testable import Flagship
@testable import FlagshipPostgres

/// One reader of a `flagship.hits` row: the claim, `db inspect`/`hits`, `flagship export` and a
/// visitor's data read every column, an activate's provenance included, as the SQLite store does.
final class PostgresHitRowTests: PostgresTestCase {
    private let now: Int64 = 1_763_700_000_000
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-hit-row-\(UUID().uuidString)")

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// An activate decided on a bucketing file: its version and when the decision was made.
    private func activate(createdAt: Int64) -> OutgoingHit {
        var hit = OutgoingHit.activate(identity: .init(visitorId: "alice", anonymousId: "anon-a"), variationGroupId: "vg1",
                                       variationId: "var1", createdAt: createdAt)
        hit.fileVersion = String(repeating: "ab", count: 32)
        hit.decidedAt = createdAt - 5_000
        return hit
    }

    private func location(_ server: TemporaryPostgres, database: String) -> FlagshipPostgresStore.Location {
        .init(host: server.host, port: server.port, username: server.username, password: server.password, database: database)
    }

    func testEveryReaderOfARowCarriesAnActivatesProvenance() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let record = HitRecord(activate(createdAt: now))
        let connection = try await connect(server, database: database)
        try await PostgresHitStore(connection: connection, envId: "env", logger: logger).insert([record])

        let location = location(server, database: database)
        let inspected = try await PostgresInspection.read(location) { try await $0.hits(envId: "env", limit: 10) }
        let exported = try await PostgresInspection.read(location) { try await $0.visitorData(envId: "env", visitorId: "alice") }
        let store = store(server, database: database)
        let visitorData = try await store.visitorDataRecords(envId: "env", visitorId: "alice")
        await store.close()
        let claimed = try await PostgresHitStore(connection: connection, envId: "env", logger: logger)
            .claim(.activate, owner: "me", now: now, leaseUntil: now + 60_000, limit: 10)
        try await connection.close()

        XCTAssertEqual(inspected, [record], "db inspect, hits")
        XCTAssertEqual(exported.hits, [record], "flagship export")
        XCTAssertEqual(visitorData.hits, [record], "visitorData")
        var leased = record
        (leased.leaseOwner, leased.leaseUntil) = ("me", now + 60_000)
        XCTAssertEqual(claimed, [leased], "the claim")
    }

    /// The same rows in the two stores are listed alike: every column the SQLite reader carries.
    func testAListingOnPostgreSQLShowsWhatOneOnSQLiteShows() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let event = HitRecord(id: "alice:2", visitorId: "alice", type: "EVENT", isConsent: true,
                              document: #"{"version":1,"data":{"type":"EVENT"}}"#, createdAt: now + 1)
        let records = [HitRecord(activate(createdAt: now)), event]
        let connection = try await connect(server, database: database)
        try await PostgresHitStore(connection: connection, envId: "env", logger: logger).insert(records)
        try await connection.close()
        let edit = "SET attempts = 2, next_attempt_at = \(now + 9), lease_owner = 'host 7', lease_until = \(now + 60_000) WHERE id = 'alice:2'"
        _ = try server.psql(database, "UPDATE flagship.hits " + edit)
        let onSQLite = try sqliteListing(records, edit: "UPDATE main.hits " + edit)

        let onPostgres = try await PostgresInspection.read(location(server, database: database)) { inspection in
            (try await inspection.hits(envId: "env", limit: 10), try await inspection.visitorData(envId: "env", visitorId: "alice").hits)
        }

        XCTAssertEqual(onPostgres.0, onSQLite.0)
        XCTAssertEqual(onPostgres.1, onSQLite.1)
        XCTAssertEqual(onSQLite.0.map(\.attempts), [0, 2], "the edit reached both")
        XCTAssertEqual(onSQLite.0.first?.fileVersion, String(repeating: "ab", count: 32))
    }

    /// A store inspected before schema version 3 (which brought the provenance), not migrated:
    /// its hits are listed, with none.
    func testAStoreOlderThanTheProvenanceListsItsHitsWithout() async throws {
        let server = try postgres()
        let database = try await databaseAtVersion(2, of: server)
        _ = try server.psql(database, """
            INSERT INTO flagship.hits (env_id, id, visitor_id, type, document, created_at) VALUES ('env', 'alice:1', 'alice', 'EVENT', '{}', 5)
            """)

        let (version, hits) = try await PostgresInspection.read(location(server, database: database)) { inspection in
            (inspection.schema.version, try await inspection.hits(envId: "env", limit: 10))
        }

        XCTAssertEqual(version, 2)
        XCTAssertEqual(hits, [HitRecord(id: "alice:1", visitorId: "alice", type: "EVENT", document: "{}", createdAt: 5)])
    }

    /// `records` written to a SQLite store and edited by `edit`: its listing and alice's hits.
    private func sqliteListing(_ records: [HitRecord], edit: String) throws -> ([HitRecord], [HitRecord]) {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = try FlagshipDatabase.open(at: directory.appendingPathComponent("hits.sqlite"))
        defer { file.close() }
        try file.write { db in
            try db.hits.insert(records)
            _ = try db.execute(edit)
        }
        var unreadable = 0
        return try file.read { db in (try db.hits.page(limit: 10), try db.hits.hits(visitorId: "alice", unreadable: &unreadable)) }
    }

    /// The SDK's claim through its queue: the activate comes back with its provenance, in the
    /// SDK's time.
    func testTheQueuesClaimGivesBackAnActivatesProvenance() async throws {
        let server = try postgres()
        let store = store(server, database: try await migratedDatabase(server))
        let queue = PostgresHitQueue(store: store, envId: "env", owner: "me", leaseMilliseconds: 60_000, logger: logger,
                                     now: { Int64((Date().timeIntervalSince1970 * 1000).rounded()) })
        let hit = activate(createdAt: queue.now() - 1_000)

        // The writer's save and the sender's claim, both awaited.
        _ = try await queue.save([CachedHit(hit)])
        let claimed = try await queue.claim(.activate, limit: 10, now: queue.now())
        await store.close()

        XCTAssertEqual(claimed, [hit])
        XCTAssertEqual(claimed.first?.fileVersion, String(repeating: "ab", count: 32))
        XCTAssertEqual(claimed.first?.decidedAt, hit.decidedAt)
    }
}
#endif
