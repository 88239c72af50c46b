import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship hits`: the unsent hits, oldest first (the order in which they will be sent).
struct HitsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hits",
        abstract: "List the unsent hits, oldest first.",
        discussion: """
            The file is opened read-only. Each hit shows its failed sends (ATTEMPTS), when the SDK \
            that failed last will try again (NEXT TRY: "in 41s", "due", or "-" before any failure), \
            and who is sending it right now (CLAIMED BY: an SDK instance, "pid <pid> <id>", until its \
            claim lapses). --json includes each hit's cache document. A document the SDK cannot \
            send is listed all the same, with a warning saying why (CONTENT: ?).
            """ + postgresDiscussion("With --db postgres://..., the hits of the environment --env-id names, read in a read-only "
                + "transaction; CLAIMED BY then shows \"<host> pid <pid> <id>\".")
    )

    @OptionGroup var database: DatabaseArguments<HitsStore>
    @OptionGroup var environment: EnvironmentArguments

    @Flag(help: "Print a JSON array of rows, with each hit's cache document, instead of text.")
    var json = false

    @Option(help: "The most hits to list.")
    var limit = 100

    /// The page and the total, from one snapshot.
    private func read() async throws -> ([HitRecord], Int) {
        #if Postgres
        if let location = try database.postgresLocation() {
            let (envId, limit) = (environment.envId, limit)
            return try await PostgresReading.read(location) { inspection in
                let envId = try await PostgresReading.environment(envId, in: inspection, location: location)
                return (try await inspection.hits(envId: envId, limit: limit), try await inspection.hitCount(envId: envId))
            }
        }
        #endif
        environment.warnIfGivenForAFile()
        let store = try database.openForInspection()
        defer { store.close() }
        return try await store.read { db in (try db.hits.page(limit: limit), try db.hits.count()) }
    }

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be a positive number of hits, not \(limit)") }
    }

    func run() async throws {
        let (hits, total) = try await read()
        let documents = hits.map(Self.cachedDocument)
        let now = Date()
        if json {
            try Output.printJSON(hits.map { jsonRow($0, now: now) })
            return
        }
        guard !hits.isEmpty else {
            print("no hits")
            return
        }
        let header = ["ID", "TYPE", "VISITOR", "AGE", "ATTEMPTS", "NEXT TRY", "CLAIMED BY", "CONTENT"]
        print(Output.table([header] + zip(hits, documents).map { textRow($0, $1, now: now) }))
        if total > hits.count {
            print("the \(hits.count) oldest of \(total) hits (--limit to see more)")
        }
    }

    private func jsonRow(_ hit: HitRecord, now: Date) -> [String: Any] {
        [
            "id": hit.id,
            "visitorId": hit.visitorId,
            "type": hit.type,
            "isConsent": hit.isConsent,
            "createdAt": hit.createdAt,
            "createdAtUTC": Output.utc(unixMilliseconds: hit.createdAt),
            "ageSeconds": Output.ageSeconds(sinceUnixMilliseconds: hit.createdAt, now: now),
            "attempts": hit.attempts,
            "nextAttemptAt": hit.nextAttemptAt ?? NSNull(),
            "nextAttemptAtUTC": hit.nextAttemptAt.map { Output.utc(unixMilliseconds: $0) } ?? NSNull(),
            "leaseOwner": Self.claimHolder(hit, now: now) ?? NSNull(),
            "deadLetter": hit.deadLetter ?? NSNull(),
            "document": Output.embeddedJSON(hit.document),
        ]
    }

    private func textRow(_ hit: HitRecord, _ document: HitCacheDocument?, now: Date) -> [String] {
        [
            hit.id,
            hit.type,
            hit.visitorId,
            Output.age(seconds: Output.ageSeconds(sinceUnixMilliseconds: hit.createdAt, now: now)),
            "\(hit.attempts)",
            Self.nextTry(hit, now: now),
            hit.deadLetter ?? Self.claimHolder(hit, now: now) ?? "-",
            document.map(Self.contentSummary) ?? "?",
        ]
    }

    /// Who holds a claim on the hit now; `nil` when nobody does or the claim lapsed (its holder
    /// died: the next sender takes the hit over).
    private static func claimHolder(_ hit: HitRecord, now: Date) -> String? {
        guard hit.deadLetter == nil else { return nil }
        guard let owner = hit.leaseOwner, let until = hit.leaseUntil, until > now.unixMilliseconds else { return nil }
        return owner
    }

    /// `in 41s` or `due`; `-` for a hit that never failed.
    private static func nextTry(_ hit: HitRecord, now: Date) -> String {
        guard let nextAttemptAt = hit.nextAttemptAt else { return "-" }
        let wait = -Output.ageSeconds(sinceUnixMilliseconds: nextAttemptAt, now: now)
        return wait > 0 ? "in " + Output.age(seconds: wait) : "due"
    }

    /// The hit's document as the SDK reads it before sending, or `nil` after a warning saying
    /// why the SDK cannot send it.
    private static func cachedDocument(_ hit: HitRecord) -> HitCacheDocument? {
        do {
            return try HitCacheDocument(FSJSONValue(parsing: Data(hit.document.utf8)))
        } catch {
            Output.warn("hit '\(hit.id)': its document is not a hit cache document (\(error)); the SDK will not send it")
            return nil
        }
    }

    /// The few wire fields that tell hits of one type apart, as `key=value`.
    private static func contentSummary(_ document: HitCacheDocument) -> String {
        (telling[document.type] ?? []).compactMap { key -> String? in
            guard let value = document.content[key] else { return nil }
            let text: String
            switch value {
            case .string(let string): text = string
            case .object(let object): text = "{\(object.count) keys}"
            default: text = value.jsonString()
            }
            return "\(key)=\(text.count > 40 ? text.prefix(39) + "…" : text)"
        }.joined(separator: " ")
    }

    /// Per hit type, its telling wire fields (PROTOCOL.md, section 2 and 3).
    private static let telling: [String: [String]] = [
        "SCREENVIEW": ["dl"],
        "PAGEVIEW": ["dl"],
        "TRANSACTION": ["tid", "ta"],
        "ITEM": ["tid", "in", "ic"],
        "EVENT": ["ea", "el", "ev"],
        "SEGMENT": ["s"],
        "ACTIVATE": ["caid", "vaid"],
    ]
}
