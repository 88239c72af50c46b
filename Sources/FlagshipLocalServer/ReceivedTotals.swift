/// Running counts of what the server received: kept whatever `Configuration.recordLimit` lets
/// `received` hold, so that a long run can read how much arrived without keeping every request.
public struct ReceivedTotals: Sendable, Equatable {
    /// Requests on every route, whatever their outcome.
    public var requests = 0
    /// The hits (`h` items) of the event batches accepted: what `LocalFlagshipServer.hits` lists.
    public var hits = 0
    /// The entries (`batch` items) of the activate requests accepted: what
    /// `LocalFlagshipServer.activates` lists.
    public var activates = 0

    /// Totals starting from these counts (zero by default), for a test to compare with.
    public init(requests: Int = 0, hits: Int = 0, activates: Int = 0) {
        self.requests = requests
        self.hits = hits
        self.activates = activates
    }

    mutating func count(_ record: RecordedRequest) {
        requests += 1
        hits += record.acceptedHits.count
        activates += record.acceptedActivates.count
    }
}
