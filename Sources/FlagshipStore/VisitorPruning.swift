import Foundation

/// What one prune did: visitors deleted for not being seen within the retention, and to keep
/// within the budget, with their decisions, in how many transactions, and the pages given back.
package struct VisitorPrune: Sendable, Equatable {
    /// Visitors not seen since the boundary.
    package var expired = 0
    /// Visitors beyond the budget, least recently seen first.
    package var evicted = 0
    /// Rows of `decisions` deleted with them.
    package var decisionRows = 0
    /// Write transactions the deletions took (a batch each).
    package var transactions = 0
    /// Pages the incremental vacuum gave back to the file system (0 for a file not switched to it).
    package var pagesReturned = 0
    /// Shared variations and contexts no row referred to any more, deleted once the shared
    /// tables outgrew their bound (`SharedPartsStore.collectionDue`).
    package var sharedPartsDeleted = 0
    /// The longest a batch held the write lock: what a group commit arriving during the prune
    /// waited at most.
    package var longestHold: Duration = .zero
    /// Batches after which the prune rested as long as others wanted the write lock (work of this
    /// process waited behind the batch, on the store's queue or for the connection, or another
    /// process had the file open), not the short rest of a store nobody else writes
    /// (`FlagshipDatabase.Pacing`).
    package var batchesYielded = 0
    /// Rests of `FlagshipDatabase.longestRest` taken while a long read on another connection kept
    /// the checkpoints from copying the WAL (`Pacing`): the prune waited for that read instead of
    /// growing the WAL.
    package var restsForAReader = 0
    /// Leaf pages of the indexes keyed by visitor id to read beside the batches: every leaf of
    /// each index that had no more leaves than there were visitors due (`PruneReadAhead`).
    package var pagesToReadAhead = 0
    /// How many of them were read before the last batch ended.
    package var pagesReadAhead = 0

    package var visitors: Int { expired + evicted }

    /// What the prune's line says of its rests for a read (`restsForAReader`); empty without.
    package var restsForAReaderText: String {
        guard restsForAReader > 0 else { return "" }
        let milliseconds = restsForAReader * Int(FlagshipDatabase.longestRest.inMilliseconds)
        return "; waited \(milliseconds) ms in all for a read on another connection that kept the WAL from being checkpointed"
    }

    /// `longestHold` in milliseconds, one decimal, for a log line.
    package var longestHoldText: String {
        let (seconds, attoseconds) = longestHold.components
        let tenths = seconds * 10_000 + attoseconds / 100_000_000_000_000
        return "\(tenths / 10).\(tenths % 10) ms"
    }

    /// Counts one batch of `batchSize` (a transaction); returns whether it was full, so that
    /// more may be due. `expired`: deleted for their age, not for the budget.
    package mutating func add(_ deleted: VisitorsDeleted, expired: Bool, batchSize: Int) -> Bool {
        transactions += 1
        if expired { self.expired += deleted.visitors } else { evicted += deleted.visitors }
        decisionRows += deleted.decisionRows
        return deleted.visitors >= batchSize
    }

    package init(expired: Int = 0, evicted: Int = 0, decisionRows: Int = 0, transactions: Int = 0, pagesReturned: Int = 0) {
        self.expired = expired
        self.evicted = evicted
        self.decisionRows = decisionRows
        self.transactions = transactions
        self.pagesReturned = pagesReturned
    }
}

extension FlagshipDatabase {
    /// Rows deleted per write transaction: a group commit waits for one batch at most (a few
    /// milliseconds), never for a whole prune.
    package static let pruneBatchSize = 500

    /// An index keyed by visitor id of fewer leaves is not read ahead by a prune (`PruneReadAhead`).
    package static let pruneReadAheadMinimumLeaves = 256

