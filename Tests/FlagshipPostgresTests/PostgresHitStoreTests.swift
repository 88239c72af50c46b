#if Postgres
import FlagshipStore
import Foundation
import PostgresNIO
import XCTest

@testable import FlagshipPostgres

/// The hit queue of a fleet, on a real PostgreSQL: instances claiming at once never take the same
/// hit, a lapsed lease gives the hits to the others, a failure backs the whole fleet off.
final class PostgresHitStoreTests: PostgresTestCase {
    private let now: Int64 = 1_763_700_000_000

    private func hits(_ count: Int, type: String = "EVENT", from first: Int = 0) -> [HitRecord] {
        (first..<(first + count)).map { number in
            HitRecord(id: "v\(number % 7):\(String(format: "%06d", number))", visitorId: "v\(number % 7)", type: type,
                      document: #"{"version":1,"data":{"n":\#(number)}}"#, createdAt: now + Int64(number))
        }
    }

    func testInsertingAgainKeepsTheFirstRowAndCountsOnlyNewOnes() async throws {
        let server = try postgres()
        let connection = try await connect(server, database: try await migratedDatabase(server))
        let store = PostgresHitStore(connection: connection, envId: "env", logger: logger)

        let first = try await store.insert(hits(3))
        let again = try await store.insert(hits(4))
        let other = PostgresHitStore(connection: connection, envId: "other_env", logger: logger)
        let elsewhere = try await other.insert(hits(2))

        XCTAssertEqual([first, again, elsewhere], [3, 1, 2])
        let count = try await store.count()
        XCTAssertEqual(count, 4, "each environment has its own rows")
        try await connection.close()
    }

    /// Three instances, each on its own connection, claim pages at once until nothing is left:
    /// every hit is claimed exactly once.
    func testThreeInstancesClaimingAtOnceNeverTakeTheSameHit() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let setup = try await connect(server, database: database)
        try await PostgresHitStore(connection: setup, envId: "env", logger: logger).insert(hits(3_000))
        try await setup.close()

        let (logger, now) = (logger, now)
        let claims = try await withThrowingTaskGroup(of: [String].self) { group in
            for instance in 0..<3 {
                group.addTask {
                    let connection = try await Self.connect(server, database: database, logger: logger)
                    let store = PostgresHitStore(connection: connection, envId: "env", logger: logger)
                    var mine: [String] = []
                    while true {
                        let page = try await store.claim(.events, owner: "instance-\(instance)", now: now,
                                                         leaseUntil: now + 60_000, limit: 100)
                        if page.isEmpty { break }
                        mine += page.map(\.id)
                    }
                    try await connection.close()
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        let all = claims.flatMap { $0 }
        XCTAssertEqual(all.count, 3_000, "claimed once each: \(claims.map(\.count))")
        XCTAssertEqual(Set(all), Set(hits(3_000).map(\.id)))
        XCTAssertTrue(claims.allSatisfy { !$0.isEmpty }, "the three shared the work: \(claims.map(\.count))")
    }

    /// An instance killed mid-send holds its lease until it lapses; then the next claim takes
    /// its hits, and the dead instance's late settle changes nothing.
    func testALapsedLeaseGivesTheHitsToTheNextInstance() async throws {
        let server = try postgres()
        let connection = try await connect(server, database: try await migratedDatabase(server))
        let store = PostgresHitStore(connection: connection, envId: "env", logger: logger)
        try await store.insert(hits(5))

        let killed = try await store.claim(.events, owner: "killed", now: now, leaseUntil: now + 60_000, limit: 3)
        let whileLeased = try await store.claim(.events, owner: "survivor", now: now + 59_999, leaseUntil: now + 120_000, limit: 10)
        let afterLapse = try await store.claim(.events, owner: "survivor", now: now + 60_000, leaseUntil: now + 120_000, limit: 10)
        let lateSettle = try await store.settle(done: killed.map(\.id), owner: "killed")
        let settled = try await store.settle(done: afterLapse.map(\.id), owner: "survivor")

        XCTAssertEqual(killed.map(\.id), hits(3).map(\.id), "oldest first")
        XCTAssertEqual(whileLeased.map(\.id), hits(5).suffix(2).map(\.id), "only what nobody holds")
        XCTAssertEqual(afterLapse.map(\.id), hits(3).map(\.id))
        XCTAssertEqual(lateSettle, 0, "the killed instance no longer holds them")
        XCTAssertEqual(settled, 3)
        let left = try await store.count()
        XCTAssertEqual(left, 2)
        try await connection.close()
    }

    func testAFailedAttemptBacksOffEveryInstanceUntilItsTime() async throws {
        let server = try postgres()
        let connection = try await connect(server, database: try await migratedDatabase(server))
        let store = PostgresHitStore(connection: connection, envId: "env", logger: logger)
        try await store.insert(hits(1))

        let first = try await store.claim(.events, owner: "a", now: now, leaseUntil: now + 60_000, limit: 10)
        try await store.settle(done: [], failed: first.map(\.id), owner: "a", nextAttemptAt: now + 5_000)
        let early = try await store.claim(.events, owner: "b", now: now + 4_999, leaseUntil: now + 60_000, limit: 10)
        let onTime = try await store.claim(.events, owner: "b", now: now + 5_000, leaseUntil: now + 60_000, limit: 10)

        XCTAssertEqual(early, [])
        XCTAssertEqual(onTime.map(\.attempts), [1])
        XCTAssertEqual(onTime.map(\.nextAttemptAt), [now + 5_000])
        try await connection.close()
    }

    func testActivatesAndHitsAreClaimedApartAndAReleasedClaimIsFreeAtOnce() async throws {
        let server = try postgres()
        let connection = try await connect(server, database: try await migratedDatabase(server))
        let store = PostgresHitStore(connection: connection, envId: "env", logger: logger)
        try await store.insert(hits(2) + hits(2, type: "ACTIVATE", from: 10))

        let activates = try await store.claim(.activate, owner: "a", now: now, leaseUntil: now + 60_000, limit: 10)
        let events = try await store.claim(.events, owner: "a", now: now, leaseUntil: now + 60_000, limit: 10)
        let released = try await store.releaseClaims(owner: "a")
        let again = try await store.claim(.activate, owner: "b", now: now, leaseUntil: now + 60_000, limit: 10)

        XCTAssertEqual(activates.map(\.type), ["ACTIVATE", "ACTIVATE"])
        XCTAssertEqual(events.map(\.type), ["EVENT", "EVENT"])
        XCTAssertEqual(released, 4)
        XCTAssertEqual(again.map(\.id), activates.map(\.id))
        XCTAssertEqual(again.map(\.attempts), [0, 0], "a release is no failed attempt")
        try await connection.close()
    }

    /// A release of some claims (hits an instance committed claimed that its sender no longer
    /// took) ends those of the owner only.
    func testAReleaseOfSomeClaimsEndsThoseOfItsOwnerOnly() async throws {
        let server = try postgres()
        let connection = try await connect(server, database: try await migratedDatabase(server))
        let store = PostgresHitStore(connection: connection, envId: "env", logger: logger)
        try await store.insert(hits(3))
        let mine = try await store.claim(.events, owner: "a", now: now, leaseUntil: now + 60_000, limit: 2)
        let theirs = try await store.claim(.events, owner: "b", now: now, leaseUntil: now + 60_000, limit: 10)

        let released = try await store.releaseClaims(owner: "a", ids: [mine[0].id, theirs[0].id])
        let again = try await store.claim(.events, owner: "c", now: now, leaseUntil: now + 60_000, limit: 10)

        XCTAssertEqual(released, 1, "b's claim is b's")
        XCTAssertEqual(again.map(\.id), [mine[0].id])
        try await connection.close()
    }

    /// The cap takes the oldest rows nobody holds, exactly as many as put the table above it,
    /// and only from its own environment; a lease that lapsed is no longer held.
    func testEvictionTakesTheOldestRowsNoInstanceHoldsAndCountsThem() async throws {
        let server = try postgres()
        let connection = try await connect(server, database: try await migratedDatabase(server))
        let store = PostgresHitStore(connection: connection, envId: "env", logger: logger)
        try await store.insert(hits(10))
        try await PostgresHitStore(connection: connection, envId: "other_env", logger: logger).insert(hits(4))
        let inFlight = try await store.claim(.events, owner: "a", now: now, leaseUntil: now + 60_000, limit: 2)

        let underTheCap = try await store.evictOldest(beyond: 10, now: now)
        let evicted = try await store.evictOldest(beyond: 5, now: now)
        let left = try await connection.query("SELECT id FROM flagship.hits WHERE env_id = 'env' ORDER BY created_at", logger: logger)
            .collect().map { try $0.decode(String.self) }
        let afterTheLeaseLapsed = try await store.evictOldest(beyond: 3, now: now + 60_000)

        XCTAssertEqual(underTheCap, 0)
        XCTAssertEqual(evicted, 5)
        XCTAssertEqual(left, inFlight.map(\.id) + hits(10).suffix(3).map(\.id), "the two in flight stay, with the three newest")
        XCTAssertEqual(afterTheLeaseLapsed, 2)
        let counts = (try await store.count(), try await PostgresHitStore(connection: connection, envId: "other_env", logger: logger).count())
        XCTAssertEqual([counts.0, counts.1], [3, 4], "the other environment keeps its rows")
        let counted = try await store.count(upTo: 2)
        XCTAssertEqual(counted, 2, "a count against a cap stops past it")
        try await connection.close()
    }

    /// Two instances that find the excess at once do not both delete it: one holds the
    /// environment's eviction lock for its transaction, and the other evicts nothing.
    func testOneInstanceEvictsAnEnvironmentAtATime() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let (first, second) = (try await connect(server, database: database), try await connect(server, database: database))
        try await PostgresHitStore(connection: first, envId: "env", logger: logger).insert(hits(10))

        try await first.query("BEGIN", logger: logger)
        let byFirst = try await PostgresHitStore(connection: first, envId: "env", logger: logger).evictOldest(beyond: 6, now: now)
        let bySecond = try await second.withTransaction(logger: logger) { connection in
            try await PostgresHitStore(connection: connection, envId: "env", logger: logger).evictOldest(beyond: 6, now: now)
        }
        try await first.query("COMMIT", logger: logger)
        let left = try await PostgresHitStore(connection: second, envId: "env", logger: logger).count()

        XCTAssertEqual([byFirst, bySecond, left], [4, 0, 6])
        try await first.close()
        try await second.close()
    }
}
#endif
