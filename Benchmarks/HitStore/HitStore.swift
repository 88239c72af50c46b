import BenchSupport
import Benchmark
import Flagship
import Foundation

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

    storeOpeningBenchmarks()

    rawBaseline("raw CSQLite 100k rows, one transaction", rows: hitCount, journal: .writeAheadLog) { table, rows in
        try table.insertInOneTransaction(rows)
    }

    // The pattern of caches that write each hit on its own: one autocommit INSERT per hit, in a
    // rollback journal synced in full. Every row pays a journal file's creation, two syncs and its
    // deletion, so fewer rows keep the run short; rows/s compares with the rest.
    rawBaseline(
        "raw CSQLite 2k rows, one autocommit each, journal DELETE, synchronous FULL", rows: 2_000, journal: .rollbackSyncedInFull
    ) { table, rows in
        try table.insertEachInItsOwnTransaction(rows)
    }
}

/// `count` rows written by `insert` into a new raw table, the insert alone measured.
private func rawBaseline(
    _ name: String, rows count: Int, journal: RawHitTable.Journal,
    insert: @escaping (RawHitTable, [RawHitTable.Row]) throws -> Void
) {
    Benchmark(name) { benchmark, rows in
        do {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let path = directory.url.appendingPathComponent("raw.sqlite").path
            try withExtendedLifetime(try RawHitTable(path: path, journal: journal)) { table in
                let elapsed = try measure(benchmark) { try insert(table, rows) }
                try expectRows(count, in: URL(fileURLWithPath: path), benchmark)
                benchmark.measurement(rowsPerSecond, rate(count, elapsed))
            }
        } catch {
            benchmark.error("\(error)")
        }
    } setup: {
        try HitFixture.make(count: count).map { try $0.row() }
    }
}

/// `cacheHits(hits:)` logs its failures rather than throwing: a short table means a failed run.
private func expectRows(_ expected: Int, in database: URL, _ benchmark: Benchmark) throws {
    let found = try RawHitTable.count(inDatabaseAt: database.path)
    if found != expected {
        benchmark.error("expected \(expected) rows in \(database.lastPathComponent), found \(found)")
    }
}
