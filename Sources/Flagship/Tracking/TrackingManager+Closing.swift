import FlagshipStore
import Foundation
import Logging

/// Closing: the last writes and round, then what is left counted and said, within one deadline.
extension TrackingManager {
    func close() async {
        await close(until: clock.now().addingTimeInterval(settings.closeDeadline))
    }

    /// Stops the timers, writes what was accepted, sends one last round, releases the claims and
    /// counts what waits, all before `deadline` on the SDK's clock: past it, whatever still holds
    /// the store or the network (a server that never answers, a store another process keeps
    /// locked, a custom cache that never returns) is no longer waited for, and one log line says
    /// what was left. Ends `run`'s loops (the caller of `run` awaits their end). A second call
    /// returns once the first has ended; the close goes on to its end if its caller is cancelled.
    func close(until deadline: Date) async {
        let closing = lifecycle.withLock { state -> Task<Void, Never> in
            if let closing = state.closing { return closing }
            state.closed = true
            let closing = Task(executorPreference: ThreadExecutor.background) { [self, started = state.started] in
                await closeOnce(until: deadline, started: started)
            }
            state.closing = closing
            return closing
        }
        await closing.value
    }

    private func closeOnce(until deadline: Date, started: Bool) async {
        writer.close()
        // A sender waiting out the round spacing stops now: the last round below sends what waits.
        sender.close()
        timersStopContinuation.finish()
        let storeAnswered = await writeAndSendTheLast(until: deadline, started: started)
        let counted = storeAnswered ? await countWhatWaits(until: deadline) : nil
        account(counted: counted)
        endLifecycle()
        lifecycle.withLock { $0.closeFinished = true }
    }

    /// Writes every hit accepted before closing, then runs the sender's last round (which ends a
    /// little before `deadline`: the rest is left to record what is left). Returns whether the
    /// store answered: one that does not by the deadline holds everything after it, and nothing
    /// else is tried.
    private func writeAndSendTheLast(until deadline: Date, started: Bool) async -> Bool {
        let sendsUntil = deadline.addingTimeInterval(-min(1, settings.closeDeadline / 5))
        // The store's jobs run one at a time: what was accepted before is written first.
        let storeAnswered = await store.run(until: deadline, clock: clock) { [writer] in
            await writer.drainAll()
            return true
        } != nil
        // The last round looks in the table as an interval's round does: rows this instance did
        // not write (an app's own transaction, another process) are sent too.
        writer.claimsMayHaveLapsed()
        // The last round runs in the sender's loop, which `run` runs (started with `start()`).
        if storeAnswered, started, await sender.waitForIdle(until: sendsUntil) {
            if await !sender.finalRound(until: sendsUntil) {
                // Past the deadline: the send under way is cancelled with its request.
                runStopContinuation.yield(true)
            }
        }
        return storeAnswered
    }

    /// A job of the store, before `deadline`: the pool written, the claims released, and the
    /// hits that wait counted, as (waiting for the next start, lost with this process); `nil`
    /// when the store did not answer in time.
    private func countWhatWaits(until deadline: Date) async -> (waiting: Int, stranded: Int)? {
        await store.run(until: deadline, clock: clock) { [writer, logger, queue = store.hits] () -> (Int, Int) in
            await writer.writeBeforeClosing()
            do {
                try await queue.releaseClaims(nil)
            } catch {
                logger.error("Claims on cached hits could not be released (\(error)): they lapse by themselves")
            }
            let count = (try? await queue.count()) ?? 0
            // Rows of an in-memory cache, or of a file no longer at the store path, end with this
            // process: they are lost, never waiting.
            return queue.durability.waitingHitsSurvive ? (count, 0) : (0, count)
        }
    }

    /// Counts and says what `close()` leaves: waiting for the next start, or lost. `counted`
    /// `nil`: the store was still busy at the deadline, and hits not yet in the cache are not
    /// confirmed (they are written still if the store frees before the process ends).
    private func account(counted: (waiting: Int, stranded: Int)?) {
        let storeAnswered = counted != nil
        let unwritten = writer.unwritten()
        let unconfirmed = storeAnswered ? 0 : unwritten.uncommitted
        let waiting = counted?.waiting ?? 0
        let stranded = counted?.stranded ?? 0
        let lostNow = unwritten.inMemory + stranded + unconfirmed
        lifecycle.withLock { state in
            if let counted { state.waiting = counted.waiting }
            state.lostAtClose += lostNow
        }
        if lostNow > 0 { settings.instrumentation?.hitsGoneUnsent(.lost, count: lostNow) }
        let unsaved = writer.unsavedVisitorDocuments
        if unsaved > 0 {
            logger.error("\(unsaved) visitor document(s) are not in the visitor cache at close: the next start fetches those visitors' flags again")
        }
        guard storeAnswered else {
            logger.error("Closed at its deadline (\(Self.describe(settings.closeDeadline))) with the hit cache still busy (locked by another process, or a custom cache that has not returned): \(unconfirmed + unwritten.inMemory) accepted hit(s) not yet in it are counted as lost; hits already cached stay there for the next start")
            return
        }
        if waiting > 0 { logger.info("\(waiting) unsent hit(s) stay in the hit cache: the next start sends them") }
        if unwritten.inMemory > 0 { logger.error("\(unwritten.inMemory) unsent hit(s) are lost: the hit cache could not take them") }
        if stranded > 0 {
            logger.error("\(stranded) unsent hit(s) are lost: they are in a hit cache no restart finds (in memory, or in a file deleted or replaced while the SDK ran)")
        }
    }

    /// Ends `run`'s loops: no signal comes any more, so the sender's loop ends after its round;
    /// one still sending is cancelled (its request with it). Not waited for here: the SDK
    /// instance's `close()` awaits its background task within the deadline, and a child held by
    /// a custom cache that never returns is left to end by itself.
    private func endLifecycle() {
        sender.abandon()
        sender.finish()
        writer.finishCommits()
        runStopContinuation.yield(sender.isRunning)
        runStopContinuation.finish()
    }
}
