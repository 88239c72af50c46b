import CSQLite
import Foundation

/// The full check (`PRAGMA quick_check`, every page) of a store too big to check on the start
/// path, run after opening on a connection of its own, on a serial queue of its own
/// (`io.flagship.store.check`).
///
/// What a crash can leave in a store in WAL mode is checked before use whatever the size (see
/// `FlagshipDatabase.boundedCheck`: the schema and the hits); the full check looks for damage from elsewhere (a disk, a
/// program writing into the file), which a crash only gives a reason to look for. It reads every
/// page of a file that may hold gigabytes, so it runs here while the SDK serves: on a read-only
/// connection (it blocks no writer; the WAL cannot be reset past its snapshot while it runs), and
/// interrupted by `close()` (`sqlite3_interrupt`), which waits for it to stop. Its outcome is told
/// to `ended` once, on the thread that ran it.
///
/// `@unchecked Sendable`: its state, the connection's handle included, is only read and written
/// under its lock; the handle is used by the one block `start()` sets going, but for
/// `sqlite3_interrupt`, which SQLite allows from any thread while the connection is open (it is
/// closed under the same lock).
package final class DeferredCheck: @unchecked Sendable {
    package enum Outcome: Sendable, Equatable {
        /// Every page read, and nothing wrong: how long it took.
        case passed(seconds: Double)
        /// SQLite's first findings (at most three).
        case damaged(String)
        /// `close()` came first: the check is still due at the next start.
        case interrupted
        /// The check could not run (the file could not be opened for it, say): still due.
        case failed(String)
    }

    private struct State {
        var handle: OpaquePointer?
        var closed = false
    }

    private let path: String
    /// The check, while it runs: what `close()` waits for.
    private let running = DispatchGroup()
    private let queue = StoreThreads.queue("io.flagship.store.check")
    private let state = Locked(State())
    private let ended: @Sendable (Outcome) -> Void
    /// Tests only: called once, on the check's thread, while its statement runs.
    private let whileChecking: OnceWhileChecking?

    /// - Parameter whileChecking: tests only: called once while the check's statement runs (from
    ///   SQLite's progress handler), so that a test can close the check at that moment.
    init(path: String, whileChecking: (@Sendable () -> Void)? = nil, ended: @escaping @Sendable (Outcome) -> Void) {
        self.path = path
        self.whileChecking = whileChecking.map(OnceWhileChecking.init)
        self.ended = ended
    }

    /// Whether `close()` has been called (and the check under way, if any, interrupted).
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Sets the check going; returns at once.
    func start() {
        queue.async(group: running) { [self] in ended(run()) }
    }

    private func run() -> Outcome {
        let started = ContinuousClock.now
        var opened: OpaquePointer?
        let code = sqlite3_open_v2(path, &opened, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        guard code == SQLITE_OK, let handle = opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "code \(code)"
            sqlite3_close_v2(opened)
            return .failed("the file could not be opened for the check: \(message)")
        }
        let admitted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.handle = handle
            return true
        }
        defer {
            state.withLock { $0.handle = nil }
            sqlite3_close_v2(handle)
        }
        guard admitted else { return .interrupted }
        csqlite_disable_checkpoint_on_close(handle)
        sqlite3_busy_timeout(handle, 5_000)
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, "PRAGMA main.quick_check(3)", -1, &statement, nil) == SQLITE_OK, let statement else {
            let message = String(cString: sqlite3_errmsg(handle))
            sqlite3_finalize(statement)
            return state.withLock({ $0.closed }) ? .interrupted : Self.outcome(ofFailure: message)
        }
        defer { sqlite3_finalize(statement) }
        if let whileChecking {
            let context = Unmanaged.passUnretained(whileChecking).toOpaque()
            sqlite3_progress_handler(handle, 100, { context in
                Unmanaged<OnceWhileChecking>.fromOpaque(context!).takeUnretainedValue().call()
                return 0
            }, context)
        }
        var findings: [String] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_ROW {
                if let text = sqlite3_column_text(statement, 0) { findings.append(String(cString: text)) }
                continue
            }
            if step == SQLITE_DONE { break }
            if step == SQLITE_INTERRUPT || state.withLock({ $0.closed }) { return .interrupted }
            return Self.outcome(ofFailure: String(cString: sqlite3_errmsg(handle)))
        }
        guard findings == ["ok"] else { return .damaged(findings.prefix(3).joined(separator: "; ")) }
        return .passed(seconds: (ContinuousClock.now - started).inSeconds)
    }

    /// An error that stopped the check: SQLite's "malformed" and kin are damage, others a failure.
    private static func outcome(ofFailure message: String) -> Outcome {
        let lowered = message.lowercased()
        return lowered.contains("malformed") || lowered.contains("not a database") || lowered.contains("corrupt")
            ? .damaged(message) : .failed(message)
    }

    /// Interrupts the check under way and waits for it to stop; safe to call twice.
    func close() {
        state.withLock { state in
            state.closed = true
            if let handle = state.handle { sqlite3_interrupt(handle) }
        }
        running.wait()
    }
}

/// A test's hook, called the first time SQLite's progress handler runs (`DeferredCheck`).
private final class OnceWhileChecking: Sendable {
    private let hook: @Sendable () -> Void
    private let called = Locked(false)

    init(_ hook: @escaping @Sendable () -> Void) { self.hook = hook }

    func call() {
        if called.setFirst() { hook() }
    }
}
