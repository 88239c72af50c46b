import Benchmark
import Flagship
import Foundation

/// Rows per second of one iteration. Built-in `throughput` counts iterations per second as an
/// integer, which rounds to 0 or 1 for iterations of a second or more.
let rowsPerSecond = BenchmarkMetric.custom("rows/s", polarity: .prefersLarger, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    let hitCount = 100_000

    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, rowsPerSecond, .mallocCountTotal],
        timeUnits: .milliseconds,
        units: [rowsPerSecond: .count],
        warmupIterations: 0,
        // Every iteration writes 100,000 rows into a new database: seconds each, so few of them.
        maxDuration: .seconds(120),
        maxIterations: 3
    )

    for hitsPerTransaction in [1, 10, 100] {
        Benchmark("cacheHits 100k, \(hitsPerTransaction) per transaction") { benchmark, batches in
            do {
                let directory = try TemporaryDirectory()
                defer { directory.remove() }
                let cache = try FSDefaultCacheHit(envId: "bench", cacheDirectory: directory.url, maxHits: hitCount)
                // Closing the database (a WAL checkpoint) when the cache goes is not part of the measure.
                try withExtendedLifetime(cache) {
                    let elapsed = measure(benchmark) {
                        for batch in batches {
                            cache.cacheHits(hits: batch)
                        }
                    }
                    try expectRows(hitCount, in: directory.url.appendingPathComponent("flagship-bench.sqlite"), benchmark)
                    benchmark.measurement(rowsPerSecond, rate(hitCount, elapsed))
                }
            } catch {
                benchmark.error("\(error)")
            }
        } setup: {
            HitFixture.make(count: hitCount).batches(of: hitsPerTransaction)
        }
    }

    Benchmark("raw CSQLite 100k rows, one transaction") { benchmark, rows in
        do {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let path = directory.url.appendingPathComponent("raw.sqlite").path
            try withExtendedLifetime(try RawHitTable(path: path)) { table in
                let elapsed = try measure(benchmark) { try table.insertInOneTransaction(rows) }
                try expectRows(hitCount, in: URL(fileURLWithPath: path), benchmark)
                benchmark.measurement(rowsPerSecond, rate(hitCount, elapsed))
            }
        } catch {
            benchmark.error("\(error)")
        }
    } setup: {
        try HitFixture.make(count: hitCount).map { try $0.row() }
    }
}

/// Runs `body` as the measured part of the iteration; returns how long it took.
private func measure(_ benchmark: Benchmark, _ body: () throws -> Void) rethrows -> Duration {
    benchmark.startMeasurement()
    defer { benchmark.stopMeasurement() }
    return try ContinuousClock().measure(body)
}

/// `cacheHits(hits:)` logs its failures rather than throwing: a short table means a failed run.
private func expectRows(_ expected: Int, in database: URL, _ benchmark: Benchmark) throws {
    let found = try RawHitTable(path: database.path).count()
    if found != expected {
        benchmark.error("expected \(expected) rows in \(database.lastPathComponent), found \(found)")
    }
}

private func rate(_ rows: Int, _ elapsed: Duration) -> Int {
    Int((Double(rows) / (elapsed / .seconds(1))).rounded())
}
