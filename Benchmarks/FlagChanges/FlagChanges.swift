import BenchSupport
import Benchmark
import Flagship
import FlagshipLocalServer
import Foundation

/// Issue 22: the time from a changed bucketing file on the server to the SDK's change event,
/// with a polling interval of 200 ms: goal, one interval + 50 ms at most. Each iteration serves a
/// new file (a campaign's allocation moved) and waits for `bucketingFileChanges()` to tell it.
let benchmarks: @Sendable () -> Void = {
    let interval: TimeInterval = 0.2
    let overInterval = BenchmarkMetric.custom("ms past one polling interval (max)", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark("change event: new bucketing file on the server to bucketingFileChanges(), polling every 200 ms",
              configuration: .init(metrics: [.wallClock, overInterval], timeUnits: .milliseconds, units: [overInterval: .count],
                                   warmupIterations: 1, maxDuration: .seconds(60), maxIterations: 20)) { benchmark in
        do {
            let server = LocalFlagshipServer(envId: "bench_env", apiKey: "bench_key")
            try server.setBucketingFile(ChangeFixture.file(share: 0), lastModified: Date(timeIntervalSince1970: 1_700_000_000))
            try server.start()
            defer { server.stop() }
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let flagship = Flagship.sharedInstance
            flagship.start(envId: "bench_env", apiKey: "bench_key", config: FSConfigBuilder().Bucketing()
                .withBucketingBaseURL(server.bucketingBaseURL).withBucketingPollingIntervals(interval)
                .withDecisionBaseURL(server.decisionBaseURL).withEventsBaseURL(server.eventsBaseURL)
                .withCacheDirectory(directory.url).withLogLevel(.NONE).build())
            // The first file in use before the clock starts.
            try? await flagship.newVisitor(visitorId: "warm", hasConsented: false).buildAsync().fetchFlags()
            var changes = flagship.bucketingFileChanges().makeAsyncIterator()
            let started = ContinuousClock.now
            benchmark.startMeasurement()
            try server.setBucketingFile(ChangeFixture.file(share: 50), lastModified: Date(timeIntervalSince1970: 1_700_000_100))
            _ = await changes.next()
            benchmark.stopMeasurement()
            let took = ContinuousClock.now - started
            benchmark.measurement(overInterval, max(0, Int(((took / .seconds(1)) - interval) * 1000)))
            await flagship.close()
        } catch {
            benchmark.error("\(error)")
        }
    }
}

enum ChangeFixture {
    /// One A/B test for everyone: `share` % of visitors to green.
    static func file(share: Int) -> Data {
        let file: [String: Any] = ["panic": false, "campaigns": [[
            "id": "c_checkout", "type": "ab",
            "variationGroups": [[
                "id": "vg_all",
                "targeting": ["targetingGroups": [["targetings": [["key": "fs_all_users", "operator": "EQUALS", "value": ""]]]]],
                "variations": [
                    ["id": "v_blue", "allocation": 100 - share, "reference": true, "modifications": ["type": "FLAG", "value": ["btnColor": "blue"]]],
                    ["id": "v_green", "allocation": share, "modifications": ["type": "FLAG", "value": ["btnColor": "green"]]],
                ],
            ]],
        ]]]
        // A literal of plain values always serializes.
        return try! JSONSerialization.data(withJSONObject: file, options: [.sortedKeys])
    }
}
