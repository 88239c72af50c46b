#if Postgres
import FlagshipPostgres
import FlagshipStore
import Foundation

/// How the reading commands read a PostgreSQL store: `PostgresInspection` (one connection, one
/// read-only snapshot, the schema checked, never migrated), its failures as `CommandFailure`s
/// that name the store by its URL without the password.
enum PostgresReading {
    static func read<T: Sendable>(_ location: FlagshipPostgresStore.Location,
                                  _ body: @escaping @Sendable (PostgresInspection) async throws -> T) async throws -> T {
        do {
            return try await PostgresInspection.read(location) { inspection in
                let schema = inspection.schema
                if let problem = schema.historyProblem {
                    Output.warn("the SDK will not use this store (\(problem)): it is read all the same")
                } else if schema.version < schema.latestKnown {
                    Output.warn("\(location) has schema version \(schema.version): the SDK migrates it to version \(schema.latestKnown) when it starts with it")
                }
                return try await body(inspection)
            }
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure("\(error)")
        }
    }

    /// `envId` if given; else a failure listing the environments the store holds.
    static func environment(_ envId: String?, in inspection: PostgresInspection,
                            location: FlagshipPostgresStore.Location) async throws -> String {
        if let envId { return envId }
        let environments = try await inspection.environments()
        let held = environments.isEmpty ? "it holds no rows yet" : "it holds " + environments.joined(separator: ", ")
        throw CommandFailure("the PostgreSQL store \(location) holds the rows of several environments: "
            + "name one with --env-id (\(held))")
    }
}

extension DBInspect {
    /// `db inspect --db postgres://...`: the schema, then each environment in counts.
    func inspect(_ location: FlagshipPostgresStore.Location) async throws {
        let now = Date()
        let envId = environment.envId
        let (schema, summaries) = try await PostgresReading.read(location) { inspection in
            let envIds: [String]
            if let envId { envIds = [envId] } else { envIds = try await inspection.environments() }
            return (inspection.schema, try await inspection.summaries(envIds: envIds, now: now.unixMilliseconds))
        }
        let environments = summaries.map { summary in
            (summary, summary.bucketing.map { file in
                StoredBucketingFile(envId: file.envId, lastModified: file.lastModified, downloadedAt: file.downloadedAt,
                                    bytes: file.document.utf8.count, now: now, document: .document(file.document))
            })
        }
        if json {
            try Output.printJSON(postgresJSON(location, schema: schema, environments: environments, now: now))
        } else {
            print(postgresText(location, schema: schema, environments: environments, now: now))
        }
    }

    private func postgresJSON(_ location: FlagshipPostgresStore.Location, schema: PostgresInspection.Schema,
                              environments: [(PostgresInspection.EnvironmentSummary, StoredBucketingFile?)], now: Date) -> [String: Any] {
        [
            "location": location.description,
            "schemaVersion": schema.version,
            "migrations": schema.migrations.map { step -> [String: Any] in
                ["version": step.version, "name": step.name, "checksum": step.checksum,
                 "appliedAt": step.appliedAt, "appliedAtUTC": Output.utc(unixMilliseconds: step.appliedAt)]
            },
            "environments": environments.map { summary, bucketing -> [String: Any] in
                [
                    "envId": summary.envId,
                    "visitors": summary.visitorCount,
                    "hits": ["total": summary.hitCount, "byType": summary.hitCountByType],
                    "claimedHits": summary.claimedHitCount,
                    "deadLetters": summary.deadLetterCount,
                    "backingOffHits": summary.backingOffHitCount,
                    "oldestHitCreatedAt": summary.oldestHitCreatedAt ?? NSNull(),
                    "oldestHitAgeSeconds": summary.oldestHitCreatedAt.map { Output.ageSeconds(sinceUnixMilliseconds: $0, now: now) } ?? NSNull(),
                    "bucketing": bucketing.map { file -> Any in
                        var object = file.jsonObject
                        object["envId"] = nil
                        return object
                    } ?? NSNull(),
                ]
            },
        ]
    }

    private func postgresText(_ location: FlagshipPostgresStore.Location, schema: PostgresInspection.Schema,
                              environments: [(PostgresInspection.EnvironmentSummary, StoredBucketingFile?)], now: Date) -> String {
        var rows = [
            ["store", location.description],
            ["schema version", "\(schema.version)"],
        ]
        for (index, step) in schema.migrations.enumerated() {
            rows.append([index == 0 ? "migrations" : "",
                         "\(step.version) \(step.name), applied \(Output.utc(unixMilliseconds: step.appliedAt))"])
        }
        rows.append(["environments", environments.isEmpty ? "none" : environments.map(\.0.envId).joined(separator: ", ")])
        for (summary, bucketing) in environments {
            rows.append(["", ""])
            rows.append(["env", summary.envId])
            rows.append(["  visitors", "\(summary.visitorCount)"])
            rows.append(["  hits", "\(summary.hitCount)"])
            rows += summary.hitCountByType.sorted { $0.key < $1.key }.map { ["    \($0.key)", "\($0.value)"] }
            rows.append(["  claimed", summary.claimedHitCount == 0 ? "0" : "\(summary.claimedHitCount) (being sent now: `flagship hits` says by whom)"])
            rows.append(["  dead letters", summary.deadLetterCount == 0 ? "0" : "\(summary.deadLetterCount) (never sent: `flagship hits` says why)"])
            rows.append(["  backing off", summary.backingOffHitCount == 0 ? "0" : "\(summary.backingOffHitCount) (failed, tried again later)"])
            if let createdAt = summary.oldestHitCreatedAt {
                let age = Output.ageSeconds(sinceUnixMilliseconds: createdAt, now: now)
                rows.append(["  oldest hit", "\(Output.age(seconds: age)) ago (\(Output.utc(unixMilliseconds: createdAt)))"])
            } else {
                rows.append(["  oldest hit", "-"])
            }
            rows.append(["  bucketing", bucketing?.text ?? "none"])
        }
        return Output.table(rows)
    }
}
#endif
