#if Postgres
import Flagship
import FlagshipLocalServer
import FlagshipStore
import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import FlagshipPostgres

/// Decision provenance on a fleet's PostgreSQL store: the migration carries today's histories,
/// the SDK records its decisions and file versions there, and consent withdrawal erases them.
final class PostgresProvenanceTests: PostgresTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-pg-provenance-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    func testTheMigrationCarriesEachVisitorsHistoryForwardAsUnknown() async throws {
        let server = try postgres()
        let database = try await databaseAtVersion(2, of: server)
        // Rows as a version 2 store holds them (its SQL: no decisions table yet).
        let document = #"{"version":1,"data":{"visitorId":"v1","consent":true,"context":{},"#
            + #""campaigns":[{"campaignId":"c1","variationGroupId":"vg1","variationId":"var1"}],"assignmentsHistory":{"vg1":"var1","vg9":"var9"}}}"#
        _ = try server.psql(database, """
            INSERT INTO flagship.visitors (env_id, visitor_id, consent, document, updated_at)
            VALUES ('env', 'v1', true, '\(document)', 1700000000000), ('env', 'broken', true, '{not json', 1)
            """)

        let store = store(server, database: database)
        let version = try await store.prepare()
        await store.close()

        XCTAssertEqual(version, PostgresMigrator().latestVersion)
        XCTAssertEqual(try server.psql(database, """
            SELECT string_agg(d.visitor_id || ' ' || d.decided_at || ' ' || coalesce(a ->> 'campaignId', '?') || ' '
                              || (a ->> 'variationGroupId') || ' ' || (a ->> 'variationId') || ' ' || d.source || ' '
                              || (a ->> 'reason') || ' ' || coalesce(d.file_version, '-'), E'\\n' ORDER BY a ->> 'variationGroupId')
            FROM flagship.decisions AS d, jsonb_array_elements(d.assignments::jsonb) AS a
            """), "v1 1700000000000 c1 vg1 var1 unknown UNKNOWN -\nv1 1700000000000 ? vg9 var9 unknown UNKNOWN -",
            "a document that is not JSON carries nothing, and does not fail the migration")
    }

    func testTheSDKRecordsDecisionsAndVersionsInTheFleetsStoreAndConsentErasesThem() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let flagshipServer = try startedFleetServer()
        defer { flagshipServer.stop() }
        let file = PostgresFleetProcessTests.bucketingFile(greenShare: 100)
        try flagshipServer.setBucketingFile(file)
        flagshipServer.injectFault(.status(500), on: .activate)
        let store = store(server, database: database)
        try await store.prepare()
        let flagship = Flagship()
        flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
            .Bucketing().withBucketingBaseURL(flagshipServer.bucketingBaseURL)
            .withDecisionBaseURL(flagshipServer.decisionBaseURL).withEventsBaseURL(flagshipServer.eventsBaseURL)
            .withCacheDirectory(directory).withLogLevel(.NONE)
            .withPostgresStore(store).build())
        let deadline = ContinuousClock.now + .seconds(10)
        while flagship.getStatus() != .SDK_INITIALIZED, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        var visitors: [FSVisitor] = []
        for id in ["ann", "ben"] {
            let visitor = await flagship.newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE)
                .withContext(context: ["plan": "pro"]).buildAsync()
            try await visitor.fetchFlags()
            XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "none"), "green")
            visitors.append(visitor)
        }
        await flagship.flushCaches()
        while try server.psql(database, "SELECT count(*) FROM flagship.bucketing_files") != "1", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }

        let version = try server.psql(database, "SELECT version FROM flagship.bucketing_files WHERE env_id = 'fleet_env'")
        XCTAssertEqual(version.count, 64)
        XCTAssertEqual(try server.psql(database, "SELECT document FROM flagship.bucketing_files"), String(decoding: file, as: UTF8.self))
        XCTAssertEqual(try server.psql(database, """
            SELECT string_agg(visitor_id || ' ' || variation_id || ' ' || source || ' ' || (file_version = left('\(version)', 12))
                              || ' ' || (context ->> 'plan') || ' ' || flags, ',' ORDER BY visitor_id)
            FROM flagship.decisions_readable WHERE env_id = 'fleet_env'
            """), "ann v_green bucketing_file true pro btnColor,ben v_green bucketing_file true pro btnColor")
        XCTAssertEqual(try server.psql(database, """
            SELECT count(*) FROM flagship.hits WHERE type = 'ACTIVATE' AND file_version = '\(version)' AND decided_at IS NOT NULL
            """), "2", "each waiting activate names its decision's version")

        visitors[0].setConsent(hasConsented: false)
        await flagship.flushCaches()
        while try server.psql(database, "SELECT count(*) FROM flagship.decisions WHERE visitor_id = 'ann'") != "0",
              ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTAssertEqual(try server.psql(database, "SELECT count(*) FROM flagship.decisions WHERE visitor_id = 'ann'"), "0")
        XCTAssertEqual(try server.psql(database, "SELECT count(*) FROM flagship.decisions WHERE visitor_id = 'ben'"), "1")
        await flagship.close()
        await store.close()
    }

    func testTheFleetKeepsTheNewestVersionsByLastUse() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let connection = try await connect(server, database: database)
        let files = PostgresBucketingStore(connection: connection, logger: logger)
        for index in 0..<5 {
            let version = String(repeating: String(index), count: 64)
            try await files.keep(BucketingFileVersion(version: version, envId: "env", document: "{}", origin: .download,
                                                      firstUsedAt: Int64(index), lastUsedAt: Int64(index)), keeping: 3)
        }
        // Used again: its first use stays, its last use moves, and it is kept.
        try await files.keep(BucketingFileVersion(version: String(repeating: "2", count: 64), envId: "env", document: "{}",
                                                  origin: .fleet, firstUsedAt: 10, lastUsedAt: 10), keeping: 3)
        try await connection.close()

        XCTAssertEqual(try server.psql(database, """
            SELECT string_agg(left(version, 1) || ':' || first_used_at || '-' || last_used_at || ':' || origin, ',' ORDER BY version)
            FROM flagship.bucketing_files
            """), "2:2-10:download,3:3-3:download,4:4-4:download")
    }
}
#endif
