import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship db inspect`: what a store holds, in counts, without changing it.
struct DBInspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a store's schema version, visitors, hits and bucketing files.",
        discussion: """
            The file is opened read-only: nothing in it or beside it is ever written. Every page \
            is then checked (PRAGMA quick_check): a damaged store makes it exit 1, printing what \
            the check found.
            """
    )

    @OptionGroup var database: DatabaseArguments

    @Flag(help: "Print one JSON document instead of text.")
    var json = false

    func run() throws {
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
            StoredBucketingFile(summary: file, now: now, document: document)
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
    private struct StoredBucketingFile {
        let summary: BucketingRecordStore.Summary
        let ageSeconds: Int64
        /// `nil` when the engine cannot use the document; `unusableReason` says why.
        let campaignCount: Int?
        let panic: Bool?
        let unusableReason: String?

        init(summary: BucketingRecordStore.Summary, now: Date, document: String?) {
            self.summary = summary
            ageSeconds = Output.ageSeconds(sinceUnixMilliseconds: summary.downloadedAt, now: now)
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
            "bucketing": bucketing.map { file -> [String: Any] in
                [
                    "envId": file.summary.envId,
                    "lastModified": file.summary.lastModified ?? NSNull(),
                    "downloadedAt": file.summary.downloadedAt,
                    "ageSeconds": file.ageSeconds,
                    "bytes": file.summary.bytes,
                    "campaignCount": file.campaignCount ?? NSNull(),
                    "panic": file.panic ?? NSNull(),
                    "unusableReason": file.unusableReason ?? NSNull(),
                ]
            },
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
        let files = bucketing.map { file in
            let contents = file.campaignCount.map { count in
                (file.panic == true ? "panic, " : "") + (count == 1 ? "1 campaign" : "\(count) campaigns")
            } ?? "unusable (\(file.unusableReason ?? ""))"
            return "\(file.summary.envId): \(contents), \(file.summary.bytes) bytes, "
                + "downloaded \(Output.age(seconds: file.ageSeconds)) ago (\(Output.utc(unixMilliseconds: file.summary.downloadedAt))), "
                + "Last-Modified \(file.summary.lastModified ?? "-")"
        }
        for (index, file) in (files.isEmpty ? ["none"] : files).enumerated() {
            rows.append([index == 0 ? "bucketing" : "", file])
        }
        return Output.table(rows)
    }
}
