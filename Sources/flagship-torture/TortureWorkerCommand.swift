import ArgumentParser
import Flagship
import Foundation
import FlagshipLocalServer

/// The process `crash` kills: an app that fetches its visitors' flags and sends hits through
/// the SDK with continuous caching, awaiting each hit's commit and only then saying so.
///
/// Prints one line per event, each with a single `write(2)` so that a kill cuts at most the
/// last line: `ack <label>` once `try await sendHit` returned (the hit is committed), and
/// `fetched <visitor> <btnColor>` after a fetch. With `--drain` it only starts the SDK (which
/// sends what earlier runs left), waits for the sender to go idle, and prints
/// `{"delivered": n, "waiting": n}`.
struct TortureWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "The process a crash torture run kills (started by `crash`).",
        shouldDisplay: false
    )

    @Option var envId: String
    @Option var apiKey: String
    @Option var db: String
    @Option var decisionURL: String
    @Option var eventsURL: String
    @Option(help: "This run's number: the hits' labels are r<run>-<n>.") var run: Int = 1
    @Option(help: "Seeds the visitors' choice and the mix of fetches and hits.") var seed: UInt64 = 1
    @Option var visitors: Int = 12
    @Option(help: "Stop after this many hits (the parent normally kills the process first).") var maxHits: Int = 100_000
    @Flag(help: "Only send what earlier runs left, then report.") var drain = false

    static let hitAction = "torture"

    func run() async throws {
        let config = FSConfigBuilder().DecisionApi()
            .withCacheFile(URL(fileURLWithPath: db))
            .withDecisionBaseURL(try url(decisionURL))
            .withEventsBaseURL(try url(eventsURL))
            .withTimeout(2_000)
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 10, batchIntervalTimer: 0.1, strategy: .CONTINUOUS_CACHING))
            .build()
        let flagship = Flagship.sharedInstance
        flagship.start(envId: envId, apiKey: apiKey, config: config)
        guard flagship.getStatus() != .SDK_NOT_INITIALIZED else { throw ValidationError("the SDK did not start") }

        if drain {
            await flagship.waitUntilTrackingIsIdle()
            guard let statistics = await flagship.closeReporting() else { throw ValidationError("the SDK closed before reporting") }
            Self.say(#"{"delivered": \#(statistics.delivered), "waiting": \#(statistics.waiting)}"#)
            return
        }

        var generator = SplitMix64(seed: seed &+ UInt64(run) &* 0x9E37_79B9)
        let people = (0..<visitors).map { index in
            flagship.newVisitor(visitorId: "visitor-\(index)", hasConsented: true, instanceType: .NEW_INSTANCE).build()
        }
        for number in 1...maxHits {
            let visitor = people[Int(generator.next() % UInt64(people.count))]
            if generator.next() % 8 == 0 {
                try? await visitor.fetchFlags()
                let color = visitor.getFlag(key: "btnColor").value(defaultValue: "none") ?? "none"
                Self.say("fetched \(visitor.visitorId) \(color)")
            }
            let event = FSEvent(eventCategory: .Action_Tracking, eventAction: Self.hitAction)
            event.label = "r\(run)-\(number)"
            try await visitor.sendHit(event)
            Self.say("ack r\(run)-\(number)")
        }
        await flagship.close()
    }

    private func url(_ text: String) throws -> URL {
        guard let url = URL(string: text), url.scheme != nil else { throw ValidationError("not an absolute URL: \(text)") }
        return url
    }

    /// One line, one `write(2)`: nothing buffered in the process for a kill to lose.
    static func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
