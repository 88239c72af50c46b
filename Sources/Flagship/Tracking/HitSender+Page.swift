import FlagshipStore
import Foundation
import Logging

/// One page of a round, in four steps kept apart: its claim from the store (which records the
/// page before), its assembly (the claimed rows, then hits committed to the sender's memory,
/// then hits still in the writer's memory), its send, and its settlement.
extension HitSender {
    enum PageOutcome {
        case empty, partial, full, failed
    }

    /// The outcome of a page sent, not yet recorded: the next page's claim records it just before
    /// it claims (or, with nothing to claim, beside the next page's send), or the round's end does.
    struct PendingSettlement {
        let settlement: HitSettlement
        let count: Int
        /// `onVisitorExposed` callbacks of the delivered activates: called once it is recorded.
        let exposed: [@Sendable () -> Void]
    }

    /// The hits of one page, by where they came from.
    struct Page {
        let endpoint: HitEndpoint
        /// Rows of the store claimed for this page.
        var claimed: [OutgoingHit] = []
        /// Hits committed claimed, handed over from the sender's memory (rows of the store too).
        var handed: [OutgoingHit] = []
        /// Hits borrowed from the writer's memory, not yet in the store.
        var fromMemory: [OutgoingHit] = []
        /// What is sent: all of the above but the hits of visitors whose erasure waits.
        var batch: [OutgoingHit] = []

        /// The hits of this page that are rows of the store, claimed by this instance.
        var cachedIds: Set<String> { Set(claimed.map(\.id)).union(handed.map(\.id)) }
    }

    func sendPage(_ endpoint: HitEndpoint, settling pending: inout PendingSettlement?) async -> PageOutcome {
        let stop = state.withLock { $0.closed && $0.finalDeadline == nil }
        guard !stop else { return .failed }
        // The page before is recorded just before this claim; with nothing to claim, beside this
        // page's send.
        let previous = pending
        pending = nil
        let claims = store.ownTable?.mayHaveClaimable(endpoint) ?? true
        let besideSend = !claims && committedHits != nil ? previous : nil
        let claimed = besideSend == nil ? await claim(endpoint, claims: claims, recording: previous) : []
        async let recording: Void = recordSettlement(besideSend)
        let page = assemble(endpoint, claimed: claimed)
        guard !page.batch.isEmpty else {
            await recording
            return .empty
        }
        let (results, sendTook) = await send(page)
        await recording
        // A send that outlived `close()` (its deadline passed, the transport was shut down): close
        // released the claims and counted what waits, so the outcome is left alone; a delivery
        // the server confirmed is still sent again by the next start (at least once).
        guard !state.withLock({ $0.abandoned }) else { return .failed }
        let failed = record(results, of: page.batch)
        if let instrumentation = settings.instrumentation {
            report(results, endpoint: endpoint, hits: page.batch.count, duration: sendTook, to: instrumentation)
        }
        pending = settle(page, results: results, failed: failed)
        // Periodic pool hits that failed are written now: the interval's write skipped them while
        // they were in flight, and they would otherwise wait unwritten for a second interval.
        if failed, !page.fromMemory.isEmpty, settings.strategy == .PERIODIC_CACHING {
            await writer.writePool()
        }
        if failed { return .failed }
        return page.batch.count >= settings.pageSize ? .full : .partial
    }

    // MARK: Claim

    /// Claims the oldest page of `endpoint`'s rows nobody holds (when `claims`: rows nobody holds
    /// may be there), recording `previous` just before.
    ///
    /// Rows nobody holds are older than the hits committed to this sender's memory: they go
    /// first. Once a claim comes back short, none is tried until a row is written or released
    /// unclaimed, or a claim may have lapsed.
    ///
    /// Activates are claimed in pages as large as hits' and sent 100 per request (the events
    /// client splits them): a page of 100 cost a visit to the store per 100 activates, too many
    /// visits to keep up with three activates per visitor when claims are needed.
    private func claim(_ endpoint: HitEndpoint, claims: Bool, recording previous: PendingSettlement?) async -> [OutgoingHit] {
        await recordSettlement(previous)
        guard claims else { return [] }
        do {
            let claimed = try await store.hits.claim(endpoint, limit: settings.pageSize, now: clock.now().unixMilliseconds)
            if state.withLock({ $0.cacheReadFailing.remove(endpoint) != nil }) {
                logger.info("Cached hits can be read for sending again")
            }
            return claimed
        } catch {
            // Hits waiting in memory still go: a disk that fails must not hold them back too.
            if state.withLock({ $0.cacheReadFailing.insert(endpoint).inserted }) {
                logger.error("Cached hits could not be read for sending (\(error)): only hits waiting in memory are sent until they can")
            }
            return []
        }
    }

    /// Records `pending` (when there is one) in the store, then runs its exposure callbacks.
    func recordSettlement(_ pending: PendingSettlement?) async {
        guard let pending else { return }
        var settleError: (any Error)?
        do { try await store.hits.settle(pending.settlement) } catch { settleError = error }
        recorded(pending, error: settleError)
        writer.reportBacklog()
    }

