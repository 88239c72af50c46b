import FlagshipStore
import Foundation
import Logging

/// Says when a connection to Flagship starts failing and when it works again, one warning each,
/// whatever happens between: a server offline for an hour retries hundreds of times, and its
/// operator reads two lines, not hundreds (each retry is a debug line).
///
/// ```
/// warning: Hits cannot be delivered (HTTP status 503): kept in the cache and retried with backoff, next try in 1000 ms
/// warning: Hits are delivered again, after 12 failed attempt(s) over 341 s
/// ```
package final class OutageLog: Sendable {
    private struct Outage {
        var failures: Int
        let since: Date
        /// The causes told as warnings during this outage (`failed(cause:)`).
        var causesTold: Set<String> = []
    }

    /// How many causes one outage tells as warnings: a flood of distinct causes stays bounded.
    package static let causesToldPerOutage = 8

    private let logger: Logger
    private let now: @Sendable () -> Date
    private let outage = Locked<Outage?>(nil)

    package init(logger: Logger, now: @escaping @Sendable () -> Date) {
        self.logger = logger
        self.now = now
    }

    /// Records a failure: `started` is logged as a warning when it begins an outage, `retrying`
    /// at debug level while one goes on. Each gets the failures in a row, this one included.
    ///
    /// `cause` (a short key: `"httpStatus 401"`, `"timedOut"`): a failure of a cause not yet told
    /// in this outage is a warning too (`started` again), so a wrong key that follows a timeout is
    /// not hidden by it; at most `causesToldPerOutage` causes per outage.
    package func failed(cause: String? = nil, started: (Int) -> Logger.Message, retrying: (Int) -> Logger.Message,
                        metadata: @autoclosure () -> Logger.Metadata? = nil) {
        let now = now()
        let (failures, newCause) = outage.withLock { outage -> (Int, Bool) in
            if outage == nil { outage = Outage(failures: 0, since: now) }
            outage!.failures += 1
            guard let cause, outage!.causesTold.count < Self.causesToldPerOutage else { return (outage!.failures, false) }
            return (outage!.failures, outage!.causesTold.insert(cause).inserted)
        }
        if failures == 1 || newCause {
            logger.warning(started(failures), metadata: metadata())
        } else {
            logger.debug(retrying(failures), metadata: metadata())
        }
    }

    /// Records a success: ends an outage, if one was under way, with a warning saying how long
    /// it lasted (`ended` receives the failures in a row and the seconds since the first).
    package func succeeded(ended: (_ failures: Int, _ seconds: Int) -> Logger.Message) {
        guard let ending = outage.withLock({ outage -> Outage? in
            defer { outage = nil }
            return outage
        }) else { return }
        let seconds = Int(max(0, now().timeIntervalSince(ending.since)).rounded())
        logger.warning(ended(ending.failures, seconds))
    }
}
