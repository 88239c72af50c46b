import FlagshipStore
import Foundation
import Logging

/// What a page's results do to the sender: its logs and counts, the backoff gate, and the
/// instrumentation's view of the page.
extension HitSender {
    /// A page's outcomes, by hit, and the page as a batch (failed if any of its requests must be
    /// retried, rejected if all that did not succeed were refused).
    func report(_ results: [SendResult], endpoint: HitEndpoint, hits: Int, duration: Duration,
                        to instrumentation: any FlagshipInstrumentation) {
        let kind: FSHitKind = endpoint == .activate ? .activate : .hit
        var delivered = 0
        var rejected = 0
        var retried = 0
        for result in results {
            switch result.outcome {
            case .delivered: delivered += result.hitIds.count
            case .rejected: rejected += result.hitIds.count
            case .retryLater: retried += result.hitIds.count
            }
        }
        if delivered > 0 { instrumentation.hits(.delivered, kind: kind, count: delivered) }
        if rejected > 0 { instrumentation.hits(.rejected, kind: kind, count: rejected) }
        if retried > 0 { instrumentation.hits(.retried, kind: kind, count: retried) }
        instrumentation.batchEnded(endpoint == .activate ? .activate : .events, outcome: Self.outcome(of: results), hits: hits,
                                   duration: duration)
    }

    /// A page's outcome: failed if any of its requests must be retried, rejected if all that did
    /// not succeed were refused and none succeeded, else delivered.
    static func outcome(of results: [SendResult]) -> FSBatchOutcome {
        var delivered = false
        var rejected = false
        for result in results {
            switch result.outcome {
            case .retryLater: return .failed
            case .rejected: rejected = true
            case .delivered: delivered = true
            }
        }
        return rejected && !delivered ? .rejected : .delivered
    }

    /// Logs and counts the outcomes, and moves the backoff: closed after a retryable failure,
    /// reset by a success. Returns whether a send failed.
    func record(_ results: [SendResult], of batch: [OutgoingHit]) -> Bool {
        let types = Dictionary(batch.map { ($0.id, $0.type) }, uniquingKeysWith: { first, _ in first })
        var delivered = 0
        var failure: (reason: String, count: Int, retryAfter: TimeInterval?)?
        for result in results {
            switch result.outcome {
            case .delivered:
                delivered += result.hitIds.count
            case .rejected(let status):
                let kinds = Set(result.hitIds.compactMap { types[$0] }).sorted().joined(separator: ", ")
                logger.error("\(result.hitIds.count) \(kinds) hit(s) refused with status \(status)\(result.rejectionReason.map { " (\($0))" } ?? ""): dropped")
            case .retryLater(let reason):
                let retryAfter = max(failure?.retryAfter ?? 0, result.retryAfter ?? 0)
                failure = (reason, (failure?.count ?? 0) + result.hitIds.count, retryAfter > 0 ? retryAfter : nil)
            }
        }
        let rejected = results.reduce(0) { $0 + ($1.outcome.isRejection ? $1.hitIds.count : 0) }
        let now = clock.now()
        let uptime = clock.uptime()
        let unit = settings.jitter()
        let retry = state.withLock { state -> (delay: TimeInterval, attempt: Int)? in
            state.counts.delivered += delivered
            state.counts.rejected += rejected
            guard let failure else {
                if delivered > 0 {
                    state.backoff.reset()
                    state.retryAt = nil
                    state.retryAtUptime = nil
                }
                return nil
            }
            state.counts.failedRequests += 1
            let delay = state.backoff.nextDelay(retryAfter: failure.retryAfter, unit: unit)
            state.retryAt = now.addingTimeInterval(delay)
            state.retryAtUptime = uptime + delay
            return (delay, state.backoff.failures)
        }
        if delivered > 0 {
            logger.debug("\(delivered) hit(s) delivered in \(results.count) request(s)")
        }
        guard let failure, let retry else {
            if delivered > 0 {
                outage.succeeded { failures, seconds in
                    "Hits are delivered again, after \(failures) failed attempt(s) over \(seconds) s"
                }
            }
            return false
        }
        let next = "next try in \(retry.delay.millisecondsText) (failure \(retry.attempt) in a row)"
        outage.failed(
            started: { _ in "Hits cannot be delivered (\(failure.reason)): \(failure.count) kept in the cache and retried with backoff, \(next); said again once they are delivered" },
            retrying: { _ in "\(failure.count) hit(s) not sent (\(failure.reason)): kept, \(next)" })
        wake.yield(uptime + retry.delay)
        return true
    }
}
