import ArgumentParser
import FlagshipStore
import Foundation

/// `flagship db inspect`: what a store holds, in counts, without changing it.
struct DBInspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a store's schema version, visitors, hits and bucketing files.",
        discussion: "The file is opened read-only: nothing in it is ever changed."
    )

    @OptionGroup var database: DatabaseArguments

    @Flag(help: "Print one JSON document instead of text.")
    var json = false

    func run() throws {
        let store = try database.openForInspection()
        defer { store.close() }
        let summary = try StoreSummary(of: store)
        let oldestHitAge = summary.oldestHitCreatedAt.map { Output.ageSeconds(sinceUnixMilliseconds: $0, now: Date()) }
        if json {
            try Output.printJSON(jsonDocument(summary, oldestHitAge: oldestHitAge))
        } else {
            print(textReport(summary, oldestHitAge: oldestHitAge))
        }
    }

    private func jsonDocument(_ summary: StoreSummary, oldestHitAge: Int64?) -> [String: Any] {
        [
            "path": database.url.path,
            "schemaVersion": summary.schemaVersion,
            "visitors": summary.visitorCount,
            "hits": ["total": summary.hitCount, "byType": summary.hitCountByType],
            "oldestHitCreatedAt": summary.oldestHitCreatedAt ?? NSNull(),
            "oldestHitAgeSeconds": oldestHitAge ?? NSNull(),
            "bucketing": summary.bucketing.map { file -> [String: Any] in
                [
                    "envId": file.envId,
                    "lastModified": file.lastModified ?? NSNull(),
                    "downloadedAt": file.downloadedAt,
                    "bytes": file.bytes,
                ]
            },
        ]
    }

    private func textReport(_ summary: StoreSummary, oldestHitAge: Int64?) -> String {
        var rows = [
            ["path", database.url.path],
            ["schema version", "\(summary.schemaVersion)"],
            ["visitors", "\(summary.visitorCount)"],
            ["hits", "\(summary.hitCount)"],
        ]
        rows += summary.hitCountByType.sorted { $0.key < $1.key }.map { ["  \($0.key)", "\($0.value)"] }
        if let createdAt = summary.oldestHitCreatedAt, let oldestHitAge {
            rows.append(["oldest hit", "\(Output.age(seconds: oldestHitAge)) ago (\(Output.utc(unixMilliseconds: createdAt)))"])
        } else {
            rows.append(["oldest hit", "-"])
        }
        let files = summary.bucketing.map { file in
            "\(file.envId): \(file.bytes) bytes, downloaded \(Output.utc(unixMilliseconds: file.downloadedAt)), "
                + "Last-Modified \(file.lastModified ?? "-")"
        }
        for (index, file) in (files.isEmpty ? ["none"] : files).enumerated() {
            rows.append([index == 0 ? "bucketing" : "", file])
        }
        return Output.table(rows)
    }
}
