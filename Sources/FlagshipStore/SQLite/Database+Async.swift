import CSQLite
import Foundation

/// `read` and `write` from async code: on the store's own serial queue, never on a thread of
/// Swift's cooperative pool (a statement may wait for another process's lock), and stopped by the
/// calling task's cancellation. A call cancelled while it waits for its turn never runs; one
/// cancelled while its statements run is interrupted (`sqlite3_interrupt`): its transaction is
/// rolled back, and it throws `CancellationError`. A call made with `cancellable: false` (what
/// must be recorded whatever becomes of its caller: what the sender delivered) ignores it.
extension Database {
    /// `read` from async code, on the store's queue, cancellable.
    package func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await read(cancellable: true, body)
    }

    /// `write` from async code: one write transaction on the store's queue, cancellable.
    @discardableResult
    package func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await write(cancellable: true, body)
    }

    /// `read` from async code, on the store's queue, cancellable or not.
    package func read<T: Sendable>(cancellable: Bool, _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        guard cancellable else { return try await queued { try self.read(body) } }
        return try await self.cancellable(on: executor, interrupter: interrupter) { call in
            try self.read { connection in try self.interrupter.running(call, on: connection) { try body(connection) } }
        }
    }

    /// `write` from async code: one write transaction on the store's queue, cancellable or not.
    @discardableResult
    package func write<T: Sendable>(cancellable: Bool, _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        guard cancellable else { return try await queued { try self.write(body) } }
        return try await self.cancellable(on: executor, interrupter: interrupter) { call in
            try self.write { connection in try self.interrupter.running(call, on: connection) { try body(connection) } }
        }
    }

    /// `readBesideWrites` from async code: on the read connection's own queue
    /// (`readerExecutor`), one read after the other as the connection takes them, cancellable as
    /// `read` is: so that neither a thread of Swift's pool nor a thread waiting for the
    /// connection's lock blocks.
    package func readBesideWrites<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await cancellable(on: readerExecutor, interrupter: readerInterrupter) { call in
            try self.readBesideWrites { connection in
                try self.readerInterrupter.running(call, on: connection) { try body(connection) }
            }
        }
    }

    /// `work` on the store's queue, after the calls queued before it, whatever the caller's task
    /// becomes: blocking work on this store (several transactions, or work around one) awaited
    /// from a task, off Swift's cooperative pool.
    package func queued<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            executor.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// `work` on `executor`'s queue, its statements run as `call` of `interrupter`'s connection: a
    /// cancellation before its turn keeps it from running, one during its statements interrupts
    /// them.
    private func cancellable<T: Sendable>(on executor: SerialQueueExecutor, interrupter: StatementInterrupter,
                                          _ work: @escaping @Sendable (StatementInterrupter.Call) throws -> T) async throws -> T {
        let call = StatementInterrupter.Call()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                executor.async {
                    continuation.resume(with: Result {
                        do {
                            return try work(call)
                        } catch StoreError.sqlite(let error) where error.code & 0xFF == SQLITE_INTERRUPT && call.isCancelled {
                            throw CancellationError()
                        }
                    })
                }
            }
        } onCancel: {
            interrupter.cancel(call)
        }
    }
}

/// Which async call's statements run on the connection now: the only ones a cancellation may
/// interrupt. `sqlite3_interrupt` stops whatever runs on a connection, and the connection is
/// shared (group commits, claims): the interrupt is sent only while the cancelled call holds it,
/// under the lock that call takes to let it go, so it can never land on another's statement.
final class StatementInterrupter: Sendable {
    /// One async call, cancelled or not.
    final class Call: Sendable {
        private let cancelled = Locked(false)

        var isCancelled: Bool { cancelled.withLock { $0 } }

        fileprivate func cancel() {
            cancelled.withLock { $0 = true }
        }
    }

    private struct Running: @unchecked Sendable {
        // `@unchecked`: the handle is only passed to `sqlite3_interrupt`, which SQLite allows
        // from any thread while the connection is open, and the connection stays open while
        // `call` holds it.
        let call: Call
        let handle: OpaquePointer
    }

    private let running = Locked<Running?>(nil)

    /// Runs `body` (the statements of `call`, which holds `connection`) as what a cancellation
    /// of `call` interrupts; a call cancelled before its turn does not run.
    func running<T>(_ call: Call, on connection: Connection, _ body: () throws -> T) throws -> T {
        // Checked under the lock a cancellation takes: cancelled before this, the call does not
        // run; after it, its statements are interrupted.
        let cancelledFirst = running.withLock { running -> Bool in
            guard !call.isCancelled else { return true }
            running = Running(call: call, handle: connection.handle)
            return false
        }
        guard !cancelledFirst else { throw CancellationError() }
        defer { running.withLock { $0 = nil } }
        return try body()
    }

    /// Marks `call` cancelled and, when its statements run now, interrupts them.
    func cancel(_ call: Call) {
        call.cancel()
        running.withLock { running in
            if let running, running.call === call { sqlite3_interrupt(running.handle) }
        }
    }
}
