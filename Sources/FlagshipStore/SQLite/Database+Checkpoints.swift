import Foundation

/// What background work in batches learns of the WAL's checkpoints (`checkpointInBackground`), to
/// pace itself (`FlagshipDatabase.Pacing`).
extension Database {
    /// Whether a write of about `pages` WAL frames, committed now, could leave the background
    /// checkpointer (`checkpointInBackground`) behind: a checkpoint queued or under way, and the
    /// WAL and those frames reaching eight thresholds, where the commit checkpoints the whole WAL
    /// itself. Background work in batches waits while this holds before its next batch, so that
    /// no commit of it ever checkpoints, and goes on while its batch fits: the batches and the
    /// checkpoints overlap. `false` without a checkpointer.
    package func checkpointWouldFallBehind(writing pages: Int) -> Bool {
        checkpointer.withLock { $0 }?.wouldFallBehind(writing: Int32(clamping: pages)) ?? false
    }

    /// Whether a read keeps the background checkpoints from copying a WAL grown past the point
    /// where commits checkpoint it themselves (`BackgroundCheckpointer.isHeldBackByAReader`);
    /// `false` without a background checkpointer.
    package var checkpointsHeldBackByAReader: Bool {
        checkpointer.withLock { $0 }?.isHeldBackByAReader ?? false
    }

    /// Asks the background checkpointer for a checkpoint now; nothing without one.
    package func checkpointSoon() {
        checkpointer.withLock { $0 }?.checkpointSoon()
    }

    /// The WAL's size after the last commit, in pages, and the pages it grows by between two
    /// checkpoints asked for; `nil` without a background checkpointer.
    package var walProgress: (pages: Int, pagesPerCheckpoint: Int)? {
        checkpointer.withLock { $0 }.map { (Int($0.walPages), Int($0.threshold)) }
    }
}
