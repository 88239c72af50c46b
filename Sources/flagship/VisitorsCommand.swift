import ArgumentParser
import FlagshipStore
import Foundation

/// `flagship visitors`: the cached visitors, most recently updated first.
struct VisitorsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "visitors",
        abstract: "List the cached visitors, most recently updated first.",
        discussion: "The file is opened read-only. --json includes each visitor's cache document."
    )

    @OptionGroup var database: DatabaseArguments

    @Flag(help: "Print a JSON array of rows, with each visitor's cache document, instead of text.")
    var json = false

    func run() throws {
        let store = try database.openForInspection()
        defer { store.close() }
        let visitors = try store.visitors.visitors()
        if json {
            try Output.printJSON(visitors.map(jsonRow))
        } else if visitors.isEmpty {
            print("no visitors")
        } else {
            let header = ["VISITOR", "ANONYMOUS ID", "CONSENT", "UPDATED (UTC)", "CAMPAIGNS"]
            print(Output.table([header] + visitors.map(textRow)))
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

    private func textRow(_ visitor: VisitorRecord) -> [String] {
        let document = Output.embeddedJSON(visitor.document) as? [String: Any]
        let campaigns = (document?["data"] as? [String: Any])?["campaigns"] as? [Any]
        return [
            visitor.visitorId,
            visitor.anonymousId ?? "-",
            visitor.consent ? "yes" : "no",
            Output.utc(unixMilliseconds: visitor.updatedAt),
            campaigns.map { "\($0.count)" } ?? "?",
        ]
    }
}
