import Foundation

/// How a connection is opened and tuned.
package struct DatabaseOptions: Sendable, Equatable {
    /// `NORMAL` keeps every committed transaction through a process crash (WAL);
    /// `FULL` also through a power loss, at the price of an fsync per commit.
    package enum Synchronous: String, Sendable {
        case normal = "NORMAL"
        case full = "FULL"
    }

    package var synchronous: Synchronous = .normal
    /// How long a statement waits for another process's write lock before failing with `SQLITE_BUSY`.
    package var busyTimeoutMilliseconds: Int32 = 5_000
    /// Opens without any write: the file and its schema are never changed.
    package var readOnly = false
    /// Reads the file as one that nothing changes (SQLite's `immutable`): no lock, no `-wal`, no
    /// `-shm` created or read. Only for a file no connection has open (`readOnly` implied).
    package var immutable = false
    /// The page cache of a writable connection, in KiB (`PRAGMA cache_size`), at most: SQLite's
    /// default is 2,000 KiB. The group commits of a flow of new visitors dirty pages of indexes
    /// keyed by visitor (random pages of a large file), and a small cache reads them again from
    /// the file at each commit and spills them to the WAL mid-transaction: in the soak at 3,400
    /// visitors/s, 10 minutes held steady with 16 MiB where runs with the default stalled from
    /// about the third minute (`Benchmarks/README.md`).
    /// Read-only connections keep SQLite's default.
    package var writerCacheKibibytes = Self.defaultWriterCacheKibibytes
    package static let defaultWriterCacheKibibytes = 16_384
    /// After a crash, a file of at most this many bytes is checked in full (`PRAGMA quick_check`,
    /// every page) before use; a larger one gets the bounded check before use and the full check
    /// after it, in the background (`FlagshipDatabase.open`). 64 MiB read in about half a second here.
    package var fullCheckBeforeUseMaximumBytes: Int64 = 64 << 20

    package init(synchronous: Synchronous = .normal, busyTimeoutMilliseconds: Int32 = 5_000, readOnly: Bool = false,
                 immutable: Bool = false) {
        self.synchronous = synchronous
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.readOnly = readOnly || immutable
        self.immutable = immutable
    }
}
