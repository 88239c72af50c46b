#if Postgres
import FlagshipLocalServer
import FlagshipStore
import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import FlagshipPostgres

/// `db inspect`, `visitors`, `hits` and `replay` on a real PostgreSQL store (`--db postgres://...`),
/// each test on a database of its own of the process's server (started at first use).
final class PostgresCommandTests: HitCommandTestCase {
    private let logger = Logger(label: "io.flagship.cli.tests")

    // MARK: why

    /// The fleet's decisions, shown and replayed: a bucketing decision agrees on its kept
    /// version, a Decision API one is not replayable, another environment's are not read.
    func testWhyShowsAndReplaysTheFleetsDecisionsOfOneEnvironment() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        let file = FlagsCommandTests.fixture
        let decisionFile = try await Self.decide(file, visitorId: "ann", context: #"{"isVip":true}"#)
        try await write(pg, database) { connection, logger in
            let version = BucketingFileVersion(version: decisionFile.version, envId: "env", document: file, origin: .download,
                                               firstUsedAt: 1_700_000_000_000, lastUsedAt: 1_700_000_000_000)
            try await PostgresBucketingStore(connection: connection, logger: logger).keep(version, keeping: 20)
            let decisions = decisionFile.assignments.map { assignment in
                DecisionRecord(visitorId: "ann", decidedAt: 1_700_000_000_500, campaignId: assignment.campaign,
                               variationGroupId: assignment.group, variationId: assignment.variation, source: .bucketingFile,
                               reason: "SPLIT", fileVersion: decisionFile.version, context: #"{"isVip":true}"#,
                               flags: #"{"btnColor":"x"}"#)
            } + [DecisionRecord(visitorId: "ann", decidedAt: 1_700_000_001_000, campaignId: "c_api", variationGroupId: "vg_api",
                                variationId: "var_api", source: .decisionAPI, reason: "TARGETING_MATCH", fileVersion: nil,
                                context: "{}", flags: #"{"banner":"x"}"#)]
            let record = VisitorRecord(visitorId: "ann", anonymousId: nil, consent: true, document: StoreFixture.visitors[0].document,
                                       updatedAt: 1_700_000_001_000, decisions: decisions)
            try await PostgresVisitorStore(connection: connection, envId: "env", logger: logger).save([record])
            try await PostgresVisitorStore(connection: connection, envId: "other", logger: logger).save([record])
        }

        let result = try await runFlagship(["why", "--db", url(pg, database), "--env-id", "env", "--visitor-id", "ann", "--replay"])

        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 1 + decisionFile.assignments.count + 1, result.stdout)
        XCTAssertTrue(lines.dropFirst().dropLast().allSatisfy { $0.hasSuffix("agrees") && $0.contains(String(decisionFile.version.prefix(12))) },
                      result.stdout)
        XCTAssertTrue(lines.last?.contains("decision_api") == true && lines.last?.hasSuffix("not replayable (decided by the Decision API)") == true,
                      result.stdout)

        let all = try await runFlagship(["why", "--db", url(pg, database), "--env-id", "env", "--replay", "--json"])
        XCTAssertEqual(all.status, 0, all.stderr)
        let summary = try XCTUnwrap(try parseJSON(all.stdout) as? [String: Any])
        XCTAssertEqual(summary["agree"] as? Int, decisionFile.assignments.count)
        XCTAssertEqual(summary["notReplayable"] as? [String: Int], ["decided by the Decision API": 1])
    }

    // MARK: db inspect

    func testInspectJSONDescribesTheSchemaAndEachEnvironment() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        let now = Date().unixMilliseconds
        try await write(pg, database) { connection, logger in
            try await Self.populate(connection, envId: "env", logger: logger)
            try await PostgresBucketingStore(connection: connection, logger: logger).save(StoreFixture.bucketingFiles[0].for("env"))
            let hits = PostgresHitStore(connection: connection, envId: "env", logger: logger)
            // One hit being sent right now, one that failed and waits an hour for its next try.
            _ = try await hits.claim(.events, owner: "web-1 pid 42 ab12cd34", now: now, leaseUntil: now + 3_600_000, limit: 1)
            _ = try await hits.claim(.activate, owner: "web-2 pid 7 cafe0001", now: now, leaseUntil: now + 3_600_000, limit: 1)
            try await hits.settle(done: [], failed: ["v2:0002"], owner: "web-2 pid 7 cafe0001", nextAttemptAt: now + 3_600_000)
            try await PostgresHitStore(connection: connection, envId: "other", logger: logger).insert([StoreFixture.hits[2]])
        }
        let before = Date()

        let result = try await runFlagship(["db", "inspect", "--db", url(pg, database), "--json"])

        let after = Date()
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stderr, "")
        var document = try XCTUnwrap(try parseJSON(result.stdout) as? [String: Any])
        var migrations = try XCTUnwrap(document["migrations"] as? [[String: Any]])
        for index in migrations.indices {
            let appliedAt = try XCTUnwrap(migrations[index].removeValue(forKey: "appliedAt") as? Int)
            XCTAssertEqual(Double(appliedAt) / 1000, before.timeIntervalSince1970, accuracy: 60)
            XCTAssertNotNil(migrations[index].removeValue(forKey: "appliedAtUTC") as? String)
        }
        document["migrations"] = migrations
        var environments = try XCTUnwrap(document["environments"] as? [[String: Any]])
        for index in environments.indices {
            let age = try XCTUnwrap(environments[index].removeValue(forKey: "oldestHitAgeSeconds") as? Int)
            let createdAt = try XCTUnwrap(environments[index]["oldestHitCreatedAt"] as? NSNumber).doubleValue / 1000
            XCTAssertEqual(Double(age), before.timeIntervalSince1970 - createdAt, accuracy: after.timeIntervalSince(before) + 1)
            if var bucketing = environments[index]["bucketing"] as? [String: Any] {
                XCTAssertNotNil(bucketing.removeValue(forKey: "ageSeconds") as? Int)
                environments[index]["bucketing"] = bucketing
            }
        }
        document["environments"] = environments
        let steps = Migration.postgres.map { #"{"version": \#($0.version), "name": "\#($0.name)", "checksum": "\#($0.checksum)"}"# }
        let expected = """
            {"location": "postgres://\(pg.username)@\(pg.host):\(pg.port)/\(database)",
             "schemaVersion": \(Migration.postgres.count), "migrations": [\(steps.joined(separator: ", "))],
             "environments": [
                {"envId": "env", "visitors": 2, "hits": {"total": 4, "byType": {"EVENT": 2, "ACTIVATE": 1, "PAGEVIEW": 1}},
                 "claimedHits": 1, "deadLetters": 0, "backingOffHits": 1, "oldestHitCreatedAt": 1732170000123,
                 "bucketing": {"lastModified": "Thu, 21 Nov 2024 06:00:00 GMT", "downloadedAt": 1732168800000, "bytes": 33,
                               "campaignCount": 0, "panic": false, "unusableReason": null}},
                {"envId": "other", "visitors": 0, "hits": {"total": 1, "byType": {"PAGEVIEW": 1}},
                 "claimedHits": 0, "deadLetters": 0, "backingOffHits": 0, "oldestHitCreatedAt": 1732170009999, "bucketing": null}]}
            """
        XCTAssertEqual(try canonicalJSON(document), try canonicalJSON(try parseJSON(expected)))
    }

    func testInspectTextOfOneEnvironmentIsAnAlignedReport() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        try await write(pg, database) { connection, logger in
            try await Self.populate(connection, envId: "env", logger: logger)
            try await PostgresHitStore(connection: connection, envId: "other", logger: logger).insert([StoreFixture.hits[2]])
        }

        let result = try await runFlagship(["db", "inspect", "--db", url(pg, database), "--env-id", "env"])

        XCTAssertEqual(result.status, 0, result.stderr)
        var lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // One line per migration step, the first under the label.
        let steps = PostgresMigrator().latestVersion
        XCTAssertEqual(lines.count, 16 + steps, result.stdout)
        guard lines.count == 16 + steps else { return }
        for (index, line) in lines[2..<(2 + steps)].enumerated() {
            let label = index == 0 ? "migrations" : "          "
            XCTAssertNotNil(line.range(of: "^\(label)      \(index + 1) [a-z_]+, applied \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z$",
                                       options: .regularExpression), line)
        }
        lines.replaceSubrange(2..<(2 + steps), with: ["<migrations>"])
        // The time that moves with the clock, by its shape.
        XCTAssertNotNil(lines[14].range(of: #"^  oldest hit    \d+d\d\dh ago \(2024-11-21T06:20:00\.123Z\)$"#, options: .regularExpression),
                        lines[14])
        lines[14] = "<oldest hit>"
        XCTAssertEqual(lines, [
            "store           postgres://\(pg.username)@\(pg.host):\(pg.port)/\(database)",
            "schema version  \(steps)",
            "<migrations>",
            "environments    env",
            "",
            "env             env",
            "  visitors      2",
            "  hits          4",
            "    ACTIVATE    1",
            "    EVENT       2",
            "    PAGEVIEW    1",
            "  claimed       0",
            "  dead letters  0",
            "  backing off   0",
            "<oldest hit>",
            "  bucketing     none",
            "",
        ])
    }

    // MARK: visitors and hits

    /// The same rows print the same, from a store file and from PostgreSQL.
    func testVisitorsAndHitsPrintWhatTheSameRowsPrintFromAStoreFile() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        try withStore(StoreFixture.populate)
        try await write(pg, database) { connection, logger in
            try await Self.populate(connection, envId: "env", logger: logger)
            try await Self.populate(connection, envId: "other", logger: logger)
            try await PostgresVisitorStore(connection: connection, envId: "other", logger: logger)
                .save([VisitorRecord(visitorId: "v3", anonymousId: nil, consent: false, document: "{}", updatedAt: 1)])
            // The fixture's first hit failed twice (as the store file's fixture says).
            let hits = PostgresHitStore(connection: connection, envId: "env", logger: logger)
            for _ in 1...2 {
                let claimed = try await hits.claim(.events, owner: "o", now: 0, leaseUntil: 1, limit: 1)
                XCTAssertEqual(claimed.map(\.id), ["v1:0001"])
                try await hits.settle(done: [], failed: ["v1:0001"], owner: "o")
            }
        }
        let postgres = url(pg, database)

        for arguments in [["visitors", "--json"], ["visitors"], ["hits", "--json", "--limit", "3"], ["hits", "--limit", "3"]] {
            let fromFile = try await runFlagship(arguments + ["--db", storeFile.path])
            let fromPostgres = try await runFlagship(arguments + ["--db", postgres, "--env-id", "env"])

            XCTAssertEqual(fromPostgres.status, 0, fromPostgres.stderr)
            XCTAssertEqual(fromPostgres.stderr, fromFile.stderr, "\(arguments)")
            XCTAssertFalse(fromPostgres.stdout.isEmpty)
            XCTAssertEqual(try Self.withoutAges(fromPostgres.stdout), try Self.withoutAges(fromFile.stdout), "\(arguments)")
        }
    }

