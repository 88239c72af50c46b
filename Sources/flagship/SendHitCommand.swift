import ArgumentParser
import Flagship
import Foundation

/// `flagship send-hit`: sends one hit, or the same hit several times, through the SDK, as an app
/// would, and says what became of them.
struct SendHitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send-hit",
        abstract: "Send a hit through the SDK; what the server does not take waits in the store.",
        discussion: """
            Choose one hit: --event ACTION [--category action|engagement] [--label L] [--value N], \
            --screen LOCATION, --page URL, --transaction ID --affiliation NAME [--revenue N] [--currency EUR], \
            or an item of a transaction: --item NAME --code CODE --transaction ID [--price N] [--quantity N].

            The visitor is created with consent, so its consent hit goes too. Every hit is committed \
            to the store before the command exits 0 (the server may be down: `flagship replay` or the \
            next start sends them). An invalid hit is refused with the field named, and nothing of it \
            is sent. Prints {"sent": n, "delivered": n, "rejected": n, "waiting": n, "lost": n} \
            (delivered and rejected count every hit sent since start, the consent hit and earlier \
            runs' included; lost counts hits neither delivered nor in the store file).

            Exits 1, after the summary, when a hit is lost (the store refused it and the server did \
            not take it from memory), or when the store stops taking hits: a store locked by another \
            process for longer than SQLite's wait (5 s), a full disk, a file deleted or replaced while \
            the command runs. It then stops sending: every 1000th hit is awaited, so it stops within \
            1000 hits of the failure, about 10 s after it.

            --durable: each hit is sent with `try await sendHit(_:until: .committed)` and, once it is \
            committed (under either strategy), `acknowledged <n>` is printed (n from 1 to --count); \
            the hit carries n as its session event number (sen) and, for an event, at the end of its \
            label (`<label>-<n>`, or `<n>`).
            """
    )

    @OptionGroup var sdk: SDKArguments<SendHitStore>
    @Option(help: "The visitor id.") var visitorId: String
    @OptionGroup(title: "Hit") var hit: HitArguments
    @Option(help: ArgumentHelp("How many times to send the hit.", valueName: "n")) var count = 1
    @Option(help: ArgumentHelp("How hits are cached: continuous (each one as it is sent) or periodic (at each interval and at close).",
                               valueName: "strategy"))
    var strategy: Strategy = .continuous
    @Flag(help: "Wait for each hit to be committed, and print `acknowledged <n>` once it is.") var durable = false

    enum Strategy: String, ExpressibleByArgument, CaseIterable {
        case continuous, periodic

        var caching: BatchCachingStrategy {
            switch self {
            case .continuous: return .CONTINUOUS_CACHING
            case .periodic: return .PERIODIC_CACHING
            }
        }
    }

    /// Without --durable, one hit in this many is awaited: a store that stops taking hits stops
    /// the command within that many hits.
    static let checkpoint = 1_000

    func validate() throws {
        guard count > 0 else { throw ValidationError("--count must be a positive number of hits, not \(count)") }
    }

    func run() async throws {
        try sdk.requireStoreFile()
        try sdk.checkStoreIsUsable()
        let config = sdk.configBuilder()
            .withTrackingManagerConfig(FSTrackingManagerConfig(strategy: strategy.caching))
            .build()
        let flagship = try sdk.startSDK(config)
        let visitor = await flagship.newVisitor(visitorId: visitorId, hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        var sent = 0
        var storeFailure: String?
        for number in 1...count {
            let next = hit.hit(number: durable ? number : nil)
            // The first hit is awaited, so that an invalid one is refused with the SDK's reason.
            let awaited = durable || number == 1 || number % Self.checkpoint == 0 || number == count
            guard awaited else {
                Self.sendWithoutWaiting(next, by: visitor)
                sent += 1
                continue
            }
            do {
                try await visitor.sendHit(next, until: durable ? .committed : .strategyDefault)
                sent += 1
                if durable { Output.line("acknowledged \(number)") }
            } catch let error as FlagshipError where error.code == .hitNotCached {
                // Accepted and kept in memory, but not in the store: stop here.
                sent += 1
                storeFailure = "the store stopped taking hits at hit \(number) of \(count) (\(error.cacheError.map(String.init(describing:)) ?? "\(error)")); the rest were not sent"
                break
            } catch {
                await flagship.close()
                throw CommandFailure(String(describing: error))
            }
        }
        // Writes every hit accepted above, then tries one last batch.
        guard let statistics = await flagship.closeReporting() else {
            throw CommandFailure("the SDK was closed before the hits were counted")
        }
        try Output.printJSONLine([
            "sent": sent,
            "delivered": statistics.delivered,
            "rejected": statistics.rejected,
            "waiting": statistics.waiting,
            "lost": statistics.lost,
        ])
        var problems: [String] = []
        if statistics.lost > 0 {
            problems.append("\(statistics.lost) hit(s) are lost: neither delivered nor in the store file")
        }
        if let storeFailure { problems.append(storeFailure) }
        if !problems.isEmpty { throw CommandFailure(problems.joined(separator: "; ")) }
    }

    /// The synchronous `sendHit`, which an async context would not pick: accepted at once,
    /// written by the next group commit.
    private static func sendWithoutWaiting(_ hit: any FSTrackingProtocol, by visitor: FSVisitor) {
        visitor.sendHit(hit)
    }
}