    /// Which free pages a prune gives back to the file system.
    package enum PagesReturned: Sendable, Equatable {
        /// Every free page: `flagship db prune`, which an operator runs to shrink the file.
        case all
        /// Only the free pages beyond a quarter of the file's (`freeShareKept`), in whole steps:
        /// the SDK's own prunes. Under a steady flow, the rows written between two prunes take
        /// about what a prune frees, and the hit rows deleted once delivered free pages all the
        /// time that the next hits take: giving those back only for the file to grow again moved
        /// the file's last pages into the holes (written to the WAL, then by the checkpoint), and
        /// the file's truncation freed the page cache's pages of its tail, which the next writes
        /// allocated again on another thread, and so often in another of glibc's arenas, where the
        /// freed memory stayed: measured in the soak at 3,400 visitors/s, eight arenas of the
        /// process each kept about 17 MB free (`Benchmarks/README.md`). When the flow falls, the
        /// pruned rows are not replaced, the free share passes a quarter, and the rest goes back.
        /// So the file is at most a third larger than its rows (and a step).
        case beyondKeptShare
    }

    /// The share of the file's pages a prune of the SDK keeps free for new rows (`beyondKeptShare`).
    package static let freeShareKept = 0.25

    /// Deletes the visitors not seen since `boundary` (unix ms), then, with `maxVisitors`, the
    /// least recently seen beyond it, each with its decisions, `batchSize` visitors per write
    /// transaction; then gives free pages back (`returnFreePages`), all of them or those beyond
    /// the share kept for new rows (`returning`). Each batch first writes the sightings noted so far, so
    /// a visitor looked up a moment ago is never deleted for an older last-seen time.
    ///
    /// Each batch runs on the store's own queue (`queued`), between the calls queued there (the
    /// sender's claims), and the rests between batches are awaited: no thread waits through a
    /// prune. It stops between two batches when `shouldContinue` says so or the calling task is
    /// cancelled (a closing SDK): what is left is pruned next time. With as many visitors due as
    /// the indexes keyed by visitor id have leaves, those are read beside the batches until they
    /// end (`PruneReadAhead`; `readAheadMinimumLeaves`: the smallest index read so).
    package func pruneVisitors(
        notSeenSince boundary: Int64?, keepingAtMost maxVisitors: Int?, batchSize: Int = pruneBatchSize,
        returning: PagesReturned = .all, readAheadMinimumLeaves: Int = pruneReadAheadMinimumLeaves,
        shouldContinue: @escaping @Sendable () -> Bool = { true }
    ) async throws -> VisitorPrune {
        var prune = VisitorPrune()
        let batch = max(1, batchSize)
        var pacing = Pacing()
        let going = { !Task.isCancelled && shouldContinue() }
        // Most runs find nothing to do: they say so from a read, without taking the write lock.
        let due = try await queued { store in
            try store.sightings.count > 0 || store.read { try $0.visitors.anyDue(notSeenSince: boundary, keepingAtMost: maxVisitors) }
        }
        let readAhead = due ? await plannedReadAhead(boundary, maxVisitors, minimumLeaves: readAheadMinimumLeaves) : nil
        prune.pagesToReadAhead = readAhead?.plan.pages.count ?? 0
        let stopReadAhead = Locked(false)
        async let pagesReadAhead = Self.read(readAhead, stop: stopReadAhead)
        if due, let boundary {
            while going() {
                let deleted = try await pacedBatch(&pacing) { store in
                    try store.writeBatch { try $0.visitors.deleteNotSeen(since: boundary, limit: batch) }
                }
                guard prune.add(deleted, expired: true, batchSize: batch) else { break }
                await pacing.rest(self)
            }
        }
        if due, let maxVisitors {
            while going() {
                let deleted = try await pacedBatch(&pacing) { store in
                    try store.writeBatch { try $0.visitors.deleteLeastRecentlySeen(keeping: maxVisitors, limit: batch) }
                }
                guard prune.add(deleted, expired: false, batchSize: batch) else { break }
                await pacing.rest(self)
            }
        }
        stopReadAhead.withLock { $0 = true }
        prune.pagesReadAhead = await pagesReadAhead
        if going() {
            prune.sharedPartsDeleted = try await queued { store in
                guard try store.read({ try $0.sharedParts.collectionDue() }) else { return 0 }
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                return try store.write { try $0.sharedParts.collect(now: now) }
            }
        }
        if returning == .beyondKeptShare {
            // The pages that leave the share kept of the file as it will be once they are gone
            // (`(free - kept × pages) / (1 - kept)`), in whole steps so that none eats into it.
            let (free, pages) = try await queued { store in (Double(try store.freePageCount()), Double(try store.pageCount())) }
            let beyond = (free - Self.freeShareKept * pages) / (1 - Self.freeShareKept)
            let steps = Int(max(0, beyond)) / Self.freePagesPerStep
            if steps > 0 {
                prune.pagesReturned = try await returnFreePages(atMost: steps * Self.freePagesPerStep, pacing: &pacing, going: going)
            }
        } else if prune.visitors > 0 || prune.sharedPartsDeleted > 0 {
            prune.pagesReturned = try await returnFreePages(pacing: &pacing, going: going)
        }
        prune.note(pacing)
        return prune
    }

