import CSQLite
import Foundation

/// Runs a database's WAL checkpoints on a connection of its own, one at a time, on a serial queue
/// of its own (`io.flagship.store.checkpoint`), so that no commit waits for one.
///
/// SQLite's automatic checkpoint runs inside the commit that pushes the WAL past 1,000 pages: it
/// copies pages into the database file and syncs both files, while the committing connection
/// (and everyone waiting for it: the SDK's group commit, the visitor lookups) waits. Measured in
/// the server loop, that was about 300 syncs of 1.7 ms each on the one thread that commits.
/// Here the commit only notes that the WAL has grown (SQLite's WAL hook) and a second connection
/// runs a `PASSIVE` checkpoint, which copies what no reader still needs without blocking the
/// writer; SQLite's locks keep the two apart. When that connection cannot be had, or the WAL has
/// grown far past the threshold anyway, or the file was moved or deleted under the writer, the
/// committing connection checkpoints as SQLite would have.
///
/// `@unchecked Sendable`: its state, the connection's handle included, is only read and written
/// under its lock, and the handle is used by one block at a time: the one `drain` that runs
/// (`draining`), or `close()` once it has waited for that block.
final class BackgroundCheckpointer: @unchecked Sendable {
    private struct State {
        /// A checkpoint was asked for and has not started.
        var pending = false
        /// A block that runs the checkpoints asked for (`drain`) is set going or running: a
        /// checkpoint asked for meanwhile is run by that block, so two never run at once.
        var draining = false
        var closed = false
        /// The file met damage, or the connection could not be opened: nothing runs here any more.
        var stopped = false
        /// The checkpointing connection, opened at the first checkpoint; used by `drain` only.
        var handle: OpaquePointer?
        var checkpoints = 0
        /// A checkpoint is copying pages now.
        var running = false
        /// The WAL's size after the last commit, in pages.
        var walPages: Int32 = 0
        /// The WAL's size when a checkpoint was last asked for: the next is asked once it has
        /// grown by another threshold (a WAL that keeps being written is not checkpointed at
        /// every commit, each with its two syncs).
        var askedAt: Int32 = 0
        /// The last checkpoint that ran (here or the writer's) left frames it could not copy: a
        /// read still needed the pages they replace.
        var leftFrames = false
    }

    private let path: String
    private let synchronous: DatabaseOptions.Synchronous
    /// The threshold in pages: a checkpoint is asked for each time the WAL grows by as much.
    let threshold: Int32
    /// The block that runs the checkpoints, while it is set going or runs: what the writer's own
    /// checkpoint and `close()` wait for.
    private let drains = DispatchGroup()
    private let queue = StoreThreads.queue("io.flagship.store.checkpoint")
    private let state = Locked(State())

    init(path: String, synchronous: DatabaseOptions.Synchronous, threshold: Int32) {
        self.path = path
        self.synchronous = synchronous
        self.threshold = threshold
    }

    /// Called by SQLite's WAL hook, on the committing thread, after each commit (its write lock
    /// released): `pages` is the WAL's size. Returns at once, unless the writer must checkpoint.
    func committed(walPages pages: Int32, writer: OpaquePointer?) {
        state.withLock { $0.walPages = pages }
        guard pages >= threshold else { return }
        var moved: Int32 = 0
        sqlite3_file_control(writer, nil, SQLITE_FCNTL_HAS_MOVED, &moved)
        let schedule = state.withLock { state -> Bool? in
            // The writer's own file is gone from its path, this one cannot run, or it is far
            // behind: the writer checkpoints, as SQLite's automatic checkpoint would.
            guard moved == 0, !state.stopped, !state.closed, pages < threshold * Self.writerCheckpointThresholds else {
                state.askedAt = 0
                return nil
            }
            if pages < state.askedAt { state.askedAt = 0 }  // the WAL started over
            guard pages >= state.askedAt + threshold, !state.pending else { return false }
            state.askedAt = pages
            return Self.ask(&state)
        }
        var log: Int32 = 0
        var copied: Int32 = 0
        switch schedule {
        case nil:
            guard !state.withLock({ $0.closed }) else { return }
            // A checkpoint under way here holds SQLite's checkpoint lock, which would make the
            // writer's fail at once: it ends first (a checkpoint never waits for a lock). Between
            // its own transactions, the writer's checkpoint then copies the whole WAL, so that the
            // next transaction starts it over: the WAL stays within eight thresholds, as when
            // writes come faster than a second connection can copy them.
            drains.wait()
            note(sqlite3_wal_checkpoint_v2(writer, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied), log: log, copied: copied)
        case true?:
            queue.async(group: drains) { [self] in drain() }
        case false?:
            break
        }
    }

    /// Runs the checkpoints asked for, one after the other, until none is: the one block that
    /// uses the connection.
    private func drain() {
        while let handle = nextCheckpoint() {
            // `SQLITE_BUSY`: another checkpoint runs (another process's); other errors: tried
            // again at the next threshold, and the writer takes over once the WAL is far past it.
            var log: Int32 = 0
            var copied: Int32 = 0
            let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
            state.withLock { state in
                state.running = false
                if code == SQLITE_OK { state.checkpoints += 1 }
            }
            note(code, log: log, copied: copied)
        }
    }

