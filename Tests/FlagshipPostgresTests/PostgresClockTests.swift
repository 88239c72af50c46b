#if Postgres
import Dispatch
import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship
@testable import FlagshipPostgres

/// The fleet's rows are kept in PostgreSQL's time: an instance whose clock is hours off neither
/// expires the others' hits, nor holds them under a lease or a backoff for hours, nor sends them
/// with a wrong `qt`; and it says once that its clock is off.
final class PostgresClockTests: PostgresTestCase {
    private static let hour: Int64 = 3_600_000
    private static let lifetime: Int64 = 4 * hour

    private var systemNow: Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    /// One instance's hit queue on `store`, its clock `skew` ms from this machine's.
    private func queue(_ store: FlagshipPostgresStore, owner: String, skew: Int64, logger: Logger) -> PostgresHitQueue {
        PostgresHitQueue(store: store, envId: "env", owner: owner, leaseMilliseconds: 60_000, logger: logger,
                         now: { Int64((Date().timeIntervalSince1970 * 1000).rounded()) + skew })
    }

    private static func click(_ number: Int, createdAt: Int64) -> CachedHit {
        CachedHit(OutgoingHit(id: "v1:\(String(format: "%06d", number))", type: "EVENT", createdAt: createdAt, fields: [
            "t": .string("EVENT"), "vid": .string("v1"), "ds": .string("APP"), "cid": .string("env"),
            "ec": .string("Action Tracking"), "ea": .string("click"),
        ]))
    }

    func testAnInstanceFiveHoursAheadNeitherExpiresNorHoldsTheFleetsHits() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        let store = self.store(server, database: database)
        let warnings = WarningLog()
        let onTime = queue(store, owner: "on time", skew: 0, logger: logger)
        let ahead = queue(store, owner: "ahead", skew: 5 * Self.hour, logger: warnings.logger)

        // The writer's calls and the sender's are awaited.
        let written = onTime.now()
        _ = try await onTime.save((1...3).map { Self.click($0, createdAt: written - 1_000) })
        // Its expiry boundary is 4 h before its own now: an hour after these hits were made.
        let afterExpiry = try await ahead.deleteExpired(createdBefore: ahead.now() - Self.lifetime)
        let claimedAhead = try await ahead.claim(.events, limit: 10, now: ahead.now())
        // Its send failed: it backs the fleet off for 2 s of its own time, not 5 h and 2 s.
        try await ahead.settle(HitSettlement(failed: claimedAhead.map(\.id), nextAttemptAt: ahead.now() + 2_000))
        let claimedAgainAtOnce = try await onTime.claim(.events, limit: 10, now: onTime.now())
        let claimedOnTime = try await onTime.claim(.events, limit: 10, now: onTime.now() + 2_500)
        let aheadNow = ahead.now()
        await store.close()

        XCTAssertEqual(afterExpiry, 0, "hits a second old are not expired by a clock 5 h ahead")
        XCTAssertEqual(claimedAhead.count, 3)
        for hit in claimedAhead {
            // In the claiming instance's time: its qt is the hit's age, about a second.
            XCTAssertLessThan(aheadNow - hit.createdAt, 60_000, "qt from the claimer's clock: \(aheadNow - hit.createdAt) ms")
            XCTAssertGreaterThanOrEqual(aheadNow - hit.createdAt, 1_000)
        }
        XCTAssertEqual(claimedAgainAtOnce, [], "the backoff holds")
        XCTAssertEqual(claimedOnTime.map(\.id), claimedAhead.map(\.id), "and ends 2 s later in the database's time")
        XCTAssertEqual(warnings.lines.filter { $0.contains("clock is") }.count, 1, warnings.lines.joined(separator: "\n"))
        XCTAssertTrue(warnings.lines.first { $0.contains("clock is") }?.contains("ahead of PostgreSQL's") ?? false, warnings.lines.joined(separator: "\n"))
    }

    /// A hit older than the lifetime by the database's clock is expired by any instance, whatever
    /// its own clock: one 5 h behind does not keep it.
    func testAnInstanceBehindStillExpiresHitsOlderThanTheLifetime() async throws {
        let server = try postgres()
        let database = try server.createDatabase()
        let store = self.store(server, database: database)
        let onTime = queue(store, owner: "on time", skew: 0, logger: logger)
        let behind = queue(store, owner: "behind", skew: -5 * Self.hour, logger: logger)

        let now = onTime.now()
        _ = try await onTime.save([Self.click(1, createdAt: now - Self.lifetime - 60_000), Self.click(2, createdAt: now - 60_000)])
        let expired = try await behind.deleteExpired(createdBefore: behind.now() - Self.lifetime)
        let left = try await behind.count()
        await store.close()

        XCTAssertEqual([expired, left], [1, 1])
    }
}

/// The warnings a logger said, kept for a test to read.
final class WarningLog: Sendable {
    private let said = Locked<[String]>([])

    var lines: [String] { said.withLock { $0 } }

    var logger: Logger {
        var logger = Logger(label: "io.flagship.postgres.tests.clock") { _ in Handler(log: self) }
        logger.logLevel = .warning
        return logger
    }

    private struct Handler: LogHandler {
        let log: WarningLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .warning

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.said.withLock { $0.append(event.message.description) }
        }
    }
}
#endif