    /// The read ahead of a prune of the visitors not seen since `boundary` and beyond
    /// `maxVisitors`, with its plan; `nil` when there is nothing to read ahead (`PruneReadAhead`)
    /// or no file to read it from.
    private func plannedReadAhead(_ boundary: Int64?, _ maxVisitors: Int?, minimumLeaves: Int) async
        -> (readAhead: PruneReadAhead, plan: PruneReadAhead.Plan)? {
        guard !database.options.readOnly, database.path != ":memory:" else { return nil }
        let readAhead = PruneReadAhead(path: database.path, boundary: boundary, maxVisitors: maxVisitors, minimumLeaves: minimumLeaves)
        return await readAhead.planned().map { (readAhead, $0) }
    }

    /// The pages of a planned read ahead read until `stop`; 0 without one.
    private static func read(_ planned: (readAhead: PruneReadAhead, plan: PruneReadAhead.Plan)?, stop: Locked<Bool>) async -> Int {
        guard let planned else { return 0 }
        return await planned.readAhead.read(planned.plan, stop: stop)
    }

    /// The shortest and the longest rest between two batches of background work when others
    /// want the write lock, and the rest when nobody does.
    package static let shortestRest: Duration = .milliseconds(15)
    package static let longestRest: Duration = .milliseconds(200)
    package static let idleRest: Duration = .milliseconds(1)

    /// What one batch of background work saw, measured on the store's queue around its transaction.
    struct PacedBatch: Sendable {
        /// How long it held the connection.
        var held: Duration
        /// Whether other work of this process waited for the connection, or for the store's queue,
        /// meanwhile.
        var othersWaited: Bool
        /// Whether another process has the file open, when it was looked at before this batch.
        var otherProcess: Bool?
        /// The WAL frames its commit wrote (0 without a background checkpointer).
        var walFrames = 0
    }

    /// `body` (one batch: a write transaction) on the store's queue, measured for `pacing`.
    private func pacedBatch<T: Sendable>(_ pacing: inout Pacing, _ body: @escaping @Sendable (FlagshipDatabase) throws -> T) async throws -> T {
        let lookAtOtherProcesses = pacing.otherProcessesDue()
        let (value, batch) = try await queued { store in
            let otherProcess = lookAtOtherProcesses
                ? (try? store.database.withConnection { try StoreSessions.otherProcessOpen($0) }) ?? true : nil
            let waitsBefore = store.database.connectionWaits
            let submittedBefore = store.database.executor.submitted
            let walBefore = store.database.walProgress?.pages ?? 0
            let started = ContinuousClock.now
            let value = try body(store)
            let held = ContinuousClock.now - started
            // Others waited for the connection (a thread's write), or for the queue this batch
            // holds (a group commit, the sender's claim, queued there behind it).
            let othersWaited = store.database.connectionWaits != waitsBefore || store.database.executor.submitted != submittedBefore
            // A WAL that started over during the batch holds the batch's frames alone.
            let walAfter = store.database.walProgress?.pages ?? 0
            let batch = PacedBatch(held: held, othersWaited: othersWaited, otherProcess: otherProcess,
                                   walFrames: walAfter >= walBefore ? walAfter - walBefore : walAfter)
            return (value, batch)
        }
        pacing.note(batch)
        return value
    }