    /// Notes whether a checkpoint that ran copied the whole WAL (`log` frames, `copied` of them).
    private func note(_ code: Int32, log: Int32, copied: Int32) {
        guard code == SQLITE_OK else { return }
        state.withLock { $0.leftFrames = copied < log }
    }

    /// Whether a read keeps the checkpoints from copying a WAL already past the point where
    /// commits checkpoint it themselves (`writerCheckpointThresholds`): the last checkpoint left
    /// frames a read still needed. Until that read ends, every frame written stays in the WAL,
    /// and the first checkpoint after it copies them all; background work in batches waits
    /// instead of adding to them (`FlagshipDatabase.Pacing`). Never once no checkpoint runs here
    /// any more (closed, or the file damaged), which nothing would then end.
    var isHeldBackByAReader: Bool {
        state.withLock { state in
            !state.closed && !state.stopped && state.leftFrames && state.walPages >= threshold * Self.writerCheckpointThresholds
        }
    }

    /// Asks for a checkpoint here now, whatever the WAL's size (one already asked for or
    /// running does).
    func checkpointSoon() {
        let start = state.withLock { state -> Bool in
            guard !state.closed, !state.stopped, !state.pending else { return false }
            return Self.ask(&state)
        }
        if start { queue.async(group: drains) { [self] in drain() } }
    }

    /// Marks a checkpoint asked for; returns whether a block must be set going to run it (a
    /// block already set going runs it once its own ends).
    private static func ask(_ state: inout State) -> Bool {
        state.pending = true
        guard !state.draining else { return false }
        state.draining = true
        return true
    }

    /// The connection for the checkpoint asked for, marked running; `nil` (and the block ends)
    /// when none is asked for, or none may run any more.
    private func nextCheckpoint() -> OpaquePointer? {
        state.withLock { state -> OpaquePointer? in
            guard state.pending, !state.closed, !state.stopped else {
                state.pending = false
                state.draining = false
                return nil
            }
            state.pending = false
            assert(!state.running, "one checkpoint at a time on the checkpointing connection")
            if state.handle == nil {
                state.handle = open()
                if state.handle == nil { state.stopped = true }
            }
            state.running = state.handle != nil
            if state.handle == nil { state.draining = false }
            return state.handle
        }
    }

    /// The WAL's size, in thresholds, past which the commit that takes it there checkpoints the
    /// whole WAL itself (see `committed`).
    static let writerCheckpointThresholds: Int32 = 8

    /// Whether a write of `pages` more WAL frames, made now, could take the WAL to where its
    /// commit checkpoints it itself (`writerCheckpointThresholds`) while a checkpoint is still
    /// queued or under way. A writer that can wait (background work in batches) lets that
    /// checkpoint finish first; while its next batch fits below that point, it goes on, and the
    /// checkpoint copies the frames meanwhile.
    func wouldFallBehind(writing pages: Int32) -> Bool {
        state.withLock { state in
            Self.fallsBehind(walPages: state.walPages, writing: pages, checkpointing: state.pending || state.running,
                             threshold: threshold)
        }
    }

    /// The rule of `wouldFallBehind`: a checkpoint queued or under way, and the WAL's `walPages`
    /// and the `writing` frames to come reaching `writerCheckpointThresholds` thresholds.
    static func fallsBehind(walPages: Int32, writing: Int32, checkpointing: Bool, threshold: Int32) -> Bool {
        checkpointing && Int64(walPages) + Int64(max(0, writing)) >= Int64(threshold) * Int64(writerCheckpointThresholds)
    }

    /// The WAL's size after the last commit, in pages.
    var walPages: Int32 {
        state.withLock { $0.walPages }
    }

    private func open() -> OpaquePointer? {
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        guard code == SQLITE_OK, let handle else {
            sqlite3_close_v2(handle)
            return nil
        }
        // Closing it never checkpoints: the writer's connection, closed last, decides that.
        csqlite_disable_checkpoint_on_close(handle)
        sqlite3_busy_timeout(handle, 100)
        sqlite3_exec(handle, "PRAGMA synchronous = \(synchronous.rawValue)", nil, nil, nil)
        return handle
    }

    /// The file met damage: no checkpoint copies anything into it any more.
    func stop() {
        state.withLock { $0.stopped = true }
    }

    /// Checkpoints run here so far: for tests.
    var checkpoints: Int {
        state.withLock { $0.checkpoints }
    }

    /// Waits for a checkpoint under way, then closes the connection (without a checkpoint). Safe
    /// to call twice.
    func close() {
        state.withLock { $0.closed = true }
        drains.wait()
        let handle = state.withLock { state -> OpaquePointer? in
            defer { state.handle = nil }
            return state.handle
        }
        if let handle { sqlite3_close_v2(handle) }
    }
}
