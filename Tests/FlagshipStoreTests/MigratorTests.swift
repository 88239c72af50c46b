import Foundation
import XCTest

import FlagshipStore

final class MigratorTests: StoreTestCase {
    // MARK: - The embedded migrations

    func testFreshDatabaseReachesTheLatestVersionAndRecordsEveryMigrationByName() throws {
        let migrator = Migrator()

        let store = try openStore()

        XCTAssertGreaterThanOrEqual(migrator.latestVersion, 1)
        XCTAssertEqual(store.schemaVersion, migrator.latestVersion)
        XCTAssertEqual(store.opening.fromVersion, 0)
        XCTAssertNil(store.opening.movedAside)
        XCTAssertEqual(try appliedMigrations(store.database), migrator.migrations.map {
            AppliedMigration(version: Int64($0.version), name: $0.name, appliedAt: fixedNowMilliseconds)
        })
        XCTAssertEqual(migrator.migrations.first?.name, "initial_schema")
    }

    func testFreshDatabaseSetsUserVersionAndApplicationID() throws {
        let store = try openStore()
        XCTAssertEqual(try store.database.integer("PRAGMA user_version"), Int64(Migrator().latestVersion))
        store.close()

        // As `file` and other tools read the header: big-endian integers at offsets 60 and 68.
        let header = try fileBytes(url()).prefix(100)
        XCTAssertEqual(header[60..<64].reduce(0) { $0 << 8 | Int($1) }, Migrator().latestVersion)
        XCTAssertEqual(String(decoding: header[68..<72], as: UTF8.self), "FSdk")
    }

    func testFreshDatabaseHasTheTablesAndViewsOfTheSchema() throws {
        let store = try openStore()

        XCTAssertEqual(try store.database.schemaObjectNames(), [
            "bucketing", "bucketing_file_uses", "bucketing_files", "decision_rows", "decisions", "decisions_readable", "hits",
            "hits_readable", "hits_total", "schema_migrations", "sdk_state", "shared_contexts", "shared_variations", "sqlite_sequence", "visitor_documents",
            "visitors", "visitors_readable", "visitors_total",
        ])
    }

    func testReopeningIsANoOpThatKeepsTheRecordedMigrations() throws {
        let first = try openStore()
        let recorded = try appliedMigrations(first.database)
        first.close()

        let later = Date(unixMilliseconds: fixedNowMilliseconds + 86_400_000)
        let reopened = try openStore(now: { later })

        XCTAssertEqual(reopened.opening.fromVersion, Migrator().latestVersion)
        XCTAssertEqual(reopened.schemaVersion, Migrator().latestVersion)
        XCTAssertNil(reopened.opening.movedAside)
        XCTAssertEqual(try appliedMigrations(reopened.database), recorded)
    }

    func testMigratingAnUpToDateDatabaseAppliesNothing() throws {
        let store = try openStore()

        let outcome = try Migrator().migrate(store.database)

        XCTAssertEqual(outcome.fromVersion, Migrator().latestVersion)
        XCTAssertEqual(outcome.toVersion, Migrator().latestVersion)
        XCTAssertEqual(outcome.applied, [])
    }

    // MARK: - The history a file records

    /// Migrations are append-only: a step that shipped never changes. Editing one fails here, in
    /// the repository, before a user's file is refused for it. A new step adds its line.
    func testTheEmbeddedStepsAreTheOnesThatShipped() {
        XCTAssertEqual(Migration.embedded.map { "\($0.version) \($0.name) \($0.checksum)" }, [
            "1 initial_schema fnv1a64:d44fb3dd4fef8a68",
            "2 hit_delivery fnv1a64:5d8311d38cfc90a7",
            "3 decision_provenance fnv1a64:76186d3148c2ba34",
            "4 visitor_retention fnv1a64:32595d719f04a13c",
            "5 shared_parts fnv1a64:211eef48996d5420",
            "6 reported_facts fnv1a64:c0e2b49e736c12ec",
            "7 visitor_count fnv1a64:74ea879e8f11bece",
            "8 compiled_bucketing fnv1a64:280788e07a093549",
            "9 bucketing_file_uses fnv1a64:5f541107f461a50e",
            "10 bucketing_small_columns_first fnv1a64:0a531f175c05b072",
        ])
    }

    func testEveryStepIsRecordedWithTheChecksumOfItsSQL() throws {
        let store = try openStore()

        XCTAssertEqual(try recordedSteps(store.database), Migration.embedded.map { RecordedStep(version: $0.version, record: $0.record) })
    }