    /// A page's outcome is in the store (or could not be written): its exposure callbacks run.
    func recorded(_ pending: PendingSettlement, error: (any Error)?) {
        if let error {
            logger.error("The outcome of sending \(pending.count) hit(s) could not be recorded in the hit cache (\(error)): delivered ones may be sent again")
        }
        for callback in pending.exposed { callback() }
    }

    // MARK: Assembly

    /// The page: `claimed`, then committed hits (those whose claim would lapse during the send go
    /// back to the store's claims), then hits from the writer's memory; hits of visitors whose
    /// erasure waits are left out.
    private func assemble(_ endpoint: HitEndpoint, claimed: [OutgoingHit]) -> Page {
        let limit = settings.pageSize
        var page = Page(endpoint: endpoint, claimed: claimed)
        if let committedHits, let table = store.ownTable, claimed.count < limit {
            let holdsUntil = clock.now().unixMilliseconds + table.leaseMilliseconds / 2
            let taken = committedHits.take(endpoint, limit: limit - claimed.count, holdsUntil: holdsUntil)
            page.handed = taken.hits
            if taken.lapsed > 0 { table.claimsMayHaveLapsed() }
        }
        page.fromMemory = writer.borrow(endpoint, limit: limit - claimed.count - page.handed.count)
        page.batch = page.claimed + page.handed + page.fromMemory
        // A visitor whose erasure waits to be tried again (consent withdrawn while the file was
        // locked): its hits from before the withdrawal are not sent. Their rows stay claimed
        // until the erasure deletes them (or the claim lapses, and they are held again).
        let held = page.batch.filter { writer.erasurePending(for: $0) }
        if !held.isEmpty {
            let heldIds = Set(held.map(\.id))
            page.batch.removeAll { heldIds.contains($0.id) }
            writer.giveBack(page.fromMemory.filter { heldIds.contains($0.id) }, done: [])
            logger.debug("\(held.count) hit(s) of visitors whose erasure waits are not sent")
        }
        return page
    }

    // MARK: Send

    /// Sends the page's batch (traced as `flagship.batch`); returns each request's result and
    /// how long the send took.
    private func send(_ page: Page) async -> ([SendResult], Duration) {
        let (batch, endpoint) = (page.batch, page.endpoint)
        let sentAt = clock.now().unixMilliseconds
        let sendStarted = ContinuousClock.now
        let events = events
        let ages = ages
        let results = await traced(settings.tracer, "flagship.batch",
                                   attributes: ["flagship.endpoint": endpoint == .activate ? "activate" : "events",
                                                "flagship.hits": String(batch.count)]) { span in
            let queueTimes = ages?.queueTimes(of: batch) ?? [:]
            let results = endpoint == .activate
                ? await events.sendActivates(batch, now: sentAt, queueTimes: queueTimes)
                : await events.sendHits(batch, now: sentAt, queueTimes: queueTimes)
            span?.setAttribute("flagship.outcome", Self.outcome(of: results).rawValue)
            return results
        }
        return (results, ContinuousClock.now - sendStarted)
    }

    // MARK: Settlement

    /// What the page's results mean for the store, the memory and the callbacks: the settlement
    /// to record (with the next page's claim), the delivered activates' exposure callbacks, the
    /// hits borrowed from memory given back, and the committed hits released while sends fail.
    private func settle(_ page: Page, results: [SendResult], failed: Bool) -> PendingSettlement {
        var settlement = HitSettlement()
        settlement.nextAttemptAt = state.withLock { $0.retryAt?.unixMilliseconds }
        if failed {
            // Sends fail: the committed hits waiting here wait in the store instead, claimable
            // once the backoff ends; hits are committed unclaimed until sends succeed again.
            settlement.released = committedHits?.close().map(\.id) ?? []
            backpressure?.sendsFailing(true)
        } else {
            committedHits?.reopen()
            backpressure?.sendsFailing(false)
        }
        let (done, delivered) = Self.sort(results, cached: page.cachedIds, into: &settlement)
        ages?.forget(done)
        let exposed = callbacks.take(delivered)
        callbacks.forget(done.subtracting(delivered))
        // Hits back from a failed send count toward the memory limit again.
        writer.giveBack(page.fromMemory, done: done)
        return PendingSettlement(settlement: settlement, count: page.batch.count, exposed: exposed)
    }

    /// Sorts each hit of `results` into `settlement` (rows of the store only: `cached`); returns
    /// the hits done with (delivered or refused) and the delivered ones, in order.
    static func sort(_ results: [SendResult], cached: Set<String>,
                     into settlement: inout HitSettlement) -> (done: Set<String>, delivered: [String]) {
        var done = Set<String>()
        var delivered: [String] = []
        for result in results {
            for id in result.hitIds {
                switch result.outcome {
                case .delivered:
                    delivered.append(id)
                    done.insert(id)
                    if cached.contains(id) { settlement.delivered.append(id) }
                case .rejected:
                    done.insert(id)
                    if cached.contains(id) { settlement.rejected.append(id) }
                case .retryLater:
                    if cached.contains(id) { settlement.failed.append(id) }
                }
            }
        }
        return (done, delivered)
    }
}
