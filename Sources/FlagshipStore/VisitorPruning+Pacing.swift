import Foundation

extension FlagshipDatabase {
    /// How background work in batches (a prune, giving pages back) shares the write lock.
    ///
    /// When others want the lock, the work rests after each batch four times as long as the
    /// batch took (`shortestRest` to `longestRest`) before it takes the lock again: it holds the
    /// lock a fifth of the time at most, and the group commits the rest. The lock is not fair: a
    /// loop that took it back at once kept the group commits waiting for the whole loop. Measured
    /// in the soak at 3,400 visitors/s, visitors kept 5 minutes (a prune of some 150,000 visitors
    /// a minute): without rests, each prune held the awaited `sendHit` for 2 – 3 s (its p99); with
    /// 15 ms and as long as the batch, for 0.1 – 0.4 s.
    ///
    /// Others want it when work of this process waited during the batch, for the connection (a
    /// thread's write) or behind the batch on the store's queue (a group commit, the sender's
    /// claim or settlement: `SerialQueueExecutor.submitted`), or when another process has the
    /// file open (a live session in `sdk_state`, looked at once a second): its writes wait on the
    /// file's lock, out of sight. Otherwise the work rests `idleRest`, then waits only while a batch as large as
    /// the last (one checkpoint's worth at least) could leave the background checkpointer behind
    /// (`Database.checkpointWouldFallBehind`): a store nobody else writes is pruned at the pace of
    /// its checkpoints (`flagship db prune`, or an SDK between two flows of visitors), the batches
    /// going on while the checkpoint of the ones before copies their pages; no commit ever copies
    /// the whole WAL itself, and a writer arriving meanwhile waits one batch at most, as before.
    /// Measured on the 10M store (`Benchmarks/README.md`, "Scale"): waiting as soon as the WAL
    /// passed two checkpoints' worth, a prune and the checkpoints mostly took turns; going on
    /// while the next batch fits deletes 1.15 times as many visitors a second read cold, 1.2 times
    /// in the page cache. Either way, the work then waits while a long read on another connection
    /// keeps the checkpoints from copying a WAL already past where commits checkpoint it
    /// themselves (`waitWhileAReaderHoldsBackTheCheckpoints`). The rests are awaited (a
    /// cancellation ends them); calls queued on the store (the sender's claims) run between two
    /// batches.
    struct Pacing {
        private var otherProcess = false
        private var otherProcessLookedAt: ContinuousClock.Instant?
        private var last: PacedBatch?
        /// The longest batch so far: the longest a writer arriving during the work waited.
        private(set) var longestHold: Duration = .zero
        /// Batches after which the work rested as others wanted the lock.
        private(set) var yielded = 0
        /// Rests of `longestRest` while a read held back the checkpoints.
        private(set) var restsForAReader = 0

        /// Whether the next batch looks at other processes first (once a second).
        mutating func otherProcessesDue() -> Bool {
            let now = ContinuousClock.now
            guard otherProcessLookedAt.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
            otherProcessLookedAt = now
            return true
        }

        mutating func note(_ batch: PacedBatch) {
            if let seen = batch.otherProcess { otherProcess = seen }
            longestHold = max(longestHold, batch.held)
            last = batch
        }

        /// The rest after the last batch, more work following.
        mutating func rest(_ store: FlagshipDatabase) async {
            guard let last else { return }
            if otherProcess || last.othersWaited {
                yielded += 1
                await Self.sleep(min(max(last.held * 4, FlagshipDatabase.shortestRest), FlagshipDatabase.longestRest))
            } else {
                // Nobody else writes: the checkpoint under way ends first when the next batch could
                // take the WAL past what the background checkpointer copies, where a commit (this
                // work's, or a group commit's arriving now) would checkpoint the whole WAL itself.
                let deadline = ContinuousClock.now + FlagshipDatabase.longestRest
                let nextBatch = max(last.walFrames, store.database.walProgress?.pagesPerCheckpoint ?? 0)
                await Self.sleep(FlagshipDatabase.idleRest)
                while store.database.checkpointWouldFallBehind(writing: nextBatch), ContinuousClock.now < deadline, !Task.isCancelled {
                    await Self.sleep(FlagshipDatabase.idleRest)
                }
            }
            await waitWhileAReaderHoldsBackTheCheckpoints(store)
        }

        /// Rests while a read keeps the checkpoints from copying a WAL already past the point
        /// where commits checkpoint it themselves (`Database.checkpointsHeldBackByAReader`): a
        /// long read on another connection (`flagship export`, a backup, a query in the `sqlite3`
        /// shell). Every frame written meanwhile stays in the WAL, and the first checkpoint after
        /// that read copies them all, inside the commit that runs it when that commit is a
        /// batch's: measured on the 10M store under the soak, a read of four seconds let the prune
        /// add some 90,000 frames, and its next batch held the write lock a second. So the work
        /// asks for a checkpoint after each `longestRest` until one copies the whole WAL (the read
        /// over), off the write lock; the app's own commits go on meanwhile. A cancelled task
        /// stops waiting at once.
        private mutating func waitWhileAReaderHoldsBackTheCheckpoints(_ store: FlagshipDatabase) async {
            while store.database.checkpointsHeldBackByAReader, !Task.isCancelled {
                restsForAReader += 1
                store.database.checkpointSoon()
                await Self.sleep(FlagshipDatabase.longestRest)
            }
        }

        /// A cancelled task's rest ends at once; its work stops before the next batch. On the
        /// SDK's timer, not `Task.sleep`, whose wake-up waits for the global pool
        /// (`DeadlineTimer.sleep`): a prune goes on while the app's work holds that pool.
        private static func sleep(_ rest: Duration) async {
            try? await DeadlineTimer.shared.sleep(for: rest)
        }
    }
}

extension VisitorPrune {
    /// What the prune's pacing saw: its longest hold and its rests.
    mutating func note(_ pacing: FlagshipDatabase.Pacing) {
        longestHold = pacing.longestHold
        batchesYielded = pacing.yielded
        restsForAReader = pacing.restsForAReader
    }
}
