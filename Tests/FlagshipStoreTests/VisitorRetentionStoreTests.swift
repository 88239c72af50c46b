import Foundation
import XCTest

import FlagshipStore

/// Bounded storage in the store: the prune by last-seen time and by budget, in small batches,
/// visitors' decisions deleted with them, lookups counted as sightings, freed pages given back.
final class VisitorRetentionStoreTests: StoreTestCase {
    private static let day: Int64 = 86_400_000

    /// A visitor last written `daysAgo` days before `fixedNow`, with one decision row.
    private func saveVisitor(_ id: String, daysAgo: Int64, in store: FlagshipDatabase, document: String? = nil) throws {
        var record = VisitorRecord.sample(id, updatedAt: fixedNowMilliseconds - daysAgo * Self.day)
        if let document { record.document = document }
        record.decisions = [DecisionRecord(visitorId: id, decidedAt: record.updatedAt, campaignId: "c1", variationGroupId: "vg1",
                                           variationId: "var1", source: .bucketingFile, reason: "SPLIT", fileVersion: nil,
                                           context: #"{"plan":"free"}"#, flags: #"{"btnColor":"green"}"#)]
        try store.write { try $0.visitors.save(record) }
    }

    private func visitorIds(_ store: FlagshipDatabase) throws -> [String] {
        try store.read { try $0.visitors.visitors() }.map(\.visitorId).sorted()
    }

    private func decidedVisitorIds(_ store: FlagshipDatabase) throws -> [String] {
        try store.database.column("SELECT DISTINCT visitor_id FROM decisions ORDER BY visitor_id").compactMap(\.text)
    }

    private func thirtyDaysBefore(_ now: Int64 = fixedNowMilliseconds) -> Int64 { now - 30 * Self.day }

    // MARK: - Retention

    func testPruneDeletesExactlyTheVisitorsNotSeenWithinTheRetentionWithTheirDecisionsAndNoOthers() async throws {
        let store = try openStore()
        for (id, days) in [("gone-45", Int64(45)), ("gone-31", 31), ("kept-29", 29), ("kept-1", 1), ("kept-0", 0)] {
            try saveVisitor(id, daysAgo: days, in: store)
        }
        // Exactly at the boundary: seen 30 days ago to the millisecond is still within it.
        let kept = thirtyDaysBefore()
        try await store.write { try $0.visitors.save(.sample("kept-30", updatedAt: kept)) }

        let prune = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil)

        XCTAssertEqual(prune.expired, 2)
        XCTAssertEqual(prune.evicted, 0)
        XCTAssertEqual(prune.decisionRows, 2)
        XCTAssertEqual(try visitorIds(store), ["kept-0", "kept-1", "kept-29", "kept-30"])
        XCTAssertEqual(try decidedVisitorIds(store), ["kept-0", "kept-1", "kept-29"])
    }

    func testAPruneWithNothingDueTakesNoWriteLock() async throws {
        let store = try openStore()
        try saveVisitor("recent", daysAgo: 2, in: store)
        try saveVisitor("other", daysAgo: 3, in: store)
        let statements = Locked<[String]>([])
        try store.database.traceStatements { sql in statements.withLock { $0.append(sql) } }

        let prune = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: 2)
        try store.database.traceStatements(nil)

        XCTAssertEqual(prune, VisitorPrune())
        XCTAssertEqual(try visitorIds(store), ["other", "recent"])
        XCTAssertFalse(statements.withLock { $0 }.contains { $0.hasPrefix("BEGIN IMMEDIATE") }, "\(statements.withLock { $0 })")
    }

    func testAReturningVisitorLookedUpButNotRewrittenIsKept() async throws {
        let store = try openStore()
        try saveVisitor("returning", daysAgo: 40, in: store)
        try saveVisitor("gone", daysAgo: 40, in: store)
        // A lookup today, as the default visitor cache makes it (`FSDefaultCacheVisitor`).
        let read = try await store.read { try $0.visitors.visitorAndLastSeen(id: "returning") }
        let found = try XCTUnwrap(read)
        XCTAssertEqual(found.lastSeenAt, fixedNowMilliseconds - 40 * Self.day)
        XCTAssertTrue(store.sightings.noteLookup(of: "returning", lastSeenAt: found.lastSeenAt, now: fixedNowMilliseconds))

        let prune = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil)