    func testTheChecksumChangesWithAnyByteOfTheSQL() {
        let step = Migration(version: 1, name: "a", sql: "CREATE TABLE t (x);")

        XCTAssertEqual(step.checksum, Migration(version: 9, name: "b", sql: "CREATE TABLE t (x);").checksum, "the SQL alone counts")
        XCTAssertNotEqual(step.checksum, Migration(version: 1, name: "a", sql: "CREATE TABLE t (x); ").checksum)
        XCTAssertNotEqual(step.checksum, Migration(version: 1, name: "a", sql: "CREATE TABLE t (y);").checksum)
        // FNV-1a's published offset basis: the hash of no bytes.
        XCTAssertEqual(Migration(version: 1, name: "a", sql: "").checksum, "fnv1a64:cbf29ce484222325")
        XCTAssertEqual(Migration(version: 1, name: "a", sql: "a").checksum, "fnv1a64:af63dc4c8601ec8c")
    }

    func testAStepRenamedAfterItShippedIsRefusedNamingBothAndTheFileIsLeftByteForByteUnchanged() throws {
        try openStore().close()
        let before = try fileBytes(url())
        let listing = try directoryListing()
        let renamed = Migration(version: 1, name: "first_schema", sql: Migration.embedded[0].sql)

        XCTAssertThrowsError(try openStore(migrator: Migrator(migrations: [renamed] + Migration.embedded.dropFirst()))) { error in
            XCTAssertEqual(error as? StoreError, .migrationHistoryMismatch(
                path: self.url().path, version: 1, applied: Migration.embedded[0].record, embedded: renamed.record))
            XCTAssertEqual("\(error)", "\(self.url().path) records schema step 1 as 'initial_schema', but this build's step 1 is "
                + "'first_schema': a migration was renamed or replaced after the file was migrated. Steps are append-only, "
                + "so the file was left untouched (open it with the build that wrote it, or move it away to start afresh)")
        }

        XCTAssertEqual(try fileBytes(url()), before)
        XCTAssertEqual(try directoryListing(), listing, "nothing moved aside, nothing left behind")
    }

    func testAStepEditedAfterItShippedIsRefusedByItsChecksumAndTheFileIsLeftByteForByteUnchanged() throws {
        try openStore().close()
        let before = try fileBytes(url())
        let shipped = Migration.embedded[1]
        let edited = Migration(version: 2, name: shipped.name, sql: shipped.sql + "\n-- a comment added later\n")

        XCTAssertThrowsError(try openStore(migrator: Migrator(migrations: [Migration.embedded[0], edited] + Migration.embedded.dropFirst(2)))) { error in
            XCTAssertEqual(error as? StoreError, .migrationHistoryMismatch(
                path: self.url().path, version: 2, applied: shipped.record, embedded: edited.record))
            XCTAssertTrue("\(error)".contains(
                "records schema step 2 'hit_delivery' with checksum \(shipped.checksum), but this build's step 2 has checksum "
                + "\(edited.checksum): its SQL was edited after the file was migrated"), "\(error)")
        }

        XCTAssertEqual(try fileBytes(url()), before)
    }

    func testTheMigratorRefusesAnEditedStepBeforeApplyingTheNextOne() throws {
        let database = try rawDatabase()
        defer { database.close() }
        _ = try Migrator(migrations: [Self.createNotes]).migrate(database, now: { fixedNow })
        let edited = Migration(version: 1, name: "create_notes", sql: Self.createNotes.sql.replacingOccurrences(of: "'second'", with: "'2nd'"))

        XCTAssertThrowsError(try Migrator(migrations: [edited, Self.addPinned]).migrate(database)) { error in
            XCTAssertEqual(error as? StoreError, .migrationHistoryMismatch(
                path: self.url().path, version: 1, applied: Self.createNotes.record, embedded: edited.record))
        }

        XCTAssertEqual(try columnNames("notes", database), ["id", "body"], "step 2 not applied")
        XCTAssertEqual(try database.integer("PRAGMA user_version"), 1)
    }

    /// Files written before checksums were recorded: their steps are compared by name, and the
    /// column is added by the next step applied (in its transaction), not by merely opening.
    func testAFileFromBeforeChecksumsIsComparedByNameAndRecordsTheChecksumsOfLaterSteps() throws {
        try writeFileFromBeforeChecksums(at: url(), steps: [Migration.embedded[0]])

        let store = try openStore()

        XCTAssertEqual(store.opening.fromVersion, 1)
        XCTAssertEqual(store.schemaVersion, Migrator().latestVersion)
        XCTAssertEqual(try recordedSteps(store.database), Migration.embedded.map {
            RecordedStep(version: $0.version, record: MigrationRecord(name: $0.name, checksum: $0.version == 1 ? nil : $0.checksum))
        })
    }

