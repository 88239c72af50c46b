import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship-soak`: the SDK under a steady flow of visitors for a while, against the local
/// server on 127.0.0.1, sampled as it goes: does the hit backlog, the store or the memory grow?
@main
struct SoakCommand: AsyncParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "flagship-soak",
        abstract: "Soak the Flagship SDK at a rate of visitors and say whether it keeps up.",
        discussion: """
            Each visitor is built with a context, fetches its flags (bucketing, ten campaigns), \
            reads three flags with exposure and sends one event, awaited. Visitors are started on \
            a schedule (open loop), at most --max-in-flight at a time; a visitor due beyond that is \
            not started, and counted. The SDK runs as an app runs it, on a store file in a \
            temporary directory, against an in-process local server that takes every batch.

            A run is steady when, over its last half, the backlog of hits grows by at most 2% of \
            the hits taken in, no hit was evicted, shed, refused or lost, no visitor failed and at \
            most 1% of them were not started. Ctrl-C ends a run early: the SDK is closed, its \
            store removed, and what was measured reported.

            --burst measures the closed-loop rate (64 concurrent visitors, as fast as they go); \
            --find-steady measures it, then bisects between --low and --high for the highest \
            steady rate, and prints both and their ratio.
            """
    )

    @Option(help: "Visitors per second offered.")
    var rate: Double = 500

    @Option(help: "Seconds the run lasts.")
    var duration: Double = 60

    @Option(help: "Seconds between samples (default: 10, or less so that a run has 12 samples).")
    var sampleInterval: Double?

    @Option(help: "Share of the visitors that are new; the others return (an id served earlier).")
    var newShare: Double = 0.8

    @Option(help: "Visitors in flight at most.")
    var maxInFlight: Int = 256

    @Option(help: "Write the samples here as CSV (with --find-steady: the highest steady trial's).")
    var csv: String?

    @Option(help: "Draw the samples here as an SVG chart (with --find-steady: the highest steady trial's).")
    var svg: String?

    @Flag(help: "Bisect for the highest steady rate between --low and --high (after a burst).")
    var findSteady = false

    @Option(help: "With --find-steady: a rate expected to be steady (visitors/s).")
    var low: Double = 200

    @Option(help: "With --find-steady: a rate expected not to be (visitors/s).")
    var high: Double = 4_000

    @Option(help: "With --find-steady: seconds per trial.")
    var trialDuration: Double = 30

    @Option(help: "With --find-steady: stop when the bracket is narrower than this share of its top.")
    var tolerance: Double = 0.05

    @Flag(help: "Measure the closed-loop (burst) rate only.")
    var burst = false

    @Option(help: "Visitors of the burst.")
    var burstVisitors: Int = 30_000

    @Option(help: "Seconds the SDK keeps a visitor not seen (its retention; default: the SDK's, 30 days).")
    var retention: Double?

    @Option(help: "The SDK's budget of visitors (least recently seen evicted beyond it; default: none).")
    var maxVisitors: Int?

    @Option(help: "Start from a copy of this store file (a store of many visitors, say), so that the SDK's prunes run under the load; the file itself is left alone.")
    var store: String?

    @Flag(help: "Run the SDK without decision provenance (no decisions rows, no kept file versions).")
    var noProvenance = false

    @Flag(help: "After each sample, give malloc's free pages back to the system (glibc's malloc_trim): whether RSS growth is memory in use or kept free.")
    var trimMalloc = false

    @Option(help: "Seeds the draw of new and returning visitors.")
    var seed: UInt64 = 31

    @Flag(help: "Print the summary only, not each sample.")
    var quiet = false

    func run() async throws {
        // Ctrl-C cancels the run rather than killing the process: the SDK is closed and its
        // store (gigabytes after a long run) removed, and what was measured is still reported.
        let command = self
        let work = Task { try await command.runMode() }
        signal(SIGINT, SIG_IGN)
        let interrupted = Locked(false)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        interrupt.setEventHandler {
            FileHandle.standardError.write(Data("flagship-soak: interrupted, closing the SDK\n".utf8))
            interrupted.withLock { $0 = true }
            work.cancel()
        }
        interrupt.resume()
        defer { interrupt.cancel() }
        do {
            try await work.value
        } catch let error as SoakError {
            SoakConsole.fail(error)
            throw ExitCode.failure
        }
        // As a shell reports a command ended by SIGINT: 128 + 2.
        if interrupted.withLock({ $0 }) { throw ExitCode(130) }
    }

    private func runMode() async throws(SoakError) {
        // Refused now rather than after a run of minutes.
        for path in [csv, svg].compactMap({ $0 }) {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            guard FileManager.default.isWritableFile(atPath: directory) else {
                throw .fileSystem(path: path, reason: "its directory does not exist or cannot be written")
            }
        }
        let fixture = try SoakFixture()
        if findSteady {
            try await searchSteadyRate(fixture: fixture)
        } else if burst {
            SoakConsole.say(try await BurstRun.run(visitors: burstVisitors, plan: plan(duration: duration), fixture: fixture).report())
        } else {
            try await soak(fixture: fixture)
        }
    }

    private func plan(duration seconds: Double) throws(SoakError) -> LoadPlan {
        guard seconds > 0, seconds.isFinite else { throw .invalidOption("a duration must be a positive number of seconds") }
        let interval = sampleInterval ?? min(10, seconds / 12)
        return try LoadPlan(rate: rate, duration: .seconds(seconds), sampleInterval: .seconds(interval), newVisitorShare: newShare,
                            maxInFlight: maxInFlight, seed: seed, retention: retention, maxVisitors: maxVisitors,
                            seedStore: store.map { URL(fileURLWithPath: $0) }, provenance: !noProvenance,
                            trimMalloc: trimMalloc).validated()
    }

    private func soak(fixture: SoakFixture) async throws(SoakError) {
        let plan = try plan(duration: duration)
        SoakConsole.say("soak: \(Int(plan.rate)) visitors/s for \(Self.seconds(plan.duration)) s, a sample every \(Self.seconds(plan.sampleInterval)) s")
        SoakConsole.say("URLSession's host check: \(URLHostCheck.current.summary)")
        let quiet = quiet
        let run = try await OpenLoop.run(plan, fixture: fixture) { sample in
            if !quiet { SoakConsole.say(SoakConsole.line(sample)) }
        }
        let summary = RunSummary(run)
        SoakConsole.say(summary.report())
        try writeResults(run, summary: summary)
    }

    private func searchSteadyRate(fixture: SoakFixture) async throws(SoakError) {
        let trialPlan = try plan(duration: trialDuration)
        let search = try SteadyRateSearch(low: low, high: high, tolerance: tolerance, trialPlan: trialPlan, fixture: fixture).validated()
        let burst = try await BurstRun.run(visitors: burstVisitors, plan: trialPlan, fixture: fixture)
        SoakConsole.say(burst.report())
        SoakConsole.say("find-steady: \(Int(low))...\(Int(high)) visitors/s, \(Self.seconds(trialPlan.duration)) s per trial, tolerance \(Int(tolerance * 100))%")
        SoakConsole.say(SteadyRateSearch.tableHeader)
        let (trials, steadiest) = try await search.run { SoakConsole.say(SteadyRateSearch.row($0)) }
        SoakConsole.say("trials    \(trials.count)")
        guard let steadiest else {
            SoakConsole.say("steady    none: \(Int(low)) visitors/s is not steady already")
            return
        }
        SoakConsole.say(String(format: "steady    %.0f visitors/s (highest steady rate found)", steadiest.rate))
        SoakConsole.say(String(format: "burst     %.1f visitors/s; steady/burst %.2f", burst.rate, steadiest.rate / burst.rate))
        try writeResults(steadiest.run, summary: steadiest.summary)
    }

    private func writeResults(_ run: SoakRun, summary: RunSummary) throws(SoakError) {
        if let csv {
            let url = URL(fileURLWithPath: csv)
            try SampleCSV.write(run.samples, to: url)
            SoakConsole.say("csv       \(url.path)")
        }
        if let svg {
            let url = URL(fileURLWithPath: svg)
            try SoakChart(samples: run.samples, title: SoakConsole.title(run), subtitle: SoakConsole.verdict(summary)).write(to: url)
            SoakConsole.say("svg       \(url.path)")
        }
    }

    static func seconds(_ duration: Duration) -> String {
        SoakChart.trimmed(duration.inSeconds)
    }
}