    /// Writes the sightings noted so far (`sightings`): for a timer between prunes, and `close`.
    /// Returns how many visitors' rows it touched.
    @discardableResult
    package func recordSightings() throws -> Int {
        let seen = sightings.take()
        guard !seen.isEmpty else { return 0 }
        do {
            return try write { try $0.visitors.markSeen(seen) }
        } catch {
            sightings.putBack(seen)
            throw error
        }
    }

    /// One write transaction that first records the sightings noted so far, then runs `body`;
    /// the sightings wait again if it fails.
    private func writeBatch<T>(_ body: (Connection) throws -> T) throws -> T {
        let seen = sightings.take()
        do {
            return try write { db in
                try db.visitors.markSeen(seen)
                return try body(db)
            }
        } catch {
            sightings.putBack(seen)
            throw error
        }
    }

    /// Pages given back per transaction by `returnFreePages`: about 4 MB of 4 KB pages, so that a
    /// group commit waiting behind it waits a few milliseconds.
    package static let freePagesPerStep = 1_000

    /// Gives the file's free pages back to the file system (`PRAGMA incremental_vacuum`), in
    /// steps of `freePagesPerStep` pages, each a write transaction of its own on the store's
    /// queue, paced as a prune's batches; the file shrinks at the next checkpoint. `atMost`: pages
    /// to give back at most, rounded up to a whole step. Nothing for a file not in incremental
    /// auto-vacuum (one opened before it was switched, see `open`): its free pages are reused by
    /// later rows instead. Stops between two steps when the calling task is cancelled. Returns
    /// how many pages left the file.
    @discardableResult
    package func returnFreePages(atMost limit: Int = .max) async throws -> Int {
        var pacing = Pacing()
        return try await returnFreePages(atMost: limit, pacing: &pacing, going: { !Task.isCancelled })
    }

    private func returnFreePages(atMost limit: Int = .max, pacing: inout Pacing, going: () -> Bool) async throws -> Int {
        guard limit > 0, try await queued({ try $0.autoVacuumMode() }) == .incremental else { return 0 }
        var returned = 0
        while returned < limit, going() {
            // Nothing moved: another process holds pages SQLite cannot move now.
            let (before, after) = try await pacedBatch(&pacing) { store -> (Int, Int) in
                let before = try store.freePageCount()
                guard before > 0 else { return (0, 0) }
                try store.write { db in _ = try db.query("PRAGMA incremental_vacuum(1000)") }  // freePagesPerStep
                return (before, try store.freePageCount())
            }
            returned += before - after
            guard after < before, after > 0 else { break }
            await pacing.rest(self)
        }
        return returned
    }

    /// `PRAGMA auto_vacuum` of the file.
    package enum AutoVacuum: Int64, Sendable {
        case none = 0
        case full = 1
        case incremental = 2
    }

    package func autoVacuumMode() throws -> AutoVacuum {
        try database.withConnection { AutoVacuum(rawValue: try $0.scalar("PRAGMA auto_vacuum")?.int64 ?? 0) ?? .none }
    }

    /// Pages of the file, free ones included (`PRAGMA page_count`).
    package func pageCount() throws -> Int {
        try database.withConnection { Int(try $0.scalar("PRAGMA page_count")?.int64 ?? 0) }
    }

    /// Pages of the file on its free list (`PRAGMA freelist_count`).
    package func freePageCount() throws -> Int {
        try database.withConnection { Int(try $0.scalar("PRAGMA freelist_count")?.int64 ?? 0) }
    }
}