    /// `export` answers the same from PostgreSQL as from a store file holding the same rows, and
    /// only with the environment's rows.
    func testExportPrintsWhatTheSameRowsPrintFromAStoreFile() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        try withStore(ExportCommandTests.populate)
        try await write(pg, database) { connection, logger in
            for envId in ["env", "other"] {
                var v1 = StoreFixture.visitors[0]
                v1.decisions = [ExportCommandTests.decision]
                try await PostgresVisitorStore(connection: connection, envId: envId, logger: logger).save([v1, StoreFixture.visitors[1]])
            }
            try await PostgresHitStore(connection: connection, envId: "env", logger: logger).insert(StoreFixture.hits)
            // As the store file's fixture says: the first hit failed twice.
            let hits = PostgresHitStore(connection: connection, envId: "env", logger: logger)
            for _ in 1...2 {
                _ = try await hits.claim(.events, owner: "o", now: 0, leaseUntil: 1, limit: 1)
                try await hits.settle(done: [], failed: ["v1:0001"], owner: "o")
            }
        }

        let fromFile = try await runFlagship(["export", "--db", storeFile.path, "--visitor-id", "v1"])
        let fromPostgres = try await runFlagship(["export", "--db", url(pg, database), "--env-id", "env", "--visitor-id", "v1"])

