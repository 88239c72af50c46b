import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship visitors`: the cached visitors, most recently seen first, `--limit` at most.
struct VisitorsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "visitors",
        abstract: "List the cached visitors, most recently seen first.",
        discussion: """
            The file is opened read-only. At most --limit visitors are listed (100 unless said), read \
            in pages of 500 down the index retention keeps and printed as they are read, so a store \
            of millions costs what a page costs, and --limit as large as the store never holds it in \
            memory. SEEN is the last lookup or write (what retention counts from), UPDATED the last \
            write. --json includes each visitor's cache document. A document the SDK would not use \
            is listed all the same, with a warning saying why (CAMPAIGNS: ?).
            """ + postgresDiscussion("With --db postgres://..., the visitors of the environment --env-id names, read in a read-only transaction.")
    )

    @OptionGroup var database: DatabaseArguments<VisitorsStore>
    @OptionGroup var environment: EnvironmentArguments

    @Flag(help: "Print a JSON array of rows, with each visitor's cache document, instead of text.")
    var json = false

    @Option(help: "The most visitors to list.")
    var limit = 100

    /// Visitors read at a time from a store file.
    static let pageSize = 500

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be a positive number of visitors, not \(limit)") }
    }

    func run() async throws {
        var listing = Listing(json: json)
        #if Postgres
        if let location = try database.postgresLocation() {
            let (envId, limit) = (environment.envId, limit + 1)
            let visitors = try await PostgresReading.read(location) { inspection in
                try await inspection.visitors(envId: PostgresReading.environment(envId, in: inspection, location: location), limit: limit)
            }
            try listing.print(visitors.prefix(self.limit).map { ($0.record, $0.lastSeenAt) })
            listing.end(more: visitors.count > self.limit)
            return
        }
        #endif
        environment.warnIfGivenForAFile()
        let store = try database.openForInspection()
        defer { store.close() }
        // Each page in a read transaction of its own, printed before the next is read: one more
        // visitor than is listed says whether there are more.
        var cursor = VisitorRecordStore.ListingCursor.start
        var left = limit
        while left > 0 {
            let asked = min(Self.pageSize, left)
            let page = try await store.read { [cursor] in try $0.visitors.mostRecentlySeen(after: cursor, limit: asked + 1) }
            let shown = page.prefix(asked)
            try listing.print(shown.map { ($0.record, $0.lastSeenAt) })
            left -= shown.count
            guard page.count > asked, let last = shown.last else {
                listing.end(more: false)
                return
            }
            cursor = last.cursor
        }
        listing.end(more: true)
    }

    /// What has been printed so far: the JSON array's opening, the text table's header.
    private struct Listing {
        let json: Bool
        var printed = 0

        /// One page: JSON rows as they come; a text page aligned on its own widest cells, the
        /// header above the first.
        mutating func print(_ visitors: [(record: VisitorRecord, lastSeenAt: Int64)]) throws {
            guard !visitors.isEmpty else { return }
            if json {
                for (index, visitor) in visitors.enumerated() {
                    // Read as the SDK reads it for its warning alone: the JSON row embeds the text.
                    _ = VisitorsCommand.cachedDocument(visitor.record)
                    let row = try Output.jsonText(VisitorsCommand.jsonRow(visitor.record, lastSeenAt: visitor.lastSeenAt))
                    Swift.print((printed + index == 0 ? "[" : ",\n") + row, terminator: "")
                }
            } else {
                let rows = visitors.map { visitor in
                    VisitorsCommand.textRow(visitor.record, lastSeenAt: visitor.lastSeenAt, VisitorsCommand.cachedDocument(visitor.record))
                }
                Swift.print(Output.table(printed == 0 ? [VisitorsCommand.header] + rows : rows))
            }
            printed += visitors.count
        }

        func end(more: Bool) {
            if json {
                Swift.print(printed == 0 ? "[]" : "]")
            } else if printed == 0 {
                Swift.print("no visitors")
            } else if more {
                Swift.print("the \(printed) most recently seen visitors (--limit to see more)")
            }
        }
    }

    static let header = ["VISITOR", "ANONYMOUS ID", "CONSENT", "SEEN (UTC)", "UPDATED (UTC)", "CAMPAIGNS"]

    private static func jsonRow(_ visitor: VisitorRecord, lastSeenAt: Int64) -> [String: Any] {
        [
            "visitorId": visitor.visitorId,
            "anonymousId": visitor.anonymousId ?? NSNull(),
            "consent": visitor.consent,
            "lastSeenAt": lastSeenAt,
            "lastSeenAtUTC": Output.utc(unixMilliseconds: lastSeenAt),
            "updatedAt": visitor.updatedAt,
            "updatedAtUTC": Output.utc(unixMilliseconds: visitor.updatedAt),
            "document": Output.embeddedJSON(visitor.document),
        ]
    }

    private static func textRow(_ visitor: VisitorRecord, lastSeenAt: Int64, _ document: VisitorCacheDocument?) -> [String] {
        [
            visitor.visitorId,
            visitor.anonymousId ?? "-",
            visitor.consent ? "yes" : "no",
            Output.utc(unixMilliseconds: lastSeenAt),
            Output.utc(unixMilliseconds: visitor.updatedAt),
            document.map { "\($0.campaignCount)" } ?? "?",
        ]
    }

    /// The visitor's document as the SDK reads it, or `nil` after a warning saying why the SDK
    /// would ignore it.
    static func cachedDocument(_ visitor: VisitorRecord) -> VisitorCacheDocument? {
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
