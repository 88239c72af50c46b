/// Whether the SDK keeps up, for a readiness probe: read it as often as you like (no I/O).
///
/// ```swift
/// let health = Flagship.sharedInstance.health
/// // serve 200 when health.isReady, else 503 with health.description
/// ```
public struct FSHealth: Sendable, Equatable, CustomStringConvertible {
    /// The state of hit delivery, the raw value being what `description` prints.
    public enum Status: String, Sendable, Equatable {
        /// Started, and delivering hits as fast as they come.
        case ready
        /// Hits arrive faster than they are delivered while the events endpoint answers:
        /// `try await sendHit` waits for room (then throws `FlagshipError.overloaded`), hits
        /// nobody awaits are shed. A load balancer should send this instance less traffic.
        case overloaded
        /// The events endpoint cannot be reached: hits wait in the cache (up to its cap) and are
        /// retried with backoff. The instance still serves flags.
        case deliveryFailing = "delivery_failing"
        /// Not started, or closed.
        case stopped
    }

    /// How the SDK keeps up, as last measured.
    public let status: Status
    /// Hits waiting to be delivered (in the cache and for its next commit), when last counted.
    public let backlog: Int
    /// Where backpressure starts (half the hit cache's cap).
    public let backlogLimit: Int
    /// Hits nobody awaited that were shed since start.
    public let shed: Int

    /// Whether to take traffic: everything but `overloaded` and `stopped`. An instance whose
    /// deliveries fail still serves flags; its hits wait in the cache.
    public var isReady: Bool {
        status == .ready || status == .deliveryFailing
    }

    /// One line for a log or a probe's body: the status, the backlog and its limit, the hits shed.
    public var description: String {
        "\(status.rawValue): \(backlog) hit(s) waiting (backpressure from \(backlogLimit)), \(shed) shed since start"
    }

    package init(status: Status, backlog: Int, backlogLimit: Int, shed: Int) {
        self.status = status
        self.backlog = backlog
        self.backlogLimit = backlogLimit
        self.shed = shed
    }
}
