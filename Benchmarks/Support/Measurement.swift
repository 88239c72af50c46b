import Benchmark

/// Rows per second of one iteration. Built-in `throughput` counts iterations per second as an
/// integer, which rounds to 0 or 1 for iterations of a second or more.
public let rowsPerSecond = BenchmarkMetric.custom("rows/s", polarity: .prefersLarger, useScalingFactor: false)

/// Runs `body` as the measured part of the iteration; returns how long it took.
public func measure(_ benchmark: Benchmark, _ body: () throws -> Void) rethrows -> Duration {
    benchmark.startMeasurement()
    defer { benchmark.stopMeasurement() }
    return try ContinuousClock().measure(body)
}

/// As `measure(_:_:)`, for work that awaits.
public func measure(_ benchmark: Benchmark, _ body: () async throws -> Void) async rethrows -> Duration {
    benchmark.startMeasurement()
    defer { benchmark.stopMeasurement() }
    let start = ContinuousClock.now
    try await body()
    return ContinuousClock.now - start
}

public func rate(_ rows: Int, _ elapsed: Duration) -> Int {
    Int((Double(rows) / (elapsed / .seconds(1))).rounded())
}
