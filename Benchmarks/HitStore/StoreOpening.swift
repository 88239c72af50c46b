import BenchSupport
import Benchmark
import Flagship
import Foundation

/// Opening the default store of about 30 MB (100,000 cached hits), as every start does: after a
/// clean close (no full check), after a session that did not close (`PRAGMA quick_check` over
/// every page), beside the floor measured in the same run (open the file, read its schema, close).
func storeOpeningBenchmarks() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock], timeUnits: .microseconds, warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 30
    )
    opening("baseline, sqlite3_open + schema read", configuration) { benchmark, file in
        for _ in benchmark.scaledIterations {
            try RawHitTable.openAndReadSchema(path: file.path)
        }
    }

    opening("last session closed cleanly", configuration) { benchmark, file in
        for _ in benchmark.scaledIterations {
            blackHole(try file.open())
        }
    }

    opening("last session did not close (full check)", configuration) { benchmark, file in
        // The marker a killed process leaves: a session of a process that no longer exists.
        try file.leaveSessionOfDeadProcess()
        _ = try measure(benchmark) { blackHole(try file.open()) }
    }
}

/// A benchmark "open a 30 MB store: `name`" over a store of 100,000 hits made in its setup.
private func opening(
    _ name: String, _ configuration: Benchmark.Configuration, _ body: @escaping (Benchmark, StoreFile) throws -> Void
) {
    let store = Box<StoreFile>()
    Benchmark("open a 30 MB store: \(name)", configuration: configuration) { benchmark in
        guard let file = store.value else { return benchmark.error("no store") }
        do {
            try body(benchmark, file)
        } catch {
            benchmark.error("\(error)")
        }
    } setup: {
        store.value = try StoreFile(hits: 100_000)
    } teardown: {
        store.value?.directory.remove()
    }
}

/// A default store holding `hits` cached hits, written through the public hit cache.
final class StoreFile {
    let directory: TemporaryDirectory

    var path: String { directory.url.appendingPathComponent("flagship-bench.sqlite").path }

    init(hits: Int) throws {
        directory = try TemporaryDirectory()
        let cache = try FSDefaultCacheHit(envId: "bench", cacheDirectory: directory.url, maxHits: hits)
        for batch in HitFixture.make(count: hits).batches(of: 1_000) {
            cache.cacheHits(hits: batch)
        }
    }

    /// Opens and drops the default store, as a start and a clean stop do.
    func open() throws -> Int {
        let cache = try FSDefaultCacheVisitor(envId: "bench", cacheDirectory: directory.url)
        return withExtendedLifetime(cache) { 1 }
    }

    func leaveSessionOfDeadProcess() throws {
        // pid_max is at most 2^22 on Linux: no process has this id.
        try RawHitTable.execute(
            "INSERT OR REPLACE INTO sdk_state (key, value, updated_at) VALUES ('store.session.99999999.dead', '0', 0)",
            inDatabaseAt: path)
    }
}
