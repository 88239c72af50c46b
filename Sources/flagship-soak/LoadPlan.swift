import Foundation

/// An open-loop run: visitors due on a schedule at `rate` for `duration`, whatever the ones
/// before them are doing, as a site's traffic arrives.
struct LoadPlan: Sendable {
    /// Visitors per second offered.
    var rate: Double
    var duration: Duration
    var sampleInterval: Duration
    /// Share of the visitors that are new (the others return: an id served earlier).
    var newVisitorShare = 0.8
    /// Visitors in flight at most; one due beyond it is not started (and counted).
    var maxInFlight = 256
    /// How many recent new visitors a returning one is picked from.
    var returningPool = 4_096
    /// How long the visitors in flight at the end may take to finish before they are cancelled.
    var drainGrace: Duration = .seconds(30)
    /// Seeds the new/returning draw and the returning visitor picked, so that runs compare.
    var seed: UInt64 = 31
    /// The SDK's visitor retention (seconds); `nil`: the SDK's default (30 days).
    var retention: TimeInterval?
    /// The SDK's budget of visitors (`withVisitorRetention(_:maxVisitors:)`); `nil`: none.
    var maxVisitors: Int?
    /// A store file the run starts from (copied: the file itself is left alone), e.g. one of
    /// a million visitors, so that the SDK's prunes and evictions run under the load; `nil`: an
    /// empty store.
    var seedStore: URL?
    /// Whether the SDK records each decision's provenance (its default: yes).
    var provenance = true
    /// Whether each sample ends with `malloc_trim(0)` (`HeapUsage.trim()`): a diagnostic.
    var trimMalloc = false

    func validated() throws(SoakError) -> LoadPlan {
        guard rate > 0, rate.isFinite else { throw .invalidOption("the rate must be a positive number of visitors per second") }
        guard duration > .zero else { throw .invalidOption("the duration must be positive") }
        guard sampleInterval > .zero else { throw .invalidOption("the sample interval must be positive") }
        guard (0...1).contains(newVisitorShare) else { throw .invalidOption("the share of new visitors must be within 0...1") }
        guard maxInFlight > 0 else { throw .invalidOption("the in-flight cap must be at least 1") }
        if let retention, !(retention > 0 && retention.isFinite) {
            throw .invalidOption("the retention must be a positive number of seconds")
        }
        if let maxVisitors, maxVisitors < 1 { throw .invalidOption("the budget of visitors must be at least 1") }
        if let seedStore {
            guard FileManager.default.isReadableFile(atPath: seedStore.path) else {
                throw .invalidOption("the store to start from, \(seedStore.path), cannot be read")
            }
            // Its WAL would be left behind by the copy, and with it every commit since the last
            // checkpoint.
            guard !FileManager.default.fileExists(atPath: seedStore.path + "-wal") else {
                throw .invalidOption("the store to start from has a WAL beside it (\(seedStore.path)-wal): close what uses it first (its last connection checkpoints the WAL into the file and removes it)")
            }
        }
        return self
    }
}
