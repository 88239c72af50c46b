import FlagshipStore
import Foundation
import Logging

/// A fleet's store that keeps the visitors in place of the default visitor cache, and prunes
/// them itself (FlagshipPostgres), one instance of the fleet at a time.
package protocol SharedVisitorRetention: Sendable {
    /// Deletes the environment's visitors not seen since `boundary` (unix ms), then the least
    /// recently seen beyond `maxVisitors`, with their decisions, in batches; `shouldContinue` is
    /// asked between them. `nil`: another instance is pruning the environment now. `now` is
    /// the SDK's time `boundary` was reckoned from: a store that keeps its own clock moves the
    /// boundary into it (the visitors not seen for as long).
    func pruneVisitors(envId: String, notSeenSince boundary: Int64?, keepingAtMost maxVisitors: Int?, now: Int64,
                       shouldContinue: @escaping @Sendable () -> Bool) async throws -> VisitorPrune?
}

/// A fleet's store that can say what it holds for one visitor (`Flagship.visitorData`).
package protocol SharedVisitorData: Sendable {
    func visitorData(envId: String, visitorId: String) async throws -> VisitorDataRecords
}

/// Keeps the visitors the SDK stores bounded (the default visitor cache's table, or a fleet's
/// store): visitors not seen for the retention period are deleted with their decisions, and
/// with a budget the least recently seen beyond it, by a background task this SDK instance owns
/// (started with it, ended by `close`).
///
/// The task wakes every `sightingsInterval` to write the lookups noted since (`VisitorSightings`:
/// a returning visitor read from the cache counts as seen), and every `pruneInterval` to prune.
/// SQLite work runs on the store's own queue (`FlagshipDatabase.queued`), never on Swift's
/// cooperative pool; a prune deletes in batches of `FlagshipDatabase.pruneBatchSize` visitors, one
/// write transaction each, and awaits its rests between them, so a group commit never waits for
/// more than one batch, the sender's claims run between two, and no thread waits through a prune.
final class VisitorRetention: Sendable {
    /// What is kept: visitors seen within `retention`, `maxVisitors` at most.
    struct Policy: Sendable, Equatable {
        /// Seconds; `nil`: visitors are kept whatever their age.
        var retention: TimeInterval?
        /// `nil`: no budget.
        var maxVisitors: Int?
        /// Seconds between two prunes.
        var pruneInterval: TimeInterval = 3_600
        /// Seconds between two writes of the lookups noted since (a lookup lost to a crash
        /// meanwhile makes the visitor look that much older, nothing more).
        var sightingsInterval: TimeInterval = 60
    }

    /// What the prunes of this instance deleted, in all.
    struct Counts: Sendable, Equatable {
        var prunes = 0
        var expired = 0
        var evicted = 0
        var decisionRows = 0
        var pagesReturned = 0
    }

    private struct State {
        var closed = false
        var counts = Counts()
    }

    /// Where the visitors are.
    enum Visitors: Sendable {
        /// The default visitor cache's table, in this instance's store.
        case local(FlagshipDatabase)
        /// A fleet's store, which prunes and records lookups itself.
        case shared(any SharedVisitorRetention, envId: String)
    }

    let policy: Policy
    private let visitors: Visitors
    private let clock: any SDKClock
    /// The time visitors are aged by: a step of the system clock forward does not age them.
    private let agingTime: StepSafeTime
    private let logger: Logger
    private let state = Locked(State())
    /// Finished by `close()`: `run()` stops waiting (a prune under way stops after its batch).
    private let stop: AsyncStream<Void>
    private let stopContinuation: AsyncStream<Void>.Continuation

    init(_ visitors: Visitors, policy: Policy, clock: any SDKClock, logger: Logger) {
        self.visitors = visitors
        self.policy = policy
        self.clock = clock
        agingTime = StepSafeTime(clock: clock)
        self.logger = logger
        (stop, stopContinuation) = AsyncStream.makeStream(of: Void.self)
        if case .local(let store) = visitors, let retention = policy.retention {
            // Last-seen times exact to a tenth of the retention when it is shorter than ten hours.
            store.sightings.resolutionMilliseconds = min(VisitorSightings.defaultResolutionMilliseconds,
                                                         Int64(retention * 100))
        }
    }

    var counts: Counts {
        state.withLock { $0.counts }
    }

    /// Writes sightings every `sightingsInterval`, prunes one `sightingsInterval` after start
    /// (off the start itself), then every `pruneInterval`, until `close()`; a child of the SDK
    /// instance's background task (`SDKRuntime.run`).
    func run() async {
        await runUntil(stop) { [self] in
            // On the monotonic clock: a step of the wall clock back does not hold prunes off.
            var nextPrune = clock.uptime() + policy.sightingsInterval
            while !Task.isCancelled {
                do {
                    let wait = min(nextPrune - clock.uptime(), policy.sightingsInterval)
                    try await clock.sleep(until: clock.now().addingTimeInterval(wait))
                } catch {
                    break
                }
                if clock.uptime() >= nextPrune {
                    await prune()
                    nextPrune = clock.uptime() + policy.pruneInterval
                } else {
                    await recordSightings()
                }
            }
        }
    }

