import Foundation

/// What became of one request's hits.
struct SendResult: Sendable, Equatable {
    enum Outcome: Sendable, Equatable {
        /// A 2xx answer: the hits can leave the cache.
        case delivered
        /// 408, 429, 5xx, or no answer at all: keep the hits and try again later.
        case retryLater(reason: String)
        /// Any other 4xx, or a hit too large to ever be accepted (``EventsClient/hitTooLargeStatus``):
        /// it can never succeed; drop it.
        case rejected(status: Int)
    }

    let hitIds: [String]
    let outcome: Outcome
    /// For a rejection, why, as a phrase for the log: the server's status, or the local refusal.
    let rejectionReason: String?
    /// For a retry, the seconds the server asked to wait (`Retry-After`), when it said.
    let retryAfter: TimeInterval?

    init(hitIds: [String], outcome: Outcome, rejectionReason: String? = nil, retryAfter: TimeInterval? = nil) {
        self.hitIds = hitIds
        self.outcome = outcome
        self.rejectionReason = rejectionReason
        self.retryAfter = retryAfter
    }
}