    func testAnUpToDateFileFromBeforeChecksumsOpensUnchangedAndARenamedStepInItIsStillRefused() throws {
        try writeFileFromBeforeChecksums(at: url(), steps: Migration.embedded)

        let store = try openStore()
        XCTAssertEqual(store.opening.fromVersion, Migrator().latestVersion)
        XCTAssertEqual(try columnNames("schema_migrations", store.database), ["version", "name", "applied_at"], "opening alone adds no column")
        store.close()

        let renamed = Migration(version: 2, name: "delivery", sql: Migration.embedded[1].sql)
        XCTAssertThrowsError(try openStore(migrator: Migrator(migrations: [Migration.embedded[0], renamed] + Migration.embedded.dropFirst(2)))) { error in
            XCTAssertEqual(error as? StoreError, .migrationHistoryMismatch(
                path: self.url().path, version: 2, applied: MigrationRecord(name: "hit_delivery", checksum: nil), embedded: renamed.record))
        }
    }

    // MARK: - Upgrades from every earlier version

    /// Rows written with the SQL of one schema version, and what the latest record stores must
    /// read back from them after the upgrade. Add an entry for each new migration: the upgrade
    /// test fails for a version without one.
    struct SchemaSeed {
        var statements: [(sql: String, arguments: [SQLiteValue])] = []
        var visitors: [VisitorRecord] = []
        var hits: [HitRecord] = []
        var bucketing: [BucketingRecord] = []
        var state: [String: String] = [:]
        /// What `decisions` holds once the file is at the latest version.
        var decisions: [DecisionRecord] = []
        var fileVersions: [BucketingFileVersion] = []
        /// The compiled form of a stored bucketing file, by env id (version 8 on).
        var compiled: [String: [UInt8]] = [:]
    }

    static let seeds: [Int: SchemaSeed] = [
        // No schema at all: a file created by SQLite but never migrated.
        0: SchemaSeed(),
        1: seeds1,
        // Version 2 adds the delivery columns (attempt time, claim) and the trigger-kept count.
        2: seeds2,
        // Version 3 adds decision provenance: kept file versions, decisions, an activate's version.
        3: seeds3,
        // Version 4 adds the visitors' last-seen time (retention), NULL for rows written before it.
        4: seeds4,
        // Version 5 adds compact rows: shared variations and contexts, referred to by id.
        5: seeds5,
        // Version 6 puts a compact row's `reported` (what the platform was told) back in its document.
        6: seeds6,
        // Version 7 keeps the visitors' number (`visitors_total`), counted once at the upgrade.
        7: seeds7,
        // Version 8 keeps the bucketing file compiled beside its JSON (NULL until the SDK writes it).
        8: seeds8,
        // Version 9 keeps a file version's last use apart from its document.
        9: seeds9,
        // Version 10 orders the bucketing row's columns: its rows read back as version 9 wrote them.
        10: seeds9,
    ]

    /// The decisions version 3 carries forward from the visitors' assignment histories: each
    /// sample visitor's document holds vg1 → var1 of campaign c1.
    private static func carried(_ visitors: [VisitorRecord]) -> [DecisionRecord] {
        visitors.sorted { $0.visitorId < $1.visitorId }.map { visitor in
            DecisionRecord(visitorId: visitor.visitorId, decidedAt: visitor.updatedAt, campaignId: "c1", variationGroupId: "vg1",
                           variationId: "var1", source: .unknown, reason: "UNKNOWN", fileVersion: nil, context: nil, flags: nil)
        }
    }

