#if Postgres
import Flagship
import FlagshipLocalServer
import FlagshipStore
import Foundation
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import FlagshipPostgres

/// A visitor's data on request from a fleet's store: the store's own call, and
/// `Flagship.visitorData` on an instance, which reads the shared store.
final class PostgresVisitorDataTests: PostgresTestCase {
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-visitor-data-\(UUID().uuidString)")

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    private static func alice(decidedAt: Int64) -> VisitorRecord {
        var record = VisitorRecord(visitorId: "alice", anonymousId: "anon-a", consent: true,
                                   document: #"{"version":1,"data":{"visitorId":"alice","context":{"plan":"pro"}}}"#, updatedAt: decidedAt)
        record.decisions = [DecisionRecord(visitorId: "alice", decidedAt: decidedAt, campaignId: "c1", variationGroupId: "vg1",
                                           variationId: "var1", source: .bucketingFile, reason: "SPLIT",
                                           fileVersion: String(repeating: "cd", count: 32), context: #"{"plan":"pro"}"#,
                                           flags: #"{"btnColor":"green"}"#)]
        return record
    }

    func testTheStoreAnswersWithTheVisitorsRowsOfItsEnvironmentOnly() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let connection = try await connect(server, database: database)
        for envId in ["env", "other"] {
            try await PostgresVisitorStore(connection: connection, envId: envId, logger: logger).save([Self.alice(decidedAt: 1_000)])
        }
        try await PostgresHitStore(connection: connection, envId: "env", logger: logger).insert([
            HitRecord(id: "alice:1", visitorId: "alice", type: "EVENT", document: #"{"version":1,"data":{"type":"EVENT"}}"#, createdAt: 2_000),
            HitRecord(id: "bob:1", visitorId: "bob", type: "EVENT", document: #"{"version":1,"data":{"type":"EVENT"}}"#, createdAt: 2_001),
        ])
        try await connection.close()
        let store = store(server, database: database)

        let data = try await store.visitorData(envId: "env", visitorId: "alice")
        let nobody = try await store.visitorData(envId: "env", visitorId: "nobody")
        await store.close()

        XCTAssertEqual(data.visitor?.anonymousId, "anon-a")
        XCTAssertEqual(data.visitor?.document, Self.alice(decidedAt: 1_000).document)
        XCTAssertEqual(data.visitor?.lastSeenAt, Date(timeIntervalSince1970: 1), "last seen: written then")
        XCTAssertEqual(data.decisions.map(\.fileVersion), [String(repeating: "cd", count: 32)], "one decision: the other environment's is not hers")
        XCTAssertEqual(data.decisions.first?.flags, #"{"btnColor":"green"}"#)
        XCTAssertEqual(data.hits.map(\.id), ["alice:1"])
        XCTAssertTrue(nobody.isEmpty)
    }

    /// An instance of the fleet answers from the shared store: what another instance wrote is in it.
    func testAnInstanceAnswersFromTheSharedStoreWhatAnyInstanceWrote() async throws {
        let server = try startedFleetServer()
        defer { server.stop() }
        server.injectFault(.status(503), on: .events)
        let (stores, instances) = try await twoInstances(of: server)
        let visitor = await instances[0].newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["plan": "pro"]).buildAsync()
        try await visitor.fetchFlags()
        let click = FSEvent(eventCategory: .Action_Tracking, eventAction: "click")
        click.label = "from-instance-0"
        try await visitor.sendHit(click)
        await instances[0].flushCaches()

        let data = try await instances[1].visitorData(visitorId: "alice")
        for flagship in instances { await flagship.close() }
        for store in stores { await store.close() }

        XCTAssertNotNil(data.visitor, "the document instance 0 wrote")
        XCTAssertTrue(data.visitor?.document.contains("pro") ?? false)
        XCTAssertTrue(data.hits.contains { $0.document.contains("from-instance-0") }, "\(data.hits.map(\.document))")
        XCTAssertEqual(Set(data.hits.map(\.id)).count, data.hits.count, "each hit once")
    }

    /// The synchronous `build()` reads the shared store as `buildAsync()` does: a visitor another
    /// instance fetched is built from its document, flags readable before any fetch. Its lookup
    /// is awaited by a task on the visitor cache's queue while the caller waits: called from a
    /// task (this test's, a thread of Swift's pool, the only one under
    /// `FLAGSHIP_ONE_COOPERATIVE_THREAD`), it needs no other thread of the pool to answer.
    func testTheSynchronousBuildReadsTheSharedStoreToo() async throws {
        let server = try startedFleetServer()
        defer { server.stop() }
        let (stores, instances) = try await twoInstances(of: server)
        let first = await instances[0].newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["plan": "pro"]).buildAsync()
        try await first.fetchFlags()
        let fetched = first.getFlags().keys().sorted()
        await instances[0].flushCaches()

        let again = Self.buildSynchronously("alice", on: instances[1])
        let built = again.getFlags().keys().sorted()
        let nobody = Self.buildSynchronously("nobody", on: instances[1])
        for flagship in instances { await flagship.close() }
        for store in stores { await store.close() }

        XCTAssertFalse(fetched.isEmpty, "the fleet server's campaigns gave alice flags")
        XCTAssertEqual(again.requiredFetchReason, .FETCHED_FROM_CACHE, "built from instance 0's document")
        XCTAssertEqual(built, fetched)
        XCTAssertNotEqual(nobody.requiredFetchReason, .FETCHED_FROM_CACHE, "a visitor nobody wrote is new")
    }

    /// Two instances of `server`'s environment, each with a store of its own on one database.
    private func twoInstances(of server: LocalFlagshipServer) async throws -> ([FlagshipPostgresStore], [Flagship]) {
        let postgres = try postgres()
        let database = try postgres.createDatabase()
        let stores = (0..<2).map { _ in store(postgres, database: database) }
        for store in stores { try await store.prepare() }
        let instances = stores.enumerated().map { number, store in
            let flagship = Flagship()
            flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
                .withDecisionBaseURL(server.decisionBaseURL)
                .withEventsBaseURL(server.eventsBaseURL)
                .withCacheDirectory(directory.appendingPathComponent("instance-\(number)"))
                .withLogLevel(.WARNING)
                // What these tests read is the shared store, not the lookup's bound: a loaded
                // machine (CI's one-thread run) took PostgreSQL past the default 200 ms.
                .withCacheManager(FSCacheManager(visitorLookupTimeOut: 30))
                .withPostgresStore(store)
                .build())
            return flagship
        }
        return (stores, instances)
    }

    /// `build()`, on the caller's thread (a synchronous function, called from a task here).
    private static func buildSynchronously(_ visitorId: String, on flagship: Flagship) -> FSVisitor {
        flagship.newVisitor(visitorId: visitorId, hasConsented: true, instanceType: .NEW_INSTANCE)
            .withContext(context: ["plan": "pro"]).build()
    }
}
#endif