        XCTAssertEqual(fromPostgres.status, 0, fromPostgres.stderr)
        XCTAssertEqual(fromPostgres.stderr, "")
        XCTAssertEqual(try canonicalJSON(try parseJSON(fromPostgres.stdout)), try canonicalJSON(try parseJSON(fromFile.stdout)))
        XCTAssertEqual(try canonicalJSON(try parseJSON(fromPostgres.stdout)), try canonicalJSON(try parseJSON(ExportCommandTests.v1Export)))
    }

    func testVisitorsAndHitsWithoutAnEnvIdNameTheEnvironmentsThereAre() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        try await write(pg, database) { connection, logger in
            try await Self.populate(connection, envId: "env", logger: logger)
            try await PostgresHitStore(connection: connection, envId: "other", logger: logger).insert([StoreFixture.hits[2]])
        }

        for command in ["visitors", "hits"] {
            let result = try await runFlagship([command, "--db", url(pg, database)])

            XCTAssertNotEqual(result.status, 0)
            XCTAssertEqual(result.stdout, "")
            XCTAssertEqual(result.stderr, "Error: the PostgreSQL store \(Self.location(pg, database)) holds the rows of several "
                + "environments: name one with --env-id (it holds env, other)\n")
        }
    }

    // MARK: replay

    /// The environment's waiting hits, written by any instance, go to the server; another
    /// environment's stay.
    func testReplaySendsTheWaitingHitsOfItsEnvironmentOnly() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        let now = Date().unixMilliseconds
        let waiting = (1...3).map { Self.event(id: "web-\($0):\(UUID().uuidString)", label: "waiting-\($0)", createdAt: now - Int64($0)) }
        try await write(pg, database) { connection, logger in
            try await PostgresHitStore(connection: connection, envId: "env", logger: logger).insert(waiting)
            try await PostgresHitStore(connection: connection, envId: "other", logger: logger)
                .insert([Self.event(id: "o:1", label: "other-env", createdAt: now)])
        }
        let localFile = storeDirectory.appendingPathComponent("local.sqlite")

        let result = try await runFlagship(["replay", "--env-id", "env", "--api-key", "key", "--db", url(pg, database),
                                         "--local-db", localFile.path, "--decision-url", server.decisionBaseURL.absoluteString,
                                         "--events-url", server.eventsBaseURL.absoluteString])

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, #"{"replayed": 3, "expired": 0, "remaining": 0}"# + "\n")
        XCTAssertEqual(Set(server.hits.compactMap { $0["el"]?.stringValue }), ["waiting-1", "waiting-2", "waiting-3"])
        XCTAssertEqual(server.hits.count, 3)
        XCTAssertEqual(try pg.psql(database, "SELECT env_id || ' ' || id FROM flagship.hits"), "other o:1")
        XCTAssertFalse(result.stdout.contains(pg.password) || result.stderr.contains(pg.password))
    }

    /// A row whose document is not a hit cache document (edited by hand, written by another
    /// program) is set aside as a dead letter by the claim that finds it: the replay sends the
    /// others and exits 0, saying it stays; `db inspect` counts it, `hits` says why; no claim takes
    /// it again.
    func testAnUnreadableHitIsSetAsideAsADeadLetterAndTheReplaySendsTheOthers() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        let now = Date().unixMilliseconds
        let good = (1...2).map { Self.event(id: "web-\($0):\(UUID().uuidString)", label: "good-\($0)", createdAt: now - Int64($0)) }
        let edited = HitRecord(id: "v1:edited", visitorId: "v1", type: "EVENT", document: "{\"edited\": by hand", createdAt: now - 10)
        try await write(pg, database) { connection, logger in
            try await PostgresHitStore(connection: connection, envId: "env", logger: logger).insert(good + [edited])
        }
        let localFile = storeDirectory.appendingPathComponent("local.sqlite")
        let replay = ["replay", "--env-id", "env", "--api-key", "key", "--db", url(pg, database), "--local-db", localFile.path,
                      "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString]

        let result = try await runFlagship(replay)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, #"{"replayed": 2, "expired": 0, "remaining": 1}"# + "\n")
        XCTAssertTrue(result.stderr.contains("1 dead letter(s) stay in"), result.stderr)
        XCTAssertEqual(Set(server.hits.compactMap { $0["el"]?.stringValue }), ["good-1", "good-2"])
        XCTAssertEqual(try pg.psql(database, "SELECT lease_owner || ' ' || (lease_until = 9223372036854775807) FROM flagship.hits"),
                       "dead letter: not a hit cache document: it cannot be sent as it was written true")

        let inspect = try await runFlagship(["db", "inspect", "--db", url(pg, database), "--json"])
        XCTAssertEqual(inspect.status, 0, inspect.stderr)
        let environments = try XCTUnwrap((try parseJSON(inspect.stdout) as? [String: Any])?["environments"] as? [[String: Any]])
        XCTAssertEqual(environments.first?["deadLetters"] as? Int, 1)
        XCTAssertEqual(environments.first?["claimedHits"] as? Int, 0, "a dead letter is not a hit being sent")
        let hits = try await runFlagship(["hits", "--db", url(pg, database), "--env-id", "env", "--json"])
        XCTAssertEqual(hits.status, 0, hits.stderr)
        XCTAssertTrue(hits.stdout.contains(#""deadLetter" : "dead letter: not a hit cache document"#)
                      || hits.stdout.contains(#""deadLetter":"dead letter: not a hit cache document"#), hits.stdout)

        // A second replay finds nothing to send and claims nothing.
        let again = try await runFlagship(replay)
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(again.stdout, #"{"replayed": 0, "expired": 0, "remaining": 1}"# + "\n")
        XCTAssertEqual(server.hits.count, 2)
    }

    /// Hits another instance's failed sends put under backoff (`next_attempt_at` an hour ahead)
    /// are sent by an operator's replay now, not left for the backoff to end.
    func testReplaySendsHitsUnderAnotherInstancesBackoffNow() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        let now = Date().unixMilliseconds
        let waiting = (1...4).map { Self.event(id: "web-\($0):\(UUID().uuidString)", label: "backing-off-\($0)", createdAt: now - Int64($0)) }
        try await write(pg, database) { connection, logger in
            try await PostgresHitStore(connection: connection, envId: "env", logger: logger).insert(waiting)
        }
        _ = try pg.psql(database, "UPDATE flagship.hits SET attempts = 3, next_attempt_at = \(now + 3_600_000)")
        let localFile = storeDirectory.appendingPathComponent("local.sqlite")

        let result = try await runFlagship(["replay", "--env-id", "env", "--api-key", "key", "--db", url(pg, database),
                                            "--local-db", localFile.path, "--decision-url", server.decisionBaseURL.absoluteString,
                                            "--events-url", server.eventsBaseURL.absoluteString])

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, #"{"replayed": 4, "expired": 0, "remaining": 0}"# + "\n")
        XCTAssertEqual(Set(server.hits.compactMap { $0["el"]?.stringValue }), Set((1...4).map { "backing-off-\($0)" }))
        XCTAssertEqual(try pg.psql(database, "SELECT count(*) FROM flagship.hits"), "0")
    }

    /// `count` events of visitor `v1` waiting in PostgreSQL, labelled `label-1` (the oldest) to
    /// `label-count`, a millisecond apart.
    private func insertWaitingEvents(_ count: Int, labelled label: String, in pg: TemporaryPostgres, _ database: String) async throws {
        let now = Date().unixMilliseconds
        let waiting = (1...count).map { Self.event(id: "v1:\($0)", label: "\(label)-\($0)", createdAt: now - Int64(count - $0)) }
        try await write(pg, database) { connection, logger in
            try await PostgresHitStore(connection: connection, envId: "env", logger: logger).insert(waiting)
        }
    }

    /// Two replays at once, as two hosts of a fleet would run them: each hit is claimed by one
    /// of them (a lease) before it is sent, so the server gets every hit exactly once.
    func testTwoReplaysAtOnceDeliverEveryHitExactlyOnce() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        let count = 2_000
        try await insertWaitingEvents(count, labelled: "shared", in: pg, database)
        // Each batch (500 hits) takes 200 ms to be answered: the two replays overlap.
        server.injectFault(.latency(.milliseconds(200)), on: .events)
        let replays = (1...2).map { number in
            ["replay", "--env-id", "env", "--api-key", "key", "--db", url(pg, database),
             "--local-db", storeDirectory.appendingPathComponent("host-\(number).sqlite").path,
             "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString]
        }

        let running = try replays.map { try startFlagship($0) }
        var results: [FlagshipExecutable.Result] = []
        for process in running { results.append(try await Self.waitForExit(process)) }

        // The first to finish may see hits the other still holds: they remain, it says so (exit 1).
        for result in results {
            XCTAssertEqual(result.status, try summary(result)["remaining"] == 0 ? 0 : 1, result.stderr)
        }
        let replayed = try results.map { try summary($0)["replayed"] ?? -1 }
        let labels = server.hits.compactMap { $0["el"]?.stringValue }
        XCTAssertEqual(labels.count, count, "hits received, duplicates included")
        XCTAssertEqual(Set(labels), Set((1...count).map { "shared-\($0)" }))
        XCTAssertEqual(replayed.reduce(0, +), count)
        XCTAssertEqual(try pg.psql(database, "SELECT count(*) FROM flagship.hits"), "0")
        print("two replays at once on PostgreSQL: \(count) hits, replayed \(replayed), received \(labels.count)")
    }

    /// PostgreSQL stops for 8 s while the replay sends, then starts again: the replay waits for
    /// it, runs another pass, and ends with every hit delivered and a true count (0 remaining,
    /// exit 0). Before, it ended when the SDK found nothing it could claim, counted PostgreSQL's
    /// hits as 0 and exited 0 with all of them left. A hit whose send was not recorded before the
    /// stop is sent again (and counted in "replayed" again), never lost.
    func testAReplayWaitsOutAPostgresRestartAndSendsEveryHit() async throws {
        _ = try postgres()   // skips, or fails in CI, as the others do
        let pg = try TemporaryPostgres()
        defer { pg.stop() }
        let database = try await migratedDatabase(pg)
        let count = 1_500
        try await insertWaitingEvents(count, labelled: "restart", in: pg, database)
        // Each batch takes 300 ms to be answered: the replay is under way when PostgreSQL stops.
        server.injectFault(.latency(.milliseconds(300)), on: .events)
        let running = try startFlagship(["replay", "--env-id", "env", "--api-key", "key", "--db", url(pg, database),
                                         "--local-db", storeDirectory.appendingPathComponent("local.sqlite").path,
                                         "--decision-url", server.decisionBaseURL.absoluteString,
                                         "--events-url", server.eventsBaseURL.absoluteString], pgPassword: .given(pg.password))
        let started = Date()
        while server.received(.events).isEmpty, Date().timeIntervalSince(started) < 20 {
            try await Task.sleep(for: .milliseconds(10))
        }
        // Longer than a call's 5 s timeout: the pass in flight gives up on PostgreSQL and ends.
        try pg.kill()
        try await Task.sleep(for: .seconds(8))
        try pg.start()
        let result = try await Self.waitForExit(running)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try summary(result)["remaining"], 0, result.stdout)
        let replayed = try summary(result)["replayed"] ?? 0
        XCTAssertGreaterThanOrEqual(replayed, count, "each hit counted once at least (one whose send was not recorded before the restart is sent again)")
        let labels = Set(server.hits.compactMap { $0["el"]?.stringValue })
        XCTAssertEqual(labels, Set((1...count).map { "restart-\($0)" }), "every hit delivered")
        XCTAssertEqual(try pg.psql(database, "SELECT count(*) FROM flagship.hits"), "0")
        print("replay through a PostgreSQL restart: \(count) hits, replayed \(replayed), received \(server.hits.count)")
    }

    // MARK: credentials

    func testAWrongPasswordIsAQuickClearErrorThatNeverShowsThePassword() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        let wrong = "wrong-\(UUID().uuidString.prefix(8))"
        let withWrongPassword = "postgres://\(pg.username):\(wrong)@\(pg.host):\(pg.port)/\(database)"
        let started = Date()

        // The URL's password wins over PGPASSWORD, even a right one.
        let result = try await runFlagship(["hits", "--db", withWrongPassword, "--env-id", "env"], pgPassword: .given(pg.password))

        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertEqual(result.stdout, "")
        // First the warning a password in the URL draws (anyone can read it in `ps`), then the error.
        let lines = result.stderr.split(separator: "\n")
        XCTAssertTrue(lines.first?.hasPrefix("warning: --db holds a password") == true, result.stderr)
        XCTAssertTrue(lines.dropFirst().first?.hasPrefix("Error: connecting to \(Self.location(pg, database)): the server refused the credentials") == true,
                      result.stderr)
        XCTAssertFalse(result.stderr.contains(wrong), result.stderr)
        XCTAssertFalse(result.stderr.contains(pg.password), result.stderr)

        // Nobody listens on the port: said at once, too.
        let closed = try Self.closedPort()
        let unreachable = try await runFlagship(["db", "inspect", "--db", "postgres://\(pg.username):\(wrong)@127.0.0.1:\(closed)/\(database)"])
        XCTAssertNotEqual(unreachable.status, 0)
        XCTAssertTrue(unreachable.stderr.split(separator: "\n").dropFirst().first?.hasPrefix(
            "Error: connecting to postgres://\(pg.username)@127.0.0.1:\(closed)/\(database): PostgreSQL could not be reached") == true,
            unreachable.stderr)
        XCTAssertFalse(unreachable.stderr.contains(wrong), unreachable.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
    }

    func testThePasswordComesFromPGPASSWORDWhenTheURLHasNone() async throws {
        let pg = try postgres()
        let database = try await migratedDatabase(pg)
        // postgresql:// is the other scheme PostgreSQL's tools take.
        let withoutPassword = "postgresql://\(pg.username)@\(pg.host):\(pg.port)/\(database)"

        let withPGPASSWORD = try await runFlagship(["hits", "--db", withoutPassword, "--env-id", "env"], pgPassword: .given(pg.password))
        let without = try await runFlagship(["hits", "--db", withoutPassword, "--env-id", "env"], pgPassword: .unset)

        XCTAssertEqual(withPGPASSWORD.status, 0, withPGPASSWORD.stderr)
        XCTAssertEqual(withPGPASSWORD.stdout, "no hits\n")
        XCTAssertNotEqual(without.status, 0)
        XCTAssertEqual(without.stdout, "")
        XCTAssertTrue(without.stderr.contains("PGPASSWORD"), without.stderr)
    }

    // MARK: databases that are not a store this build reads

    /// Reading never creates the schema: inspect, visitors, hits and replay refuse a database
    /// without it (another application's here), and leave it as it was.
    func testADatabaseWithoutTheStoreIsRefusedAndLeftAsItWas() async throws {
        let pg = try postgres()
        let database = try pg.createDatabase()
        try pg.psql(database, "CREATE TABLE orders (id integer PRIMARY KEY); INSERT INTO orders VALUES (1)")
        let catalog = "SELECT string_agg(n.nspname || '.' || c.relname, ',' ORDER BY 1) FROM pg_class c "
            + "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')"
        let before = try pg.psql(database, catalog)
        let postgres = url(pg, database)
        let sdk = ["--api-key", "key", "--decision-url", server.decisionBaseURL.absoluteString,
                   "--events-url", server.eventsBaseURL.absoluteString, "--local-db", storeDirectory.appendingPathComponent("local.sqlite").path]

        for arguments in [["db", "inspect", "--db", postgres], ["visitors", "--db", postgres, "--env-id", "env"],
                          ["hits", "--db", postgres, "--env-id", "env"], ["replay", "--db", postgres, "--env-id", "env"] + sdk] {
            let result = try await runFlagship(arguments)

            XCTAssertNotEqual(result.status, 0, "\(arguments)")
            XCTAssertEqual(result.stdout, "")
            XCTAssertTrue(result.stderr.hasPrefix("Error: \(Self.location(pg, database)) holds no Flagship store (no schema \"flagship\")"),
                          result.stderr)
        }
        XCTAssertEqual(try pg.psql(database, catalog), before)
        XCTAssertEqual(try pg.psql(database, "SELECT count(*) FROM pg_namespace WHERE nspname = 'flagship'"), "0")
        XCTAssertEqual(try storeDirectoryListing(), [], "no local store file either")
        XCTAssertTrue(server.hits.isEmpty)
    }

    func testANewerSchemaOrAnotherApplicationsIsRefusedUnread() async throws {
        let pg = try postgres()
        let newer = try await migratedDatabase(pg)
        try pg.psql(newer, "INSERT INTO flagship.schema_migrations (version, name, checksum) VALUES (99, 'future', 'fnv1a64:0')")
        let foreign = try pg.createDatabase()
        try pg.psql(foreign, "CREATE SCHEMA flagship")

        let newerResult = try await runFlagship(["db", "inspect", "--db", url(pg, newer)])
        let foreignResult = try await runFlagship(["hits", "--db", url(pg, foreign), "--env-id", "env"])

        XCTAssertNotEqual(newerResult.status, 0)
        XCTAssertEqual(newerResult.stderr, "Error: the PostgreSQL store at \(Self.location(pg, newer)) has schema version 99, newer than "
            + "version \(Migration.postgres.count), the latest this build knows: it was not read (upgrade flagship to read it)\n")
        XCTAssertNotEqual(foreignResult.status, 0)
        XCTAssertEqual(foreignResult.stderr, "Error: the schema \"flagship\" of \(Self.location(pg, foreign)) is not this SDK's "
            + "(its comment is empty): it was not read\n")
        XCTAssertEqual(try pg.psql(foreign, "SELECT count(*) FROM pg_class WHERE relnamespace = 'flagship'::regnamespace"), "0")
    }

    /// The commands that work on store files only say so, naming the store without its password.
    func testCommandsForStoreFilesOnlySaySo() async throws {
        let postgres = "postgres://flagship:secret-\(UUID().uuidString.prefix(6))@db.invalid:5432/flagship"
        let sdk = ["--env-id", "env", "--api-key", "key", "--db", postgres]
        let commands: [(String, [String])] = [
            ("db migrate", ["db", "migrate", "--db", postgres]),
            ("db salvage", ["db", "salvage", "--db", postgres, "--from", storeFile.path]),
            ("db prune", ["db", "prune", "--db", postgres]),
            ("fetch", ["fetch", "--visitor-id", "v1"] + sdk),
            ("send-hit", ["send-hit", "--visitor-id", "v1", "--screen", "home"] + sdk),
            ("doctor", ["doctor"] + sdk),
        ]
        for (name, arguments) in commands {
            let result = try await runFlagship(arguments)

            XCTAssertNotEqual(result.status, 0, name)
            XCTAssertEqual(result.stdout, "", name)
            XCTAssertEqual(result.stderr, "Error: `flagship \(name)` needs a SQLite store file, not postgres://flagship@db.invalid:5432/flagship: "
                + "with PostgreSQL, `db inspect`, `visitors`, `hits`, `why`, `export` and `replay` take --db postgres://...\n")
        }
        XCTAssertEqual(try storeDirectoryListing(), [])
    }

    /// The options that go with a PostgreSQL store, given with a store file.
    func testPostgresOnlyOptionsWithAStoreFile() async throws {
        try withStore(StoreFixture.populate)

        let withEnvId = try await runFlagship(["visitors", "--db", storeFile.path, "--env-id", "env"])
        let withLocalDb = try await runFlagship(["replay", "--env-id", "env", "--api-key", "key", "--db", storeFile.path,
                                                 "--local-db", storeDirectory.appendingPathComponent("other.sqlite").path])

        XCTAssertEqual(withEnvId.status, 0, withEnvId.stderr)
        XCTAssertEqual(withEnvId.stderr, "warning: --env-id is ignored: a store file holds one environment\n")
        XCTAssertEqual(withEnvId.stdout.split(separator: "\n").count, 3, withEnvId.stdout)
        XCTAssertNotEqual(withLocalDb.status, 0)
        XCTAssertEqual(withLocalDb.stdout, "")
        XCTAssertTrue(withLocalDb.stderr.contains("--local-db goes with a PostgreSQL --db"), withLocalDb.stderr)
        XCTAssertEqual(try storeDirectoryListing(), [storeFile.lastPathComponent])
    }

    // MARK: Helpers

    /// The server, or a skip (a failure in CI, where PostgreSQL must be there).
    private func postgres() throws -> TemporaryPostgres {
        switch TemporaryPostgres.shared {
        case .success(let server):
            return server
        case .failure(let reason):
            if TemporaryPostgres.isRequired { XCTFail("PostgreSQL is required here (FLAGSHIP_REQUIRE_POSTGRES=1): \(reason)") }
            throw XCTSkip("PostgreSQL tests skipped: \(reason)")
        }
    }

    /// What `flagship eval` decides for one visitor on `file`, and the file's version (sha256).
    private static func decide(_ file: String, visitorId: String, context: String) async throws
        -> (version: String, assignments: [(campaign: String, group: String, variation: String)]) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-why-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("bucketing.json").path
        try Data(file.utf8).write(to: URL(fileURLWithPath: path))
        let result = try FlagshipExecutable.run(["eval", "--bucketing-file", path, "--visitor-id", visitorId, "--context", context,
                                                 "--explain", "--json"], outputDirectory: directory)
        guard let line = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
              let campaigns = line["campaigns"] as? [[String: String]],
              let version = (line["explanation"] as? [String: Any])?["fileVersion"] as? String else {
            throw FlagshipExecutable.Failure("eval printed no decision: \(result.stdout) \(result.stderr)")
        }
        return (version, campaigns.map { ($0["campaignId"] ?? "", $0["variationGroupId"] ?? "", $0["variationId"] ?? "") })
    }

    /// The database's URL without the password (the commands get it from PGPASSWORD).
    private func url(_ server: TemporaryPostgres, _ database: String) -> String {
        "postgres://\(server.username)@\(server.host):\(server.port)/\(database)"
    }

    /// How the commands name the database: the URL without the password.
    private static func location(_ server: TemporaryPostgres, _ database: String) -> String {
        "postgres://\(server.username)@\(server.host):\(server.port)/\(database)"
    }

    /// A new database with the schema migrated, as the SDK migrates it.
    private func migratedDatabase(_ server: TemporaryPostgres) async throws -> String {
        let database = try server.createDatabase("cli")
        let store = FlagshipPostgresStore(.init(host: server.host, port: server.port, username: server.username,
                                                password: server.password, database: database))
        do {
            try await store.prepare()
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        return database
    }

    /// Writes rows through the record stores, as the SDK does, on a connection of its own.
    private func write(_ server: TemporaryPostgres, _ database: String,
                       _ body: @Sendable (PostgresConnection, Logger) async throws -> Void) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: server.host, port: server.port, username: server.username,
                                 password: server.password, database: database, tls: .disable),
            id: 1, logger: logger)
        do {
            try await body(connection, logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    /// The store file fixture's visitors and hits, in `envId`.
    private static func populate(_ connection: PostgresConnection, envId: String, logger: Logger) async throws {
        try await PostgresVisitorStore(connection: connection, envId: envId, logger: logger).save(StoreFixture.visitors)
        try await PostgresHitStore(connection: connection, envId: envId, logger: logger).insert(StoreFixture.hits)
    }

    /// An event as the SDK caches it, created at `createdAt`.
    private static func event(id: String, label: String, createdAt: Int64) -> HitRecord {
        HitRecord(id: id, visitorId: "v1", type: "EVENT", document: """
            {"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "type": "EVENT", "time": \(createdAt), \
            "content": {"t": "EVENT", "vid": "v1", "ec": "Action Tracking", "ea": "replayed", "el": "\(label)", "ds": "APP", "cid": "env"}}}
            """, createdAt: createdAt)
    }

    /// Output with the ages that move with the clock masked: `ageSeconds` in JSON, the AGE
    /// column of a table.
    private static func withoutAges(_ output: String) throws -> String {
        output.replacingOccurrences(of: #""ageSeconds" : -?\d+"#, with: #""ageSeconds" : 0"#, options: .regularExpression)
            .replacingOccurrences(of: #"  \d+d\d\dh  "#, with: "  <age>  ", options: .regularExpression)
    }

    /// A port of 127.0.0.1 nobody listens on: bound, read back and released.
    private static func closedPort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw FlagshipExecutable.Failure("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// What `PGPASSWORD` a command gets.
    private enum PGPassword {
        case server, given(String), unset
    }

    /// Runs `flagship arguments` to its end without holding a thread (it polls between sleeps).
    private func runFlagship(_ arguments: [String], pgPassword: PGPassword = .server) async throws -> FlagshipExecutable.Result {
        try await Self.waitForExit(try startFlagship(arguments, pgPassword: pgPassword))
    }

    private func startFlagship(_ arguments: [String], pgPassword: PGPassword = .server) throws -> FlagshipExecutable.Running {
        var environment = ProcessInfo.processInfo.environment
        switch pgPassword {
        case .server: environment["PGPASSWORD"] = (try? postgres())?.password
        case .given(let password): environment["PGPASSWORD"] = password
        case .unset: environment["PGPASSWORD"] = nil
        }
        return try FlagshipExecutable.start(arguments, outputDirectory: outputDirectory, environment: environment)
    }

    private static func waitForExit(_ running: FlagshipExecutable.Running) async throws -> FlagshipExecutable.Result {
        let deadline = Date().addingTimeInterval(60)
        while running.process.isRunning {
            guard Date() < deadline else {
                running.kill()
                throw FlagshipExecutable.Failure("flagship \(running.arguments.joined(separator: " ")) did not finish within 60 s")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return try running.waitForExit()
    }
}

private extension BucketingRecord {
    /// The same file, stored for `envId`.
    func `for`(_ envId: String) -> BucketingRecord {
        BucketingRecord(envId: envId, document: document, lastModified: lastModified, downloadedAt: downloadedAt)
    }
}
#endif
