import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship db inspect`: what a store holds, in counts, without changing it.
struct DBInspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a store's schema version, visitors, hits and bucketing files.",
        discussion: """
            The file is opened read-only: nothing in it or beside it is ever written. Every figure \
            is read from a kept counter, the hits (within the cache's cap) or an index's end, so it \
            takes the same time for a store of millions of visitors. --full also counts the \
            visitors, reads every decision row (assignments, visitors, unreadable rows) and checks \
            every page (SQLite's quick_check): in time linear in the file's size, and a damaged store \
            then makes it exit 1, printing what the check found.
            """ + postgresParagraph(
                "A PostgreSQL store (--db postgres://user@host:port/database) is read in one read-only " +
                "transaction: its schema version and migration history, then for each environment (or the one" +
                " --env-id names) its visitors, its hits by type, those being sent now (claimed) or waiting " +
                "to be tried again, the oldest, and its bucketing file. A database without the store's " +
                "schema, or with a newer one, is refused, and nothing is ever created.")
    )

    @OptionGroup var database: DatabaseArguments<InspectStore>
    @OptionGroup var environment: EnvironmentArguments

    @Option(help: ArgumentHelp(
        "With a store file: count the visitors not seen for this many seconds, those the SDK's retention deletes (0: none).",
        valueName: "seconds"))
    var retention: Int = Int(FlagshipConfig.defaultVisitorRetention)

    @Flag(help: "Print one JSON document instead of text.")
    var json = false

    @Flag(help: "With a store file: count the visitors and the decisions row by row, and check every page (time linear in the file's size).")
    var full = false

    /// The visitors due for pruning are counted up to this many without --full (more says "more than").
    private var dueCountLimit: Int { full ? .max - 1 : 100_000 }

    func validate() throws {
        try VisitorRetentionArgument.validate(retention)
    }

    func run() async throws {
        #if Postgres
        if let location = try database.postgresLocation() {
            try await inspect(location)
            return
        }
        #endif
        environment.warnIfGivenForAFile()
        try inspectFile()
    }

    private func inspectFile() throws {
        let store = try database.openForInspection()
        defer { store.close() }
        let now = Date()
        let retention = try VisitorRetentionArgument(seconds: TimeInterval(retention), now: now)
        // The counts, the bucketing files and the visitors' ages from one snapshot.
        let (summary, documents, visitors) = try store.read { db in
            let summary = try StoreSummary(of: store, in: db, full: full)
            let visitors = VisitorAges(oldest: try db.visitors.leastRecentlySeen(),
                                       due: try retention.boundary.map { try db.visitors.countNotSeen(since: $0, atMost: dueCountLimit + 1) } ?? 0)
            // A file's compiled form (schema version 8 on) says its campaigns without parsing the
            // JSON; without a usable one, the JSON is read.
            let documents = try summary.bucketing.map { file -> StoredBucketingFile.Read? in
                if let compiled = (try? db.bucketing.compiledFile(envId: file.envId))??.compiled,
                   let read = try? CompiledBucketingFile.file(from: compiled) {
                    return .file(read)
                }
                return try db.bucketing.file(envId: file.envId).map { .document($0.document) }
            }
            return (summary, documents, visitors)
        }
        let oldestHitAge = summary.oldestHitCreatedAt.map { Output.ageSeconds(sinceUnixMilliseconds: $0, now: now) }
        let files = zip(summary.bucketing, documents).map { file, document in
            StoredBucketingFile(envId: file.envId, lastModified: file.lastModified, downloadedAt: file.downloadedAt, bytes: file.bytes,
                                now: now, document: document)
        }
        if json {
            try Output.printJSON(jsonDocument(summary, oldestHitAge: oldestHitAge, bucketing: files,
                                              visitors: visitors, retention: retention, now: now))
        } else {
            print(textReport(summary, oldestHitAge: oldestHitAge, bucketing: files, visitors: visitors, retention: retention, now: now))
        }
        // Every page read once: what the counts above did not touch is checked too.
        guard full else { return }
        let check = try store.database.withConnection { try $0.query("PRAGMA quick_check(20)").compactMap { $0[0].text } }
        guard check == ["ok"] else {
            let lines = check.joined(separator: "; ")
            throw CommandFailure("the store is damaged; its quick_check says: \(lines)")
        }
    }

    /// A stored bucketing file, its age, and what the bucketing engine reads in it.
    struct StoredBucketingFile {
        let envId: String
        let lastModified: String?
        let downloadedAt: Int64
        let bytes: Int
        let ageSeconds: Int64
        /// `nil` when the engine cannot use the document; `unusableReason` says why.
        let campaignCount: Int?
        let panic: Bool?
        let unusableReason: String?

        /// What was read of a stored file: its compiled form, read; or its JSON.
        enum Read {
            case file(BucketingFile)
            case document(String)
        }

        init(envId: String, lastModified: String?, downloadedAt: Int64, bytes: Int, now: Date, document: Read?) {
            (self.envId, self.lastModified, self.downloadedAt, self.bytes) = (envId, lastModified, downloadedAt, bytes)
            ageSeconds = Output.ageSeconds(sinceUnixMilliseconds: downloadedAt, now: now)
            switch document {
            case nil:
                // Deleted since the summary was read: another process is writing the store.
                (campaignCount, panic, unusableReason) = (nil, nil, "removed while being read")
            case .file(let file):
                (campaignCount, panic, unusableReason) = (file.campaignCount, file.panic, nil)
            case .document(let document):
                do {
                    let file = try BucketingFile(json: Data(document.utf8), maximumBytes: .max)
                    (campaignCount, panic, unusableReason) = (file.campaignCount, file.panic, nil)
                } catch {
                    (campaignCount, panic, unusableReason) = (nil, nil, error.reason)
                }
            }
        }

        /// Its JSON members, `envId` included.
        var jsonObject: [String: Any] {
            [
                "envId": envId,
                "lastModified": lastModified ?? NSNull(),
                "downloadedAt": downloadedAt,
                "ageSeconds": ageSeconds,
                "bytes": bytes,
                "campaignCount": campaignCount ?? NSNull(),
                "panic": panic ?? NSNull(),
                "unusableReason": unusableReason ?? NSNull(),
            ]
        }

        /// `3 campaigns, 1204 bytes, downloaded 5m02s ago (...), Last-Modified ...`.
        var text: String {
            let contents = campaignCount.map { count in
                (panic == true ? "panic, " : "") + (count == 1 ? "1 campaign" : "\(count) campaigns")
            } ?? "unusable (\(unusableReason ?? ""))"
            return "\(contents), \(bytes) bytes, "
                + "downloaded \(Output.age(seconds: ageSeconds)) ago (\(Output.utc(unixMilliseconds: downloadedAt))), "
                + "Last-Modified \(lastModified ?? "-")"
        }
    }

    /// The least recently seen visitor, and how many were not seen within the retention.
    struct VisitorAges {
        let oldest: (visitorId: String, lastSeenAt: Int64)?
        let due: Int
    }

    private func jsonDocument(_ summary: StoreSummary, oldestHitAge: Int64?, bucketing: [StoredBucketingFile],
                              visitors: VisitorAges, retention: VisitorRetentionArgument, now: Date) -> [String: Any] {
        [
            "path": database.url.path,
            "schemaVersion": summary.schemaVersion,
            "visitors": summary.visitorCount,
            "oldestSeenVisitor": visitors.oldest.map { oldest -> Any in
                ["visitorId": oldest.visitorId, "lastSeenAt": oldest.lastSeenAt,
                 "lastSeenAgeSeconds": Output.ageSeconds(sinceUnixMilliseconds: oldest.lastSeenAt, now: now)]
            } ?? NSNull(),
            "dueForPruning": ["retentionSeconds": retention.seconds.map { Int64($0) as Any } ?? NSNull(),
                              "visitors": min(visitors.due, dueCountLimit), "moreThan": visitors.due > dueCountLimit],
            "hits": ["total": summary.hitCount, "byType": summary.hitCountByType],
            "deadLetters": summary.deadLetterCount,
            "oldestHitCreatedAt": summary.oldestHitCreatedAt ?? NSNull(),
            "oldestHitAgeSeconds": oldestHitAge ?? NSNull(),
            "decisions": ["assignments": summary.decisionCount.map { $0 as Any } ?? NSNull(),
                          "visitors": summary.decidedVisitorCount.map { $0 as Any } ?? NSNull(),
                          "unreadableRows": summary.unreadableDecisionRows.map { $0 as Any } ?? NSNull(),
                          "fileVersionsKept": summary.fileVersionCount],
            "full": full,
            "bucketing": bucketing.map(\.jsonObject),
        ]
    }

    private func textReport(_ summary: StoreSummary, oldestHitAge: Int64?, bucketing: [StoredBucketingFile],
                            visitors: VisitorAges, retention: VisitorRetentionArgument, now: Date) -> String {
        var rows = [
            ["path", database.url.path],
            ["schema version", "\(summary.schemaVersion)"],
            ["visitors", "\(summary.visitorCount)"],
        ]
        if let oldest = visitors.oldest {
            let age = Output.age(seconds: Output.ageSeconds(sinceUnixMilliseconds: oldest.lastSeenAt, now: now))
            rows.append(["  oldest seen", "\(age) ago (\(Output.utc(unixMilliseconds: oldest.lastSeenAt))): \(oldest.visitorId)"])
        } else {
            rows.append(["  oldest seen", "-"])
        }
        rows.append(["  due to prune", retention.text.map { "\(visitors.due > dueCountLimit ? "more than \(dueCountLimit)" : "\(visitors.due)") not seen for \($0) (`flagship db prune`)" } ?? "none (--retention 0)"])
        rows.append(["hits", "\(summary.hitCount)"])
        rows += summary.hitCountByType.sorted { $0.key < $1.key }.map { ["  \($0.key)", "\($0.value)"] }
        rows.append(["dead letters", summary.deadLetterCount == 0 ? "0" : "\(summary.deadLetterCount) (never sent: `flagship hits` says why)"])
        if let createdAt = summary.oldestHitCreatedAt, let oldestHitAge {
            rows.append(["oldest hit", "\(Output.age(seconds: oldestHitAge)) ago (\(Output.utc(unixMilliseconds: createdAt)))"])
        } else {
            rows.append(["oldest hit", "-"])
        }
        if let assignments = summary.decisionCount, let visitors = summary.decidedVisitorCount {
            rows.append(["decisions", "\(assignments) assignment(s) of \(visitors) visitor(s) (`flagship why`)"])
        } else {
            rows.append(["decisions", "not counted (--full reads them)"])
        }
        if let unreadable = summary.unreadableDecisionRows, unreadable > 0 {
            rows.append(["  unreadable", "\(unreadable) row(s) (`flagship why` skips them, naming them)"])
        }
        rows.append(["file versions", "\(summary.fileVersionCount) kept for replaying them"])
        if let kept = summary.keptVisitorCount, kept != summary.visitorCount {
            rows.append(["visitor count", "\(kept) kept, \(summary.visitorCount) counted: the table was written around its triggers"])
        }
        if !full { rows.append(["pages", "not checked (--full reads every page)"]) }
        let files = bucketing.map { "\($0.envId): \($0.text)" }
        for (index, file) in (files.isEmpty ? ["none"] : files).enumerated() {
            rows.append([index == 0 ? "bucketing" : "", file])
        }
        return Output.table(rows)
    }
}
