import BenchSupport
import Benchmark
import Flagship
import FlagshipLocalServer
import Foundation

/// `flagship why --replay` over a store of 100,000 recorded decisions (issue 22): every decision
/// decided again on its recorded bucketing file version and context, beside the floor of the same
/// walk (the rows read and parsed, nothing replayed) measured in the same run. The store is made
/// by the SDK itself, in bucketing mode against the local server, over two file versions.
///
/// With `FLAGSHIP_BENCH_KEEP_STORE=PATH`, the store is also copied to PATH, to time the command
/// itself (`flagship why --db PATH --replay`) as a whole process.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, decisionsPerSecond],
        timeUnits: .milliseconds,
        units: [decisionsPerSecond: .count],
        warmupIterations: 1,
        maxDuration: .seconds(120),
        maxIterations: 10
    )
    let store = Box<ProvenanceStore>()

    Benchmark("why --replay: every recorded decision (100k+) on its file version and context") { (benchmark: Benchmark, store: ProvenanceStore) in
        for _ in benchmark.scaledIterations {
            let started = ContinuousClock.now
            do {
                let summary = try DecisionReplay.replayStore(at: store.file)
                benchmark.measurement(decisionsPerSecond, rate(summary.replayed, ContinuousClock.now - started))
                if summary.replayed < ProvenanceStore.decisions || summary.disagree > 0 || !summary.notReplayable.isEmpty {
                    benchmark.error("replayed \(summary.replayed), \(summary.disagree) disagree, not replayable \(summary.notReplayable)")
                }
            } catch {
                benchmark.error("\(error)")
            }
        }
    } setup: {
        try await ProvenanceStore.make(into: store)
    } teardown: {
        store.value?.remove()
    }

    Benchmark("baseline: every recorded decision read, not replayed") { (benchmark: Benchmark, store: ProvenanceStore) in
        for _ in benchmark.scaledIterations {
            let started = ContinuousClock.now
            do {
                let count = try DecisionReplay.readStore(at: store.file)
                benchmark.measurement(decisionsPerSecond, rate(count, ContinuousClock.now - started))
            } catch {
                benchmark.error("\(error)")
            }
        }
    } setup: {
        try await ProvenanceStore.make(into: store)
    } teardown: {
        store.value?.remove()
    }
}

let decisionsPerSecond = BenchmarkMetric.custom("decisions/s", polarity: .prefersLarger, useScalingFactor: false)

private func rate(_ count: Int, _ elapsed: Duration) -> Int {
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return seconds > 0 ? Int(Double(count) / seconds) : 0
}

/// A store of at least `decisions` assignments, written by the SDK.
final class ProvenanceStore: Sendable {
    static let decisions = 100_000
    let directory: TemporaryDirectory
    var file: URL { directory.url.appendingPathComponent("flagship.sqlite") }

    private init(directory: TemporaryDirectory) {
        self.directory = directory
    }

    func remove() {
        directory.remove()
    }

    /// Ten campaigns of two 50/50 variations, each targeted on a context key; `shift` moves the
    /// allocations (a second file version: decisions made on each replay on their own).
    static func bucketingFile(shift: Double) throws -> Data {
        let rules: [(String, String, Any)] = [
            ("country", "EQUALS", ["fr", "de", "it"]), ("age", "GREATER_THAN_OR_EQUALS", 18), ("plan", "NOT_EQUALS", "free"),
            ("device", "CONTAINS", "phone"), ("visits", "LOWER_THAN", 40), ("isVip", "EQUALS", false),
            ("country", "NOT_EQUALS", "us"), ("fs_all_users", "EQUALS", ""), ("plan", "EQUALS", "pro"), ("age", "LOWER_THAN", 50),
        ]
        let campaigns = rules.enumerated().map { index, rule -> [String: Any] in
            [
                "id": "c-\(index)", "type": index.isMultiple(of: 2) ? "ab" : "toggle",
                "variationGroups": [[
                    "id": "vg-\(index)",
                    "targeting": ["targetingGroups": [["targetings": [["key": rule.0, "operator": rule.1, "value": rule.2]]]]],
                    "variations": [
                        ["id": "v-\(index)-a", "allocation": 50 + shift, "modifications": ["type": "FLAG", "value": ["flag\(index)": "a"]]],
                        ["id": "v-\(index)-b", "allocation": 50 - shift, "modifications": ["type": "FLAG", "value": ["flag\(index)": "b"]]],
                    ],
                ]],
            ]
        }
        return try JSONSerialization.data(withJSONObject: ["campaigns": campaigns], options: [.sortedKeys])
    }

    static func context(_ index: Int) -> [String: Any] {
        [
            "country": ["fr", "de", "us", "it"][index % 4], "age": 16 + index % 40, "plan": ["free", "pro", "enterprise"][index % 3],
            "device": index % 2 == 0 ? "iphone" : "desktop", "visits": index % 60, "isVip": index % 5 == 0,
        ]
    }

    /// Decides new visitors through the SDK (64 at a time) until the store holds `decisions`,
    /// half on each of two file versions; then closes the SDK (everything committed).
    static func make(into box: Box<ProvenanceStore>) async throws -> ProvenanceStore {
        let store = ProvenanceStore(directory: try TemporaryDirectory())
        let server = LocalFlagshipServer(envId: "bench_env", apiKey: "bench_key")
        try server.setBucketingFile(try bucketingFile(shift: 0), lastModified: Date(timeIntervalSince1970: 1_000))
        try server.start()
        defer { server.stop() }
        let flagship = Flagship()
        flagship.start(envId: "bench_env", apiKey: "bench_key", config: FSConfigBuilder()
            .Bucketing().withBucketingBaseURL(server.bucketingBaseURL).withBucketingPollingIntervals(3600)
            .withDecisionBaseURL(server.decisionBaseURL).withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(store.file).withLogLevel(.NONE).build())
        var made = 0
        var next = 0
        for half in 0..<2 {
            if half == 1 {
                try server.setBucketingFile(try bucketingFile(shift: 20), lastModified: Date(timeIntervalSince1970: 2_000))
                await flagship.pollBucketingFileNow()
            }
            while made < decisions * (half + 1) / 2 {
                let first = next
                next += 64
                made += await withTaskGroup(of: Int.self) { group in
                    for index in first..<(first + 64) {
                        group.addTask {
                            let visitor = await flagship.newVisitor(visitorId: "visitor-\(index)", hasConsented: true,
                                                                    instanceType: .NEW_INSTANCE)
                                .withContext(context: context(index)).buildAsync()
                            try? await visitor.fetchFlags()
                            return visitor.getFlags().count
                        }
                    }
                    return await group.reduce(0, +)
                }
            }
        }
        await flagship.close()
        if let keep = ProcessInfo.processInfo.environment["FLAGSHIP_BENCH_KEEP_STORE"] {
            try? FileManager.default.removeItem(atPath: keep)
            try FileManager.default.copyItem(at: store.file, to: URL(fileURLWithPath: keep))
        }
        box.value = store
        return store
    }
}
