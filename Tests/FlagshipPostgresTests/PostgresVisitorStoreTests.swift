#if Postgres
import FlagshipStore
import Foundation
import PostgresNIO
import XCTest

@testable import FlagshipPostgres

/// Visitors, consent erasure and the bucketing file as a fleet shares them, on a real PostgreSQL.
final class PostgresVisitorStoreTests: PostgresTestCase {
    private let document = #"{"version":1,"data":{"visitorId":"alice","assignmentsHistory":{"vg1":"var2"},"campaigns":[]}}"#

    func testAVisitorWrittenByOneInstanceIsReadByAnotherByteForByte() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let a = try await connect(server, database: database)
        let b = try await connect(server, database: database)

        try await PostgresVisitorStore(connection: a, envId: "env", logger: logger).save([
            VisitorRecord(visitorId: "alice", anonymousId: "anon-1", consent: true, document: document, updatedAt: 1_000),
        ])
        let read = try await PostgresVisitorStore(connection: b, envId: "env", logger: logger).visitor(id: "alice")
        let otherEnvironment = try await PostgresVisitorStore(connection: b, envId: "other", logger: logger).visitor(id: "alice")

        XCTAssertEqual(read, VisitorRecord(visitorId: "alice", anonymousId: "anon-1", consent: true, document: document, updatedAt: 1_000))
        XCTAssertNil(otherEnvironment)
        try await a.close()
        try await b.close()
    }

    /// Two instances write the same visitor out of order: the newer document stays.
    func testAnOlderDocumentNeverReplacesANewerOne() async throws {
        let server = try postgres()
        let connection = try await connect(server, database: try await migratedDatabase(server))
        let store = PostgresVisitorStore(connection: connection, envId: "env", logger: logger)

        try await store.save([VisitorRecord(visitorId: "alice", anonymousId: nil, consent: true, document: #"{"n":2}"#, updatedAt: 2_000)])
        try await store.save([VisitorRecord(visitorId: "alice", anonymousId: nil, consent: true, document: #"{"n":1}"#, updatedAt: 1_000)])
        try await store.save([
            VisitorRecord(visitorId: "bob", anonymousId: nil, consent: true, document: #"{"n":3}"#, updatedAt: 3_000),
            VisitorRecord(visitorId: "bob", anonymousId: nil, consent: true, document: #"{"n":4}"#, updatedAt: 4_000),
        ])

        let alice = try await store.visitor(id: "alice")
        let bob = try await store.visitor(id: "bob")
        XCTAssertEqual(alice?.document, #"{"n":2}"#)
        XCTAssertEqual(bob?.document, #"{"n":4}"#, "the newest of one batch")
        try await connection.close()
    }

    /// Consent withdrawn on one instance: the visitor's row and hits go in one statement, for
    /// every instance; consent hits, hits being sent, and other visitors stay.
    func testErasingAVisitorRemovesItsRowAndHitsButItsConsentHitsAndThoseInFlight() async throws {
        let server = try postgres()
        let connection = try await connect(server, database: try await migratedDatabase(server))
        let visitors = PostgresVisitorStore(connection: connection, envId: "env", logger: logger)
        let hits = PostgresHitStore(connection: connection, envId: "env", logger: logger)
        try await visitors.save([
            VisitorRecord(visitorId: "alice", anonymousId: nil, consent: true, document: document, updatedAt: 1),
            VisitorRecord(visitorId: "bob", anonymousId: nil, consent: true, document: document, updatedAt: 1),
        ])
        func hit(_ id: String, _ visitor: String, consent: Bool = false) -> HitRecord {
            HitRecord(id: id, visitorId: visitor, type: "EVENT", isConsent: consent, document: "{}", createdAt: 1)
        }
        try await hits.insert([hit("a1", "alice"), hit("a2", "alice"), hit("a3", "alice"), hit("ac", "alice", consent: true), hit("b1", "bob")])

        let deleted = try await visitors.erase(visitorId: "alice", keepingHits: ["a3"])

        XCTAssertEqual(deleted, 2)
        let alice = try await visitors.visitor(id: "alice")
        let bob = try await visitors.visitor(id: "bob")
        XCTAssertNil(alice)
        XCTAssertNotNil(bob)
        let left = try server.psql(try await databaseName(connection), "SELECT string_agg(id, ',' ORDER BY id) FROM flagship.hits")
        XCTAssertEqual(left, "a3,ac,b1")
        try await connection.close()
    }

    func testTheBucketingFileComesBackAsStoredAndAnOlderDownloadDoesNotReplaceIt() async throws {
        let server = try postgres()
        let connection = try await connect(server, database: try await migratedDatabase(server))
        let store = PostgresBucketingStore(connection: connection, logger: logger)
        let newer = BucketingRecord(envId: "env", document: "{\"campaigns\": [], \"panic\": false}\n", lastModified: "Thu, 13 Nov 2025 02:23:20 GMT", downloadedAt: 2_000)

        try await store.save(newer)
        try await store.save(BucketingRecord(envId: "env", document: "{}", lastModified: nil, downloadedAt: 1_000))

        let stored = try await store.file(envId: "env")
        let none = try await store.file(envId: "other")
        XCTAssertEqual(stored, newer)
        XCTAssertNil(none)
        try await connection.close()
    }

    private func databaseName(_ connection: PostgresConnection) async throws -> String {
        let rows = try await connection.query("SELECT current_database()", logger: logger).collect()
        return try rows[0].decode(String.self)
    }
}
#endif