        XCTAssertEqual(prune.expired, 1)
        XCTAssertEqual(try visitorIds(store), ["returning"])
        let seen = try await store.read { try $0.visitors.visitorAndLastSeen(id: "returning") }
        XCTAssertEqual(seen?.lastSeenAt, fixedNowMilliseconds)
        let returning = try await store.read { try $0.visitors.visitor(id: "returning") }
        XCTAssertEqual(returning?.updatedAt, fixedNowMilliseconds - 40 * Self.day,
                       "a sighting is not a write of the document")
        XCTAssertEqual(store.sightings.count, 0)
    }

    func testALookupWithinTheResolutionOfTheLastSightingIsNotNotedAgain() {
        let sightings = VisitorSightings()
        let lastSeen = fixedNowMilliseconds - VisitorSightings.defaultResolutionMilliseconds + 1

        XCTAssertFalse(sightings.noteLookup(of: "v", lastSeenAt: lastSeen, now: fixedNowMilliseconds))
        XCTAssertTrue(sightings.noteLookup(of: "v", lastSeenAt: lastSeen - 1, now: fixedNowMilliseconds))
        XCTAssertEqual(sightings.take(), ["v": fixedNowMilliseconds])
        XCTAssertEqual(sightings.count, 0)
    }

    func testSightingsNobodyWritesStopAtTheCapacityAndAVisitorNotedAlreadyIsStillUpdated() {
        let sightings = VisitorSightings()
        for index in 0..<VisitorSightings.capacity {
            sightings.noteLookup(of: "v\(index)", lastSeenAt: 0, now: fixedNowMilliseconds)
        }

        XCTAssertFalse(sightings.noteLookup(of: "one-too-many", lastSeenAt: 0, now: fixedNowMilliseconds))
        XCTAssertTrue(sightings.noteLookup(of: "v7", lastSeenAt: 0, now: fixedNowMilliseconds + 1))
        XCTAssertEqual(sightings.count, VisitorSightings.capacity)
        XCTAssertEqual(sightings.take()["v7"], fixedNowMilliseconds + 1)
    }

    func testASightingNeverMovesALastSeenTimeBack() throws {
        let store = try openStore()
        try saveVisitor("v", daysAgo: 0, in: store)

        let touched = try store.write { try $0.visitors.markSeen(["v": fixedNowMilliseconds - 5 * Self.day, "absent": fixedNowMilliseconds]) }

        XCTAssertEqual(touched, 0)
        XCTAssertEqual(try store.read { try $0.visitors.visitorAndLastSeen(id: "v") }?.lastSeenAt, fixedNowMilliseconds)
    }

    func testRewritingAVisitorKeepsALaterSighting() throws {
        let store = try openStore()
        try saveVisitor("v", daysAgo: 10, in: store)
        store.sightings.noteLookup(of: "v", lastSeenAt: fixedNowMilliseconds - 10 * Self.day, now: fixedNowMilliseconds)
        XCTAssertEqual(try store.recordSightings(), 1)

        // A document accepted earlier and committed after the sighting.
        try saveVisitor("v", daysAgo: 3, in: store)

        XCTAssertEqual(try store.read { try $0.visitors.visitorAndLastSeen(id: "v") }?.lastSeenAt, fixedNowMilliseconds)
    }

    func testAPruneOfTwoThousandDueVisitorsTakesSeveralTransactionsOfFiveHundredAtMost() async throws {
        let store = try openStore()
        try await store.write { db in
            try db.visitors.save((0..<2_000).map { VisitorRecord.sample("old-\($0)", updatedAt: fixedNowMilliseconds - 40 * Self.day) })
            try db.visitors.save(VisitorRecord.sample("recent"))
        }
        let statements = Locked<[String]>([])
        try store.database.traceStatements { sql in statements.withLock { $0.append(sql) } }

        let prune = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil)
        try store.database.traceStatements(nil)

        XCTAssertEqual(prune.expired, 2_000)
        XCTAssertEqual(prune.transactions, 5, "four full batches, and one that finds nothing left")
        XCTAssertEqual(try visitorIds(store), ["recent"])
        // Rows deleted in each write transaction, as SQLite ran them.
        var perTransaction: [Int] = []
        for sql in statements.withLock({ $0 }) {
            if sql.hasPrefix("BEGIN IMMEDIATE") { perTransaction.append(0) }
            if sql.hasPrefix("DELETE FROM main.visitors"), !perTransaction.isEmpty { perTransaction[perTransaction.count - 1] += 1 }
        }
        XCTAssertEqual(perTransaction.filter { $0 > 0 }, [500, 500, 500, 500])
    }

    func testThePruneFindsTheOldestVisitorsThroughTheIndexWithoutATableScan() throws {
        let store = try openStore()
        for sql in [
            "SELECT rowid, visitor_id FROM visitors WHERE coalesce(last_seen_at, updated_at) < 1 ORDER BY coalesce(last_seen_at, updated_at) LIMIT 500",
            "SELECT rowid, visitor_id FROM visitors ORDER BY coalesce(last_seen_at, updated_at) LIMIT 500",
        ] {
            let details = try store.read { try $0.query("EXPLAIN QUERY PLAN " + sql).map { try $0.text(3) } }
            XCTAssertTrue(details.contains { $0.contains("USING INDEX visitors_by_last_seen") }, "\(details)")
            XCTAssertFalse(details.contains { $0.hasPrefix("SCAN visitors") && !$0.contains("INDEX") }, "\(details)")
            XCTAssertFalse(details.contains { $0.contains("TEMP B-TREE") }, "no sort: \(details)")
        }
    }

    // MARK: - Budget

    func testTheBudgetEvictsTheLeastRecentlySeenFirst() async throws {
        let store = try openStore()
        for (id, days) in [("seen-5", Int64(5)), ("seen-1", 1), ("seen-9", 9), ("seen-3", 3), ("seen-7", 7)] {
            try saveVisitor(id, daysAgo: days, in: store)
        }
        // Looked up today: the most recently seen, though written nine days ago.
        store.sightings.noteLookup(of: "seen-9", lastSeenAt: fixedNowMilliseconds - 9 * Self.day, now: fixedNowMilliseconds)

        let prune = try await store.pruneVisitors(notSeenSince: nil, keepingAtMost: 2, batchSize: 2)

        XCTAssertEqual(prune.evicted, 3)
        XCTAssertEqual(prune.expired, 0)
        XCTAssertEqual(prune.decisionRows, 3)
        XCTAssertEqual(prune.transactions, 2, "two, then the one left beyond the budget")
        XCTAssertEqual(try visitorIds(store), ["seen-1", "seen-9"])
        XCTAssertEqual(try decidedVisitorIds(store), ["seen-1", "seen-9"])
    }

    func testRetentionThenBudgetCountEachDeletionOnce() async throws {
        let store = try openStore()
        for index in 0..<6 { try saveVisitor("v\(index)", daysAgo: Int64(index * 10), in: store) }

        let prune = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: 2)

        XCTAssertEqual(prune.expired, 2, "40 and 50 days")
        XCTAssertEqual(prune.evicted, 2, "of the four left, the two least recently seen")
        XCTAssertEqual(prune.visitors, 4)
        XCTAssertEqual(try visitorIds(store), ["v0", "v1"])
    }

    func testAPruneAskedToStopStopsBetweenBatches() async throws {
        let store = try openStore()
        try await store.write { db in
            try db.visitors.save((0..<30).map { VisitorRecord.sample("old-\($0)", updatedAt: fixedNowMilliseconds - 40 * Self.day) })
        }
        let asked = Locked(0)

        let prune = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil, batchSize: 10) {
            asked.withLock { asked in
                asked += 1
                return asked <= 2
            }
        }

        XCTAssertEqual(prune.expired, 20)
        let left = try await store.read { try $0.visitors.count() }
        XCTAssertEqual(left, 10)
    }

    /// A prune whose task is cancelled (a closing SDK's retention) ends after the batch under way,
    /// with what it deleted so far, and skips what follows (the shared parts, the free pages); the
    /// rest is pruned next time.
    func testAPruneWhoseTaskIsCancelledStopsAfterItsBatch() async throws {
        let store = try openStore()
        try await store.write { db in
            try db.visitors.save((0..<100).map { VisitorRecord.sample("old-\($0)", updatedAt: fixedNowMilliseconds - 40 * Self.day) })
        }
        let asked = Locked(0)
        let boundary = thirtyDaysBefore()

        let prune = try await Task {
            try await store.pruneVisitors(notSeenSince: boundary, keepingAtMost: nil, batchSize: 10) {
                // Asked on the prune's own task, before each batch: the third cancels it.
                if asked.withLock({ asked -> Int in
                    asked += 1
                    return asked
                }) == 3 {
                    withUnsafeCurrentTask { $0?.cancel() }
                }
                return true
            }
        }.value

        XCTAssertEqual(prune.expired, 30, "the batch under way when it was cancelled, and none after")
        XCTAssertEqual(prune.transactions, 3)
        XCTAssertEqual(prune.pagesReturned, 0)
        XCTAssertEqual(asked.withLock { $0 }, 3)
        let left = try await store.read { try $0.visitors.count() }
        XCTAssertEqual(left, 70)
        let next = try await store.pruneVisitors(notSeenSince: boundary, keepingAtMost: nil, batchSize: 10)
        XCTAssertEqual(next.expired, 70)
    }

    /// A write asked for while a long prune runs goes between two of its batches, not after the
    /// prune: the store's write lock is not fair, and a prune that took it back at once kept the
    /// group commits waiting for seconds (the soak at 3,400 visitors/s).
    func testAWriteAskedForDuringALongPruneGoesBetweenTwoOfItsBatches() async throws {
        let store = try openStore()
        try await store.write { db in
            try db.visitors.save((0..<2_000).map { VisitorRecord.sample("old-\($0)", updatedAt: fixedNowMilliseconds - 40 * Self.day) })
        }
        let batches = Locked(0)
        let writtenAfterBatches = Locked<Int?>(nil)
        let writerStarted = DispatchSemaphore(value: 0)

        let prune = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil, batchSize: 20) {
            let done = batches.withLock { batches -> Int in
                batches += 1
                return batches
            }
            if done == 2 {
                Thread {
                    writerStarted.signal()
                    try? store.write { db in try db.visitors.save(.sample("new", updatedAt: fixedNowMilliseconds)) }
                    writtenAfterBatches.withLock { $0 = batches.withLock { $0 } }
                }.start()
                writerStarted.wait()
            }
            return true
        }

        XCTAssertEqual(prune.expired, 2_000)
        XCTAssertEqual(prune.transactions, 101, "100 full batches and the one that found none")
        let after = try XCTUnwrap(writtenAfterBatches.withLock { $0 }, "the write ran")
        XCTAssertLessThan(after, 20, "the write waited for \(after) of the prune's 101 batches")
        XCTAssertEqual(try visitorIds(store), ["new"])
        XCTAssertGreaterThan(prune.longestHold, .zero)
    }

    /// A write that waited for the connection during a batch makes the prune rest four times that
    /// batch's length after it; the batches nobody waited for rest 1 ms.
    func testAPruneRestsForOthersAfterTheBatchDuringWhichAWriteWaitedAndOnlyThen() async throws {
        let written = DispatchSemaphore(value: 0)
        // The first row of the third batch (batches of 100): a write arrives, and waits for the
        // connection the batch holds.
        let (prune, store) = try await pruneOfAThousand(arrivingAtDeletion: 201) { store in
            let before = store.database.connectionWaits
            Thread {
                try? store.write { db in try db.visitors.save(.sample("new", updatedAt: fixedNowMilliseconds)) }
                written.signal()
            }.start()
            while store.database.connectionWaits == before { usleep(100) }
        }
        written.wait()
        XCTAssertEqual(prune.batchesYielded, 1, "the third batch only")
        XCTAssertEqual(try visitorIds(store), ["new"], "the write went between two batches")
    }

    /// The SDK's group commits and the sender's claims run on the store's own queue, the one the
    /// prune's batches hold: one queued there during a batch waits behind it, never for the
    /// connection, and makes the prune rest after that batch as a thread's write does.
    func testAPruneRestsAfterTheBatchDuringWhichWorkWasQueuedBehindItOnTheStoresQueue() async throws {
        let write = Locked<Task<Void, any Error>?>(nil)
        // The first row of the fourth batch: a write is queued behind it.
        let (prune, store) = try await pruneOfAThousand(arrivingAtDeletion: 301) { store in
            let (submitted, waits) = (store.database.executor.submitted, store.database.connectionWaits)
            write.withLock { write in
                write = Task.detached {
                    try await store.write(cancellable: false) { db in try db.visitors.save(.sample("new", updatedAt: fixedNowMilliseconds)) }
                }
            }
            while store.database.executor.submitted == submitted { usleep(100) }
            XCTAssertEqual(store.database.connectionWaits, waits, "it waits on the queue, not for the connection")
        }
        try await XCTUnwrap(write.withLock { $0 }, "the write was made").value
        XCTAssertEqual(prune.batchesYielded, 1, "the fourth batch only")
        XCTAssertEqual(try visitorIds(store), ["new"], "the write went between two batches")
    }

    /// Prunes a store of 1,000 visitors due, in batches of 100, where `arrive` runs inside a batch,
    /// on its thread, before the `deletion`th visitor's row is deleted (it makes a write of the
    /// visitor "new" arrive); checks that all were deleted, each batch full but the last.
    private func pruneOfAThousand(
        arrivingAtDeletion deletion: Int, _ arrive: @escaping @Sendable (FlagshipDatabase) -> Void
    ) async throws -> (VisitorPrune, FlagshipDatabase) {
        let store = try openStore()
        try await store.write { db in
            try db.visitors.save((0..<1_000).map { VisitorRecord.sample("old-\($0)", updatedAt: fixedNowMilliseconds - 40 * Self.day) })
        }
        let deletes = Locked(0)
        try store.database.traceStatements { sql in
            guard sql.hasPrefix("DELETE FROM main.visitors") else { return }
            let count = deletes.withLock { count -> Int in
                count += 1
                return count
            }
            if count == deletion { arrive(store) }
        }
        let prune = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil, batchSize: 100)
        try store.database.traceStatements(nil)
        XCTAssertEqual(prune.expired, 1_000)
        XCTAssertEqual(prune.transactions, 11, "ten full batches and the one that found none")
        return (prune, store)
    }

    /// The count of accesses that waited: one that finds the connection free is not counted, one
    /// that finds it held is, once.
    func testAnAccessIsCountedAsAWaitOnlyWhenItFindsTheConnectionHeld() throws {
        let store = try openStore()
        let start = store.database.connectionWaits
        _ = try store.read { try $0.visitors.count() }
        XCTAssertEqual(store.database.connectionWaits, start, "the connection was free")

        let done = DispatchSemaphore(value: 0)
        try store.database.withConnection { _ in
            Thread {
                _ = try? store.read { try $0.visitors.count() }
                done.signal()
            }.start()
            while store.database.connectionWaits == start { usleep(100) }
        }
        done.wait()
        XCTAssertEqual(store.database.connectionWaits, start + 1)
    }

    /// A store nobody else writes (`flagship db prune`, an SDK between two flows of visitors) is
    /// pruned at the pace of its batches: none is followed by the rest that leaves the lock to
    /// others four times as long as the batch.
    func testAPruneNobodyElseWritesNeverRestsForOthers() async throws {
        let store = try openStore()
        try await store.write { db in
            try db.visitors.save((0..<2_000).map { VisitorRecord.sample("old-\($0)", updatedAt: fixedNowMilliseconds - 40 * Self.day) })
        }

        let prune = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil, batchSize: 100)

        XCTAssertEqual(prune.expired, 2_000)
        XCTAssertEqual(prune.transactions, 21, "20 full batches, and one that found none")
        XCTAssertEqual(prune.batchesYielded, 0)
        XCTAssertGreaterThan(prune.longestHold, .zero)
    }

    /// Another process with the file open writes through the file's lock, which this process
    /// cannot watch: every full batch is followed by the long rest. A session left by a process
    /// that is gone does not count.
    func testAPruneOfAFileAnotherLiveProcessHasOpenRestsForItAfterEveryFullBatch() async throws {
        let store = try openStore()
        let deadProcess = try deadProcessId()
        try await store.write { db in
            try db.visitors.save((0..<2_000).map { VisitorRecord.sample("old-\($0)", updatedAt: fixedNowMilliseconds - 40 * Self.day) })
            try db.execute("INSERT INTO sdk_state (key, value, updated_at) VALUES (?, '0', 0)", [.text("store.session.\(deadProcess).dead")])
        }
        let gone = try await store.pruneVisitors(notSeenSince: nil, keepingAtMost: 1_500, batchSize: 250)
        XCTAssertEqual(gone.evicted, 500)
        XCTAssertEqual(gone.batchesYielded, 0, "a session whose process is gone is no writer")

        // The parent process (the test runner's launcher, or init) is alive, and not this one.
        try await store.write { db in
            try db.execute("INSERT INTO sdk_state (key, value, updated_at) VALUES (?, '0', 0)", [.text("store.session.\(getppid()).live")])
        }
        let shared = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil, batchSize: 500)

        XCTAssertEqual(shared.expired, 1_500)
        XCTAssertEqual(shared.transactions, 4, "three full batches, and one that found none")
        XCTAssertEqual(shared.batchesYielded, 3)
    }

    // MARK: - Free pages

    func testANewFileIsInIncrementalAutoVacuum() throws {
        let store = try openStore()

        XCTAssertEqual(try store.autoVacuumMode(), .incremental)
        XCTAssertFalse(store.opening.switchedToIncrementalVacuum, "chosen before its first table, no VACUUM needed")
    }

    func testAPruneGivesTheFreedPagesBackAndTheFileShrinks() async throws {
        let store = try openStore()
        // Documents of the size real ones have (about 2.5 KB).
        let padding = String(repeating: "x", count: 2_400)
        try await store.write { db in
            try db.visitors.save((0..<2_000).map { index in
                var record = VisitorRecord.sample("old-\(index)", updatedAt: fixedNowMilliseconds - 40 * Self.day)
                record.document = visitorDocument(visitorId: record.visitorId, context: ["padding": padding])
                return record
            })
            try db.visitors.save(VisitorRecord.sample("recent"))
        }
        try emptyWAL(store)
        let before = try fileSize(url())

        let prune = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil)
        try emptyWAL(store)

        XCTAssertEqual(prune.expired, 2_000)
        XCTAssertGreaterThan(prune.pagesReturned, 1_000)
        XCTAssertEqual(try store.freePageCount(), 0)
        let after = try fileSize(url())
        XCTAssertLessThan(after, before / 10, "\(before) bytes before, \(after) after")
        XCTAssertEqual(try visitorIds(store), ["recent"])
    }

    /// `count` visitors last seen `daysAgo` days before `fixedNow`, with documents of a real one's size.
    private func saveVisitors(_ count: Int, prefix: String, daysAgo: Int64, in store: FlagshipDatabase) throws {
        let padding = String(repeating: "x", count: 2_400)
        try store.write { db in
            try db.visitors.save((0..<count).map { index in
                var record = VisitorRecord.sample("\(prefix)-\(index)", updatedAt: fixedNowMilliseconds - daysAgo * Self.day)
                record.document = visitorDocument(visitorId: record.visitorId, context: ["padding": padding])
                return record
            })
        }
    }

    func testTheSDKsPruneKeepsAQuarterOfTheFileFreeForNewRowsAndGivesBackTheRest() async throws {
        let store = try openStore()
        try saveVisitors(1_000, prefix: "old", daysAgo: 40, in: store)
        try saveVisitors(4_000, prefix: "recent", daysAgo: 1, in: store)

        // A fifth of the rows pruned: their pages stay free in the file, for the next rows.
        let first = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil, returning: .beyondKeptShare)
        XCTAssertEqual(first.expired, 1_000)
        XCTAssertEqual(first.pagesReturned, 0)
        let pages = try store.pageCount()
        let freed = try store.freePageCount()
        XCTAssertGreaterThan(freed, pages / 8)
        XCTAssertLessThanOrEqual(freed, Int(Double(pages) * FlagshipDatabase.freeShareKept))

        // As many new rows take them instead of growing the file.
        try saveVisitors(1_000, prefix: "new", daysAgo: 0, in: store)
        XCTAssertLessThan(try store.freePageCount(), freed / 4)
        XCTAssertLessThanOrEqual(try store.pageCount(), pages + pages / 50)

        // The flow stops and everyone falls due: what passes a quarter of the file goes back,
        // in whole steps; a quarter at most stays free.
        let emptied = try await store.pruneVisitors(notSeenSince: fixedNowMilliseconds + 1, keepingAtMost: nil, returning: .beyondKeptShare)
        XCTAssertEqual(emptied.expired, 5_000)
        XCTAssertGreaterThan(emptied.pagesReturned, 0)
        XCTAssertEqual(emptied.pagesReturned % FlagshipDatabase.freePagesPerStep, 0)
        let kept = Int(Double(try store.pageCount()) * FlagshipDatabase.freeShareKept)
        XCTAssertLessThanOrEqual(try store.freePageCount(), kept + FlagshipDatabase.freePagesPerStep)
        XCTAssertEqual(try visitorIds(store), [])

        // Each later prune gives back what passes the quarter of the smaller file, nothing due or not.
        let later = try await store.pruneVisitors(notSeenSince: fixedNowMilliseconds + 1, keepingAtMost: nil, returning: .beyondKeptShare)
        XCTAssertEqual(later.visitors, 0)
        XCTAssertLessThanOrEqual(try store.freePageCount(),
                                 Int(Double(try store.pageCount()) * FlagshipDatabase.freeShareKept) + FlagshipDatabase.freePagesPerStep)

        // `flagship db prune`'s: everything.
        try saveVisitors(2_000, prefix: "again", daysAgo: 40, in: store)
        let byHand = try await store.pruneVisitors(notSeenSince: thirtyDaysBefore(), keepingAtMost: nil)
        XCTAssertGreaterThan(byHand.pagesReturned, 1_000)
        XCTAssertEqual(try store.freePageCount(), 0)
    }

    func testGivingPagesBackStopsAtTheLimitInWholeSteps() async throws {
        let store = try openStore()
        try saveVisitors(4_000, prefix: "old", daysAgo: 40, in: store)
        let boundary = thirtyDaysBefore()
        try await store.write { try $0.visitors.deleteNotSeen(since: boundary, limit: 10_000) }
        let free = try store.freePageCount()
        XCTAssertGreaterThan(free, 2_500)

        let step = try await store.returnFreePages(atMost: 1)
        XCTAssertEqual(step, FlagshipDatabase.freePagesPerStep, "a whole step")
        let none = try await store.returnFreePages(atMost: 0)
        XCTAssertEqual(none, 0)
        XCTAssertEqual(try store.freePageCount(), free - FlagshipDatabase.freePagesPerStep)
    }

    func testAFileMadeBeforeIncrementalVacuumIsSwitchedAtOpenAndThenGivesPagesBack() async throws {
        // A store as builds before version 4 made it: no auto-vacuum.
        let database = try rawDatabase()
        _ = try Migrator().migrate(database, upTo: 3, now: { fixedNow })
        try await database.write { db in
            try db.executeScript("INSERT INTO visitors (visitor_id, consent, document, updated_at) VALUES ('v', 1, '{}', 1)")
        }
        XCTAssertEqual(try database.integer("PRAGMA auto_vacuum"), 0)
        database.close()

        let store = try openStore()

        XCTAssertTrue(store.opening.switchedToIncrementalVacuum)
        XCTAssertEqual(try store.autoVacuumMode(), .incremental)
        XCTAssertEqual(try visitorIds(store), ["v"])
        let prune = try await store.pruneVisitors(notSeenSince: 2, keepingAtMost: nil)
        XCTAssertEqual(prune.expired, 1)
    }

    func testAFileLargerThanTheLimitKeepsItsModeAtOpenAndItsFreedPagesAreReused() async throws {
        let database = try rawDatabase()
        _ = try Migrator().migrate(database, upTo: 3, now: { fixedNow })
        database.close()
        // Grown past the limit with zeros at its end would not be a database: a big table does it.
        let big = try rawDatabase()
        try await big.write { db in
            try db.executeScript("""
                CREATE TABLE ballast (b BLOB);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(FlagshipDatabase.vacuumAtOpenMaximumBytes / 60_000 + 10))
                INSERT INTO ballast SELECT zeroblob(60000) FROM n;
                """)
        }
        big.close()
        XCTAssertGreaterThan(try fileSize(url()), FlagshipDatabase.vacuumAtOpenMaximumBytes)

        let store = try openStore()

        XCTAssertFalse(store.opening.switchedToIncrementalVacuum)
        XCTAssertEqual(try store.autoVacuumMode(), FlagshipDatabase.AutoVacuum.none)
        let returnedBeforeTheSwitch = try await store.returnFreePages()
        XCTAssertEqual(returnedBeforeTheSwitch, 0, "nothing to give back without incremental auto-vacuum")

        // By hand (`flagship db prune`): switched whatever the size, then the ballast's pages go back.
        XCTAssertTrue(try FlagshipDatabase.switchToIncrementalVacuum(store.database))
        XCTAssertEqual(try store.autoVacuumMode(), .incremental)
        XCTAssertFalse(try FlagshipDatabase.switchToIncrementalVacuum(store.database), "once")
        try await store.database.write { try $0.execute("DELETE FROM ballast") }
        let returned = try await store.returnFreePages()
        XCTAssertGreaterThan(returned, 8_000)
        try emptyWAL(store)
        XCTAssertLessThan(try fileSize(url()), 1 << 20)
    }

    /// Checkpoints the whole WAL into the file, so that its size is the database's; tried again
    /// while the store's background checkpointer holds the checkpoint lock.
    private func emptyWAL(_ store: FlagshipDatabase) throws {
        for _ in 0..<200 {
            if try store.database.eraseWALHistory() { return }
            usleep(10_000)
        }
        XCTFail("the WAL could not be checkpointed in 2 s")
    }

    private func fileSize(_ url: URL) throws -> Int64 {
        try XCTUnwrap((try FileManager.default.attributesOfItem(atPath: url.path))[.size] as? NSNumber).int64Value
    }

    // MARK: - Reading any schema version

    func testAVersionThreeFileMigratesWithEachVisitorLastSeenWhenLastWrittenWithoutRewritingARow() async throws {
        let database = try rawDatabase()
        _ = try Migrator().migrate(database, upTo: 3, now: { fixedNow })
        try await database.write { db in
            try db.execute("INSERT INTO visitors (visitor_id, consent, document, updated_at) VALUES ('a', 1, '{}', 100), ('b', 1, '{}', 50)")
        }
        database.close()

        let store = try openStore()

        XCTAssertEqual(store.opening.fromVersion, 3)
        XCTAssertEqual(store.schemaVersion, Migrator().latestVersion)
        let a = try await store.read { try $0.visitors.visitorAndLastSeen(id: "a") }
        XCTAssertEqual(a?.lastSeenAt, 100)
        XCTAssertEqual(try store.database.integer("SELECT count(*) FROM visitors WHERE last_seen_at IS NOT NULL"), 0,
                       "the column is added, no row rewritten")
        XCTAssertEqual(try store.database.column("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'visitors' AND sql IS NOT NULL")
                        .compactMap(\.text), ["visitors_by_last_seen"])
        let prune = try await store.pruneVisitors(notSeenSince: 75, keepingAtMost: nil)
        XCTAssertEqual(prune.expired, 1)
        XCTAssertEqual(try visitorIds(store), ["a"])
    }

    func testCountingDueVisitorsAndTheLeastRecentlySeenReadAVersionThreeFileAsItIs() throws {
        let database = try rawDatabase()
        _ = try Migrator().migrate(database, upTo: 3, now: { fixedNow })
        try database.write { db in
            try db.execute("INSERT INTO visitors (visitor_id, consent, document, updated_at) VALUES ('a', 1, '{}', 100), ('b', 1, '{}', 50), ('c', 1, '{}', 300)")
        }
        database.close()

        let store = try FlagshipDatabase.openForInspection(at: url())
        defer { store.close() }

        XCTAssertEqual(store.schemaVersion, 3)
        XCTAssertEqual(try store.read { try $0.visitors.countNotSeen(since: 200) }, 2)
        let oldest = try XCTUnwrap(try store.read { try $0.visitors.leastRecentlySeen() })
        XCTAssertEqual(oldest.visitorId, "b")
        XCTAssertEqual(oldest.lastSeenAt, 50)
    }
}