    private static let seeds3: SchemaSeed = {
        var seed = seeds2
        // Rows written at version 3 carry nothing: only what is inserted here.
        let version = BucketingFileVersion(version: String(repeating: "ab", count: 32), envId: "env-1",
                                           document: #"{"campaigns":[],"panic":false}"#, origin: .download,
                                           firstUsedAt: 1_732_170_000_000, lastUsedAt: 1_732_170_050_000)
        let decision = DecisionRecord(visitorId: "visitor-1", decidedAt: 1_732_170_000_050, campaignId: "c1",
                                      variationGroupId: "vg1", variationId: "var1", source: .bucketingFile, reason: "SPLIT",
                                      fileVersion: version.version, context: #"{"plan":"free"}"#, flags: #"{"btnColor":"green"}"#)
        var activate = HitRecord.sample("hit-activate-v3", visitorId: "visitor-1", type: "ACTIVATE", createdAt: 1_732_170_000_600)
        activate.fileVersion = version.version
        activate.decidedAt = decision.decidedAt
        seed.statements.append((
            "INSERT INTO bucketing_files (version, env_id, document, origin, first_used_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?)",
            [.text(version.version), .text(version.envId), .text(version.document), .text(version.origin.rawValue),
             .integer(version.firstUsedAt), .integer(version.lastUsedAt)]
        ))
        seed.statements.append((
            "INSERT INTO decisions (visitor_id, decided_at, source, file_version, context, assignments) VALUES (?, ?, ?, ?, ?, ?)",
            [.text(decision.visitorId), .integer(decision.decidedAt), .text(decision.source.rawValue), SQLiteValue(decision.fileVersion),
             SQLiteValue(decision.context),
             .text(#"[{"campaignId":"c1","variationGroupId":"vg1","variationId":"var1","reason":"SPLIT","flags":{"btnColor":"green"}}]"#)]
        ))
        seed.statements.append((
            """
            INSERT INTO hits (id, visitor_id, type, is_consent, document, created_at, attempts, file_version, decided_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [.text(activate.id), .text(activate.visitorId), .text(activate.type), SQLiteValue(activate.isConsent),
             .text(activate.document), .integer(activate.createdAt), SQLiteValue(activate.attempts),
             SQLiteValue(activate.fileVersion), SQLiteValue(activate.decidedAt)]
        ))
        seed.hits.append(activate)
        seed.decisions = [decision]
        seed.fileVersions = [version]
        return seed
    }()

    private static let seeds4: SchemaSeed = {
        var seed = seeds3
        // A visitor written at version 4, seen after its last write.
        let visitor = VisitorRecord.sample("visitor-4", updatedAt: 1_732_170_002_000)
        seed.statements.append((
            "INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?)",
            [.text(visitor.visitorId), SQLiteValue(visitor.anonymousId), SQLiteValue(visitor.consent), .text(visitor.document),
             .integer(visitor.updatedAt), .integer(1_732_170_009_000)]
        ))
        seed.visitors.append(visitor)
        return seed
    }()

    private static let seeds6: SchemaSeed = {
        var seed = seeds5
        // A compact visitor with what the platform was told: `reported` comes back last in `data`.
        let reported = #"{"consent":true,"context":"0123456789abcdef0123456789abcdef","exposures":{"vg1":["var1",1732170004000]}}"#
        seed.statements.append((
            "INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at) VALUES (?, NULL, 1, ?, ?, ?)",
            [.text("visitor-6"),
             .text(#"{"compact":1,"context":{"plan":"pro"},"preset":3,"campaigns":[[7,true]],"assignmentsHistory":{"vg1":"var1"},"reported":"# + reported + "}"),
             .integer(1_732_170_004_000), .integer(1_732_170_004_000)]
        ))
        let entry = #"{"campaignId":"c1","campaignName":"Checkout","flags":{"btnColor":"green"},"isReference":false,"slug":null,"type":"ab","variationGroupId":"vg1","variationGroupName":"All users","variationId":"var1","variationName":"Green"}"#
        let whole = #"{"data":{"anonymousId":null,"assignmentsHistory":{"vg1":"var1"},"campaigns":["#
            + entry.dropLast() + #","activated":true}],"consent":true,"context":{"sdk_osName":"linux","plan":"pro"},"visitorId":"visitor-6","reported":"#
            + reported + #"},"version":1}"#
        seed.visitors.append(VisitorRecord(visitorId: "visitor-6", anonymousId: nil, consent: true, document: whole, updatedAt: 1_732_170_004_000))
        return seed
    }()

    private static let seeds7: SchemaSeed = {
        var seed = seeds6
        // A visitor written at version 7: counted by the trigger.
        let visitor = VisitorRecord.sample("visitor-7", updatedAt: 1_732_170_005_000)
        seed.statements.append((
            "INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?)",
            [.text(visitor.visitorId), SQLiteValue(visitor.anonymousId), SQLiteValue(visitor.consent), .text(visitor.document),
             .integer(visitor.updatedAt), .integer(visitor.updatedAt)]
        ))
        seed.visitors.append(visitor)
        return seed
    }()

    private static let seeds8: SchemaSeed = {
        var seed = seeds7
        let file = BucketingRecord(envId: "env-8", document: #"{"campaigns":[],"panic":true}"#, lastModified: nil,
                                   downloadedAt: 1_732_170_008_000)
        let compiled: [UInt8] = Array("FSBK".utf8) + [1, 2, 3]
        seed.statements.append((
            "INSERT INTO bucketing (env_id, document, last_modified, downloaded_at, compiled) VALUES (?, ?, NULL, ?, ?)",
            [.text(file.envId), .text(file.document), .integer(file.downloadedAt), .blob(compiled)]
        ))
        seed.bucketing.append(file)
        seed.compiled[file.envId] = compiled
        return seed
    }()

    private static let seeds9: SchemaSeed = {
        var seed = seeds8
        // Version 3's row of a kept version, as version 9 writes it: its last use apart.
        let withLastUse = "INSERT INTO bucketing_files (version, env_id, document, origin, first_used_at, last_used_at)"
        seed.statements = seed.statements.flatMap { statement -> [(sql: String, arguments: [SQLiteValue])] in
            guard statement.sql.hasPrefix(withLastUse) else { return [statement] }
            let arguments = statement.arguments
            return [("INSERT INTO bucketing_files (version, env_id, document, origin, first_used_at) VALUES (?, ?, ?, ?, ?)",
                     Array(arguments[0..<5])),
                    ("INSERT INTO bucketing_file_uses (version, last_used_at) VALUES (?, ?)", [arguments[0], arguments[5]])]
        }
        // A version written at version 9: its last use in a row of its own, later than the one of
        // version 3, so listed first.
        let version = BucketingFileVersion(version: String(repeating: "cd", count: 32), envId: "env-1",
                                           document: #"{"campaigns":[],"panic":true}"#, origin: .store,
                                           firstUsedAt: 1_732_170_060_000, lastUsedAt: 1_732_170_090_000)
        seed.statements.append((
            "INSERT INTO bucketing_files (version, env_id, document, origin, first_used_at) VALUES (?, ?, ?, ?, ?)",
            [.text(version.version), .text(version.envId), .text(version.document), .text(version.origin.rawValue),
             .integer(version.firstUsedAt)]
        ))
        seed.statements.append((
            "INSERT INTO bucketing_file_uses (version, last_used_at) VALUES (?, ?)", [.text(version.version), .integer(version.lastUsedAt)]
        ))
        seed.fileVersions.insert(version, at: 0)
        return seed
    }()

    private static let seeds5: SchemaSeed = {
        var seed = seeds4
        let entry = #"{"campaignId":"c1","campaignName":"Checkout","flags":{"btnColor":"green"},"isReference":false,"slug":null,"type":"ab","variationGroupId":"vg1","variationGroupName":"All users","variationId":"var1","variationName":"Green"}"#
        seed.statements.append(("INSERT INTO shared_variations (id, entry) VALUES (7, ?)", [.text(entry)]))
        seed.statements.append(("INSERT INTO shared_contexts (id, context) VALUES (3, ?)", [.text(#"{"sdk_osName":"linux"}"#)]))
        // A compact visitor, read back whole: the parts put together in the view's order.
        seed.statements.append((
            "INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at, last_seen_at) VALUES (?, NULL, 1, ?, ?, ?)",
            [.text("visitor-5"),
             .text(#"{"compact":1,"context":{"plan":"pro"},"preset":3,"campaigns":[[7,true]],"assignmentsHistory":{"vg1":"var1"}}"#),
             .integer(1_732_170_003_000), .integer(1_732_170_003_000)]
        ))
        let whole = #"{"data":{"anonymousId":null,"assignmentsHistory":{"vg1":"var1"},"campaigns":["#
            + entry.dropLast() + #","activated":true}],"consent":true,"context":{"sdk_osName":"linux","plan":"pro"},"visitorId":"visitor-5"},"version":1}"#
        seed.visitors.append(VisitorRecord(visitorId: "visitor-5", anonymousId: nil, consent: true, document: whole, updatedAt: 1_732_170_003_000))
        // A compact decision, read back whole.
        seed.statements.append((
            "INSERT INTO decisions (visitor_id, decided_at, source, file_version, context, context_preset, assignments) VALUES (?, ?, ?, NULL, ?, 3, ?)",
            [.text("visitor-5"), .integer(1_732_170_003_000), .text("decision_api"), .text(#"{"plan":"pro"}"#), .text(#"[[7,"TARGETING_MATCH"]]"#)]
        ))
        seed.decisions.append(DecisionRecord(visitorId: "visitor-5", decidedAt: 1_732_170_003_000, campaignId: "c1", variationGroupId: "vg1",
                                             variationId: "var1", source: .decisionAPI, reason: "TARGETING_MATCH", fileVersion: nil,
                                             context: #"{"sdk_osName":"linux","plan":"pro"}"#, flags: #"{"btnColor":"green"}"#))
        return seed
    }()

    private static let seeds1: SchemaSeed = {
            let visitors = [
                VisitorRecord.sample("visitor-2", anonymousId: "anon-2", consent: false, updatedAt: 1_732_170_001_000),
                VisitorRecord.sample("visitor-1", updatedAt: 1_732_170_000_000),
            ]
            let hits = [
                HitRecord.sample("hit-a", visitorId: "visitor-1", createdAt: 1_732_170_000_100, attempts: 2),
                HitRecord.sample("hit-b", visitorId: "visitor-1", type: "ACTIVATE", createdAt: 1_732_170_000_200),
                HitRecord.sample("consent", visitorId: "visitor-2", isConsent: true, createdAt: 1_732_170_000_300),
            ]
            let bucketing = [BucketingRecord(envId: "env-1", document: #"{"campaigns":[],"panic":false}"#,
                                             lastModified: "Thu, 21 Nov 2024 06:00:00 GMT", downloadedAt: 1_732_170_000_000)]
            let state = ["first_init": "1", "anonymous_id": "anon-xyz"]
            var statements: [(sql: String, arguments: [SQLiteValue])] = []
            for visitor in visitors {
                statements.append((
                    "INSERT INTO visitors (visitor_id, anonymous_id, consent, document, updated_at) VALUES (?, ?, ?, ?, ?)",
                    [.text(visitor.visitorId), SQLiteValue(visitor.anonymousId), SQLiteValue(visitor.consent),
                     .text(visitor.document), .integer(visitor.updatedAt)]
                ))
            }
            for hit in hits {
                statements.append((
                    "INSERT INTO hits (id, visitor_id, type, is_consent, document, created_at, attempts) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [.text(hit.id), .text(hit.visitorId), .text(hit.type), SQLiteValue(hit.isConsent), .text(hit.document),
                     .integer(hit.createdAt), SQLiteValue(hit.attempts)]
                ))
            }
            for file in bucketing {
                statements.append((
                    "INSERT INTO bucketing (env_id, document, last_modified, downloaded_at) VALUES (?, ?, ?, ?)",
                    [.text(file.envId), .text(file.document), SQLiteValue(file.lastModified), .integer(file.downloadedAt)]
                ))
            }
            for (key, value) in state.sorted(by: { $0.key < $1.key }) {
                statements.append((
                    "INSERT INTO sdk_state (key, value, updated_at) VALUES (?, ?, ?)",
                    [.text(key), .text(value), .integer(fixedNowMilliseconds)]
                ))
            }
            return SchemaSeed(statements: statements, visitors: visitors, hits: hits, bucketing: bucketing, state: state,
                              decisions: carried(visitors))
        }()

    private static let seeds2: SchemaSeed = {
            var seed = seeds1
            var failed = HitRecord.sample("hit-failed", visitorId: "visitor-3", createdAt: 1_732_170_000_400, attempts: 3)
            failed.nextAttemptAt = 1_732_170_060_000
            var claimed = HitRecord.sample("hit-claimed", visitorId: "visitor-3", createdAt: 1_732_170_000_500)
            claimed.leaseOwner = "pid 42 0a1b2c3d"
            claimed.leaseUntil = 1_732_170_090_000
            for hit in [failed, claimed] {
                seed.statements.append((
                    """
                    INSERT INTO hits (id, visitor_id, type, is_consent, document, created_at, attempts, next_attempt_at, lease_owner, lease_until)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [.text(hit.id), .text(hit.visitorId), .text(hit.type), SQLiteValue(hit.isConsent), .text(hit.document),
                     .integer(hit.createdAt), SQLiteValue(hit.attempts), SQLiteValue(hit.nextAttemptAt),
                     SQLiteValue(hit.leaseOwner), SQLiteValue(hit.leaseUntil)]
                ))
                seed.hits.append(hit)
            }
            return seed
        }()

    func testUpgradeFromEveryEarlierSchemaVersionKeepsItsData() throws {
        let latest = Migrator().latestVersion
        for version in 0..<latest {
            let seed = try XCTUnwrap(Self.seeds[version], "add a seed for schema version \(version)")
            let url = url("from-v\(version).sqlite")
            try writeDatabase(at: url, schemaVersion: version, seed: seed)

            let store = try openStore(at: url)

            XCTAssertEqual(store.opening.fromVersion, version, "from v\(version)")
            XCTAssertNil(store.opening.movedAside, "from v\(version)")
            XCTAssertEqual(store.schemaVersion, latest, "from v\(version)")
            XCTAssertEqual(try appliedMigrations(store.database).map(\.version), (1...latest).map(Int64.init), "from v\(version)")
            try assertIntact(seed, in: store, "from v\(version)")
            XCTAssertEqual(try store.read { try $0.visitors.count() }, seed.visitors.count, "the kept count, from v\(version)")
        }
    }

    /// Keeps the newest seed honest: it is the one the next migration's upgrade test starts from.
    func testSeedOfTheLatestVersionIsReadBackIntactAfterReopening() throws {
        let latest = Migrator().latestVersion
        XCTAssertEqual(Set(Self.seeds.keys), Set(0...latest), "one seed per schema version")
        let seed = try XCTUnwrap(Self.seeds[latest])
        try writeDatabase(at: url(), schemaVersion: latest, seed: seed)

        let store = try openStore()

        XCTAssertEqual(store.opening.fromVersion, latest)
        try assertIntact(seed, in: store, "at v\(latest)")
    }

    // MARK: - The mechanism, with test migrations

    private static let createNotes = Migration(version: 1, name: "create_notes", sql: """
        -- A table, with data, as a first release would ship it.
        CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
        INSERT INTO notes (body) VALUES ('first'), ('second');
        """)
    private static let addPinned = Migration(version: 2, name: "add_pinned", sql: """
        ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
        UPDATE notes SET pinned = 1 WHERE body = 'first';
        """)
    private static let brokenStep = Migration(version: 2, name: "broken_step", sql: """
        ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
        INSERT INTO no_such_table (x) VALUES (1);
        """)

    func testDataWrittenAtVersionOneSurvivesTheStepToVersionTwo() throws {
        let database = try rawDatabase()
        defer { database.close() }
        _ = try Migrator(migrations: [Self.createNotes]).migrate(database, now: { fixedNow })
        try database.write { try $0.execute("INSERT INTO notes (body) VALUES (?)", ["third"]) }

        let outcome = try Migrator(migrations: [Self.createNotes, Self.addPinned]).migrate(database, now: { fixedNow })

        XCTAssertEqual(outcome.fromVersion, 1)
        XCTAssertEqual(outcome.toVersion, 2)
        XCTAssertEqual(outcome.applied, [2])
        XCTAssertEqual(try notes(database), ["first:1", "second:0", "third:0"])
        XCTAssertEqual(try appliedMigrations(database), [
            AppliedMigration(version: 1, name: "create_notes", appliedAt: fixedNowMilliseconds),
            AppliedMigration(version: 2, name: "add_pinned", appliedAt: fixedNowMilliseconds),
        ])
        XCTAssertEqual(try database.integer("PRAGMA user_version"), 2)
    }

    func testMigrationsRunInVersionOrderWhateverTheOrderOfTheList() throws {
        let database = try rawDatabase()
        defer { database.close() }

        let outcome = try Migrator(migrations: [Self.addPinned, Self.createNotes]).migrate(database)

        XCTAssertEqual(outcome.applied, [1, 2])
        XCTAssertEqual(try notes(database), ["first:1", "second:0"])
    }

    func testMigrateUpToAVersionStopsThere() throws {
        let database = try rawDatabase()
        defer { database.close() }

        let outcome = try Migrator(migrations: [Self.createNotes, Self.addPinned]).migrate(database, upTo: 1)

        XCTAssertEqual(outcome.applied, [1])
        XCTAssertEqual(try database.integer("PRAGMA user_version"), 1)
        XCTAssertEqual(try columnNames("notes", database), ["id", "body"])
    }

    func testAFailingStepRollsBackAloneLeavingThePreviousStepAppliedAndItsDataIntact() throws {
        let database = try rawDatabase()
        defer { database.close() }

        XCTAssertThrowsError(try Migrator(migrations: [Self.createNotes, Self.brokenStep]).migrate(database, now: { fixedNow })) { error in
            guard let error = sqliteError(error) else { return }
            XCTAssertEqual(error.code, 1) // SQLITE_ERROR
            XCTAssertEqual(error.message, "no such table: no_such_table")
            XCTAssertTrue(error.sql?.contains("INSERT INTO no_such_table (x) VALUES (1);") ?? false, "\(error.sql ?? "no SQL")")
        }

        try database.withConnection { XCTAssertEqual(try Migrator.appliedVersion($0), 1) }
        XCTAssertEqual(try database.integer("PRAGMA user_version"), 1)
        XCTAssertEqual(try appliedMigrations(database), [AppliedMigration(version: 1, name: "create_notes", appliedAt: fixedNowMilliseconds)])
        // The ALTER TABLE of the failed step went with it.
        XCTAssertEqual(try columnNames("notes", database), ["id", "body"])
        XCTAssertEqual(try database.column("SELECT body FROM notes ORDER BY id"), ["first", "second"])

        // A build with the step fixed carries on from version 1.
        let outcome = try Migrator(migrations: [Self.createNotes, Self.addPinned]).migrate(database)
        XCTAssertEqual(outcome.applied, [2])
        XCTAssertEqual(try notes(database), ["first:1", "second:0"])
    }

    func testMigratorRefusesAFileNewerThanItsLastStep() throws {
        let database = try rawDatabase()
        defer { database.close() }
        _ = try Migrator(migrations: [Self.createNotes, Self.addPinned]).migrate(database)

        XCTAssertThrowsError(try Migrator(migrations: [Self.createNotes]).migrate(database)) { error in
            XCTAssertEqual(error as? StoreError, .schemaTooNew(path: self.url().path, databaseVersion: 2, latestKnownVersion: 1))
        }
        XCTAssertEqual(try notes(database), ["first:1", "second:0"])
    }

    // MARK: - Newer schema

    func testDatabaseWithANewerSchemaIsRefusedNamingBothVersionsAndLeftByteForByteUnchanged() throws {
        let latest = Migrator().latestVersion
        try writeNewerSchemaDatabase(at: url(), version: latest + 1)
        let before = try fileBytes(url())
        let listing = try directoryListing()

        XCTAssertThrowsError(try openStore()) { error in
            XCTAssertEqual(error as? StoreError, .schemaTooNew(path: self.url().path, databaseVersion: latest + 1, latestKnownVersion: latest))
            let text = "\(error)"
            XCTAssertTrue(text.contains("schema version \(latest + 1), newer than version \(latest)"), text)
        }

        XCTAssertEqual(try fileBytes(url()), before)
        XCTAssertEqual(try directoryListing(), listing, "nothing moved aside, nothing left behind")
    }

    // MARK: - Helpers

    struct AppliedMigration: Equatable {
        let version: Int64
        let name: String
        let appliedAt: Int64
    }

    private func appliedMigrations(_ database: Database) throws -> [AppliedMigration] {
        try database.read { connection in
            try connection.query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").map {
                AppliedMigration(version: try $0.int64(0), name: try $0.text(1), appliedAt: try $0.int64(2))
            }
        }
    }

    struct RecordedStep: Equatable {
        let version: Int
        let record: MigrationRecord
    }

    /// What `schema_migrations` holds, checksums included (`nil` where the column is absent).
    private func recordedSteps(_ database: Database) throws -> [RecordedStep] {
        let hasChecksum = try columnNames("schema_migrations", database).contains("checksum")
        return try database.read { connection in
            try connection.query("SELECT version, name, \(hasChecksum ? "checksum" : "NULL") FROM schema_migrations ORDER BY version").map {
                RecordedStep(version: try $0.int(0), record: MigrationRecord(name: try $0.text(1), checksum: try $0.optionalText(2)))
            }
        }
    }

    /// A file as builds before checksums left it: their `schema_migrations`, and `steps` applied.
    private func writeFileFromBeforeChecksums(at url: URL, steps: [Migration]) throws {
        let database = try rawDatabase(at: url)
        defer { database.close() }
        try database.withConnection { try $0.query("PRAGMA journal_mode = WAL") }
        try database.write { connection in
            try connection.executeScript("""
                CREATE TABLE schema_migrations (
                    version    INTEGER NOT NULL PRIMARY KEY,
                    name       TEXT    NOT NULL,
                    applied_at INTEGER NOT NULL  -- unix ms
                );
                """)
            for step in steps {
                try connection.executeScript(step.sql)
                try connection.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                                       [SQLiteValue(step.version), .text(step.name), .integer(fixedNowMilliseconds)])
            }
            try connection.execute("PRAGMA user_version = \(steps.last?.version ?? 0)")
            try connection.execute("PRAGMA application_id = \(Migrator.applicationID)")
        }
    }

