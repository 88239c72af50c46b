/// The run as it stood at `elapsed`: counts since the start, rates and latencies over the
/// interval since the previous sample. One CSV row, one point of each chart line.
struct Sample: Sendable, Equatable {
    /// Seconds since the first visitor was due.
    var elapsed: Double
    /// Visitors the schedule called for, and that finished their journey, since the start.
    var offered: Int
    var completed: Int
    /// The same per second, over the interval.
    var offeredRate: Double
    var achievedRate: Double
    var notStarted: Int
    var failedVisitors: Int
    var inFlight: Int
    /// Hits and activates in the SDK's ledger: delivered, waiting, or dropped (evicted, expired,
    /// rejected, lost). A hit still in the group commit's ingress is counted at the next sample.
    var accepted: Int
    var acceptedRate: Double
    /// Hits and activates the SDK counts as delivered.
    var deliveredBySDK: Int
    /// Hits and activates the server took (its running totals), and per second.
    var delivered: Int
    var deliveredRate: Double
    /// Hits waiting in the store (and in memory): the SDK's `waiting`.
    var backlog: Int
    var evicted: Int
    /// Hits nobody awaited that the SDK refused under backpressure, and awaited ones it refused
    /// after waiting for room (`FlagshipError.overloaded`: the visitor fails).
    var shed: Int
    var refusedOverloaded: Int
    var lost: Int
    var rejected: Int
    var failedRequests: Int
    /// The .sqlite file and its -wal, in bytes.
    var storeBytes: Int64
    /// `nil` when the store could not be read at that moment.
    var visitorRows: Int?
    /// The tool's resident memory (VmRSS) and its anonymous part (RssAnon: heap, stacks), in
    /// bytes; `nil` off Linux.
    var rssBytes: Int64?
    var rssAnonymousBytes: Int64?
    /// Where the heap goes (`HeapUsage`): SQLite's allocations, malloc's in use and free bytes.
    var heap: HeapUsage?
    /// What the process has written since it started (`ProcessIO`); `nil` off Linux.
    var io: ProcessIO?
    /// Of the visitors that finished in the interval; `nil` when none did.
    var fetchFlags: LatencyPercentiles?
    var sendHit: LatencyPercentiles?
}