    /// One prune now (the task's, and tests'). `nil` when it failed (logged), or when another
    /// instance of the fleet is pruning the shared store.
    @discardableResult
    func prune() async -> VisitorPrune? {
        let now = agingTime.now(clock)
        let boundary = policy.retention.map { now.addingTimeInterval(-$0).unixMilliseconds }
        let started = ContinuousClock.now
        let shouldContinue: @Sendable () -> Bool = { [state] in !state.withLock { $0.closed } }
        let outcome: Result<VisitorPrune?, any Error>
        switch visitors {
        case .local(let store):
            do {
                outcome = .success(try await store.pruneVisitors(notSeenSince: boundary, keepingAtMost: policy.maxVisitors,
                                                                returning: .beyondKeptShare, shouldContinue: shouldContinue))
            } catch {
                outcome = .failure(error)
            }
        case .shared(let shared, let envId):
            do {
                outcome = .success(try await shared.pruneVisitors(envId: envId, notSeenSince: boundary, keepingAtMost: policy.maxVisitors,
                                                                  now: now.unixMilliseconds, shouldContinue: shouldContinue))
            } catch {
                outcome = .failure(error)
            }
        }
        let prune: VisitorPrune
        switch outcome {
        case .success(let done?):
            prune = done
        case .success(nil):
            logger.debug("Visitors not pruned this time: another instance of the fleet is pruning them")
            return nil
        case .failure(let error):
            logger.error("Visitors not seen for the retention period could not be pruned: \(error); tried again in \(Int(policy.pruneInterval)) s")
            return nil
        }
        state.withLock { state in
            state.counts.prunes += 1
            state.counts.expired += prune.expired
            state.counts.evicted += prune.evicted
            state.counts.decisionRows += prune.decisionRows
            state.counts.pagesReturned += prune.pagesReturned
        }
        if prune.visitors > 0 {
            let milliseconds = Int((ContinuousClock.now - started).inMilliseconds)
            let hold = prune.longestHold > .zero ? "; the longest held the write lock \(prune.longestHoldText)" : ""
            let readAhead = prune.pagesToReadAhead > 0 ? "; \(prune.pagesReadAhead) of \(prune.pagesToReadAhead) index page(s) read ahead" : ""
            logger.info("Visitor cache pruned in \(prune.transactions) transaction(s), \(milliseconds) ms: \(Self.describe(prune, policy: policy))\(hold)\(prune.restsForAReaderText)\(readAhead)")
        }
        if prune.sharedPartsDeleted > 0 {
            logger.info("Shared variations and contexts no visitor refers to any more deleted: \(prune.sharedPartsDeleted)")
        }
        return prune
    }

    /// `12 visitor(s) not seen for 30 d and 3 beyond the budget of 10000, with 20 decision row(s); 41 page(s) given back`.
    static func describe(_ prune: VisitorPrune, policy: Policy) -> String {
        var parts: [String] = []
        if let retention = policy.retention, prune.expired > 0 {
            parts.append("\(prune.expired) visitor(s) not seen for \(Self.duration(retention))")
        }
        if let maxVisitors = policy.maxVisitors, prune.evicted > 0 {
            parts.append("\(prune.evicted) beyond the budget of \(maxVisitors)")
        }
        return parts.joined(separator: " and ") + ", with \(prune.decisionRows) decision row(s); \(prune.pagesReturned) page(s) given back"
    }

    /// `30 d`, `6 h`, `90 s`: the largest whole unit.
    static func duration(_ seconds: TimeInterval) -> String {
        let whole = Int(seconds)
        if whole >= 86_400, whole % 86_400 == 0 { return "\(whole / 86_400) d" }
        if whole >= 3_600, whole % 3_600 == 0 { return "\(whole / 3_600) h" }
        return "\(whole) s"
    }

    /// A fleet's store records lookups as it reads them: only the local table has sightings.
    private func recordSightings() async {
        guard case .local(let store) = visitors else { return }
        do {
            _ = try await store.queued { try $0.recordSightings() }
        } catch {
            // They wait in memory for the next write (`VisitorSightings.putBack`).
            logger.debug("Visitor lookups could not be recorded yet: \(error)")
        }
    }

    /// Stops the task (a prune under way stops after its batch) and writes the lookups noted
    /// since the last write, within `deadline`: `false` when it passed first. Safe to call twice.
    func close(until deadline: Date, clock: any SDKClock) async -> Bool {
        state.withLock { $0.closed = true }
        stopContinuation.finish()
        guard case .local(let store) = visitors else { return true }
        return await firstOf(deadline: deadline, clock: clock) { [logger] finish in
            store.setGoing { store in
                do {
                    try store.recordSightings()
                } catch {
                    logger.debug("Visitor lookups could not be recorded before closing: \(error)")
                }
                finish(true)
            }
        } ?? false
    }
}
