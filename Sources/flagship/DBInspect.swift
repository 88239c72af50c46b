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
            The file is opened read-only: nothing in it or beside it is ever written. Every page \
            is then checked (PRAGMA quick_check): a damaged store makes it exit 1, printing what \
            the check found.

            A PostgreSQL store (--db postgres://user@host:port/database) is read in one read-only \
            transaction: its schema version and migration history, then for each environment (or \
            the one --env-id names) its visitors, its hits by type, those being sent now (claimed) \
            or waiting to be tried again, the oldest, and its bucketing file. A database without \
            the store's schema, or with a newer one, is refused, and nothing is ever created.
            """
    )

    @OptionGroup var database: DatabaseArguments
    @OptionGroup var environment: EnvironmentArguments

    @Flag(help: "Print one JSON document instead of text.")
    var json = false

    func run() async throws {
        if let location = try database.postgresLocation() {
            try await inspect(location)
            return
        }
        environment.warnIfGivenForAFile()
        try inspectFile()
    }

    private func inspectFile() throws {
        let store = try database.openForInspection()
        defer { store.close() }
        // The counts and the bucketing files from one snapshot.
        let (summary, documents) = try store.read { db in
            let summary = try StoreSummary(of: store, in: db)
            return (summary, try summary.bucketing.map { try db.bucketing.file(envId: $0.envId)?.document })
        }
        let now = Date()
        let oldestHitAge = summary.oldestHitCreatedAt.map { Output.ageSeconds(sinceUnixMilliseconds: $0, now: now) }
        let files = zip(summary.bucketing, documents).map { file, document in
            StoredBucketingFile(envId: file.envId, lastModified: file.lastModified, downloadedAt: file.downloadedAt, bytes: file.bytes,
                                now: now, document: document)
        }
        if json {
            try Output.printJSON(jsonDocument(summary, oldestHitAge: oldestHitAge, bucketing: files))
        } else {
            print(textReport(summary, oldestHitAge: oldestHitAge, bucketing: files))
        }
        // Every page read once: what the counts above did not touch is checked too.
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

        init(envId: String, lastModified: String?, downloadedAt: Int64, bytes: Int, now: Date, document: String?) {
            (self.envId, self.lastModified, self.downloadedAt, self.bytes) = (envId, lastModified, downloadedAt, bytes)
            ageSeconds = Output.ageSeconds(sinceUnixMilliseconds: downloadedAt, now: now)
            guard let document else {
                // Deleted since the summary was read: another process is writing the store.
                (campaignCount, panic, unusableReason) = (nil, nil, "removed while being read")
                return
            }
            do {
                let file = try BucketingFile(json: Data(document.utf8))
                (campaignCount, panic, unusableReason) = (file.campaignCount, file.panic, nil)
            } catch {
                (campaignCount, panic, unusableReason) = (nil, nil, error.reason)
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

    private func jsonDocument(_ summary: StoreSummary, oldestHitAge: Int64?, bucketing: [StoredBucketingFile]) -> [String: Any] {
        [
            "path": database.url.path,
            "schemaVersion": summary.schemaVersion,
            "visitors": summary.visitorCount,
            "hits": ["total": summary.hitCount, "byType": summary.hitCountByType],
            "deadLetters": summary.deadLetterCount,
            "oldestHitCreatedAt": summary.oldestHitCreatedAt ?? NSNull(),
            "oldestHitAgeSeconds": oldestHitAge ?? NSNull(),
            "decisions": ["assignments": summary.decisionCount, "visitors": summary.decidedVisitorCount,
                          "fileVersionsKept": summary.fileVersionCount],
            "bucketing": bucketing.map(\.jsonObject),
        ]
    }

    private func textReport(_ summary: StoreSummary, oldestHitAge: Int64?, bucketing: [StoredBucketingFile]) -> String {
        var rows = [
            ["path", database.url.path],
            ["schema version", "\(summary.schemaVersion)"],
            ["visitors", "\(summary.visitorCount)"],
            ["hits", "\(summary.hitCount)"],
        ]
        rows += summary.hitCountByType.sorted { $0.key < $1.key }.map { ["  \($0.key)", "\($0.value)"] }
        rows.append(["dead letters", summary.deadLetterCount == 0 ? "0" : "\(summary.deadLetterCount) (never sent: `flagship hits` says why)"])
        if let createdAt = summary.oldestHitCreatedAt, let oldestHitAge {
            rows.append(["oldest hit", "\(Output.age(seconds: oldestHitAge)) ago (\(Output.utc(unixMilliseconds: createdAt)))"])
        } else {
            rows.append(["oldest hit", "-"])
        }
        rows.append(["decisions", "\(summary.decisionCount) assignment(s) of \(summary.decidedVisitorCount) visitor(s) (`flagship why`)"])
        rows.append(["file versions", "\(summary.fileVersionCount) kept for replaying them"])
        let files = bucketing.map { "\($0.envId): \($0.text)" }
        for (index, file) in (files.isEmpty ? ["none"] : files).enumerated() {
            rows.append([index == 0 ? "bucketing" : "", file])
        }
        return Output.table(rows)
    }
}
