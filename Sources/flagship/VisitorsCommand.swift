import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship visitors`: the cached visitors, most recently updated first.
struct VisitorsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "visitors",
        abstract: "List the cached visitors, most recently updated first.",
        discussion: """
            The file is opened read-only. --json includes each visitor's cache document. A document \
            the SDK would not use is listed all the same, with a warning saying why (CAMPAIGNS: ?).
            """ + postgresDiscussion("With --db postgres://..., the visitors of the environment --env-id names, read in a read-only transaction.")
    )

    @OptionGroup var database: DatabaseArguments<VisitorsStore>
    @OptionGroup var environment: EnvironmentArguments

    @Flag(help: "Print a JSON array of rows, with each visitor's cache document, instead of text.")
    var json = false

    private func read() async throws -> [VisitorRecord] {
        #if Postgres
        if let location = try database.postgresLocation() {
            let envId = environment.envId
            return try await PostgresReading.read(location) { inspection in
                try await inspection.visitors(envId: PostgresReading.environment(envId, in: inspection, location: location))
            }
        }
        #endif
        environment.warnIfGivenForAFile()
        let store = try database.openForInspection()
        defer { store.close() }
        return try await store.read { try $0.visitors.visitors() }
    }

    func run() async throws {
        let visitors = try await read()
        let documents = visitors.map(Self.cachedDocument)
        if json {
            try Output.printJSON(visitors.map(jsonRow))
        } else if visitors.isEmpty {
            print("no visitors")
        } else {
            let header = ["VISITOR", "ANONYMOUS ID", "CONSENT", "UPDATED (UTC)", "CAMPAIGNS"]
            print(Output.table([header] + zip(visitors, documents).map(textRow)))
        }
    }

    private func jsonRow(_ visitor: VisitorRecord) -> [String: Any] {
        [
            "visitorId": visitor.visitorId,
            "anonymousId": visitor.anonymousId ?? NSNull(),
            "consent": visitor.consent,
            "updatedAt": visitor.updatedAt,
            "updatedAtUTC": Output.utc(unixMilliseconds: visitor.updatedAt),
            "document": Output.embeddedJSON(visitor.document),
        ]
    }

    private func textRow(_ visitor: VisitorRecord, _ document: VisitorCacheDocument?) -> [String] {
        [
            visitor.visitorId,
            visitor.anonymousId ?? "-",
            visitor.consent ? "yes" : "no",
            Output.utc(unixMilliseconds: visitor.updatedAt),
            document.map { "\($0.campaignCount)" } ?? "?",
        ]
    }

    /// The visitor's document as the SDK reads it, or `nil` after a warning saying why the SDK
    /// would ignore it.
    private static func cachedDocument(_ visitor: VisitorRecord) -> VisitorCacheDocument? {
        do {
            return try VisitorCacheDocument(data: Data(visitor.document.utf8), expectedVisitorId: visitor.visitorId)
        } catch {
            if case .wrongVisitor(_, let found) = error {
                Output.warn("visitor '\(visitor.visitorId)': its cached document belongs to visitor '\(found)'; the SDK ignores it")
            } else {
                Output.warn("visitor '\(visitor.visitorId)': \(error); the SDK ignores it")
            }
            return nil
        }
    }
}