    /// `body:pinned` of each note, once the `pinned` column exists.
    private func notes(_ database: Database) throws -> [String] {
        try database.read { connection in
            try connection.query("SELECT body || ':' || pinned FROM notes ORDER BY id").map { try $0.text(0) }
        }
    }

    private func columnNames(_ table: String, _ database: Database) throws -> [String] {
        try database.read { try $0.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]).map { try $0.text(0) } }
    }

    /// A file at `schemaVersion` of the embedded migrations, holding the seed's rows.
    private func writeDatabase(at url: URL, schemaVersion: Int, seed: SchemaSeed) throws {
        let database = try rawDatabase(at: url)
        defer { database.close() }
        let outcome = try Migrator().migrate(database, upTo: schemaVersion, now: { fixedNow })
        XCTAssertEqual(outcome.toVersion, schemaVersion)
        guard !seed.statements.isEmpty else { return }
        try database.write { connection in
            for statement in seed.statements { try connection.execute(statement.sql, statement.arguments) }
        }
    }

    private func assertIntact(_ seed: SchemaSeed, in store: FlagshipDatabase, _ context: String) throws {
        XCTAssertEqual(try store.read { try $0.visitors.visitors() }, seed.visitors.sorted { $0.updatedAt != $1.updatedAt ? $0.updatedAt > $1.updatedAt : $0.visitorId < $1.visitorId }, context)
        XCTAssertEqual(try store.read { try $0.hits.all() }, seed.hits.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }, context)
        XCTAssertEqual(try store.read { try $0.hits.count() }, seed.hits.count, "the trigger-kept count starts from the rows there, \(context)")
        XCTAssertEqual(try store.read { try $0.bucketing.summaries() }.map(\.envId), seed.bucketing.map(\.envId).sorted(), context)
        for file in seed.bucketing {
            XCTAssertEqual(try store.read { try $0.bucketing.file(envId: file.envId) }, file, context)
            XCTAssertEqual(try store.read { try $0.bucketing.compiledFile(envId: file.envId) }?.compiled, seed.compiled[file.envId], context)
        }
        let state = try store.read { try $0.state.all() }
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: state.map { ($0.key, $0.value) }), seed.state, context)
        XCTAssertEqual(try store.read { try $0.decisions.page(after: 0, limit: 1_000).decisions.map(\.record) }, seed.decisions, context)
        XCTAssertEqual(try store.read { try $0.bucketingFiles.versions() }, seed.fileVersions, context)
    }
}
