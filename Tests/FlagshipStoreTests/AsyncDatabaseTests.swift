import Foundation
import XCTest

import FlagshipStore

/// A read that would run for minutes: what a cancellation must interrupt.
private let countToTenBillion = """
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000000)
    SELECT count(*) FROM n
    """

/// `Database.read` and `write` from async code run on the store's own queue: a statement that
/// waits for another process's lock holds no thread of Swift's cooperative pool.
final class AsyncDatabaseTests: StoreTestCase {
    func testAsyncWritesWaitingForALockedFileLeaveThePoolFree() async throws {
        let path = url().path
        let database = try Database(path: path, options: DatabaseOptions(busyTimeoutMilliseconds: 3_000))
        defer { database.close() }
        try await database.write { try $0.execute("CREATE TABLE t (x INTEGER NOT NULL)") }
        let other = try Database(path: path)
        defer { other.close() }
        try other.withConnection { _ = try $0.execute("BEGIN IMMEDIATE") }

        // More waiting writes than the pool has threads: with the synchronous form each would
        // hold one, and the task below could not run until the lock was released.
        let writes = (0..<(ProcessInfo.processInfo.activeProcessorCount * 4)).map { number in
            Task { try await database.write { try $0.execute("INSERT INTO t (x) VALUES (?)", [.integer(Int64(number))]) } }
        }
        let started = ContinuousClock.now
        await Task.detached { }.value
        XCTAssertLessThan(ContinuousClock.now - started, .milliseconds(1_000), "a task waited for the store's lock")

        try other.withConnection { _ = try $0.execute("COMMIT") }
        for write in writes { _ = try await write.value }
        let count = try await database.read { try $0.scalar("SELECT count(*) FROM t")?.int64 }
        XCTAssertEqual(count, Int64(writes.count))
    }

    func testAnAsyncWriteIsOneTransaction() async throws {
        let database = try Database(path: url().path)
        defer { database.close() }
        try await database.write { try $0.execute("CREATE TABLE t (x INTEGER NOT NULL CHECK (x < 3))") }
        do {
            try await database.write { connection in
                for value in 0..<5 { try connection.execute("INSERT INTO t (x) VALUES (?)", [.integer(Int64(value))]) }
            }
            XCTFail("the CHECK must refuse 3")
        } catch {}
        let count = try await database.read { try $0.scalar("SELECT count(*) FROM t")?.int64 }
        XCTAssertEqual(count, 0, "all of it or none of it")
    }

    func testAnAsyncCallInsideATransactionIsATypedErrorNotADeadlock() async throws {
        let database = try Database(path: url().path)
        defer { database.close() }
        do {
            _ = try await database.write { _ in try database.read { _ in 1 } }
            XCTFail("a nested transaction on the same database must be refused")
        } catch {
            XCTAssertEqual(error as? StoreError, .reentrantAccess(path: database.path))
        }
    }

    // MARK: Cancellation

    /// A read that would run for minutes (a recursive count to 10^10), cancelled while it runs:
    /// its statement is interrupted and it throws `CancellationError` at once; the connection
    /// serves the next call.
    func testACancelledReadIsInterruptedWhileItRuns() async throws {
        let database = try Database(path: url().path)
        defer { database.close() }
        let long = try await longRead { try await database.read($0) }
        try await Task.sleep(for: .milliseconds(50))
        let cancelledAt = ContinuousClock.now
        long.cancel()
        await assertCancelled(long, "the read ran to its end")
        XCTAssertLessThan(ContinuousClock.now - cancelledAt, .seconds(2), "stopped at once")
        let next = try await database.read { try $0.scalar("SELECT 41 + 1")?.int64 }
        XCTAssertEqual(next, 42, "the connection serves the next call")
    }

    /// A write cancelled while it runs is rolled back whole; one cancelled while it waits for its
    /// turn on the store's queue never runs.
    func testACancelledWriteLeavesNothingAndAQueuedOneNeverRuns() async throws {
        let database = try Database(path: url().path)
        defer { database.close() }
        try await database.write { try $0.execute("CREATE TABLE t (x INTEGER NOT NULL)") }
        let started = Locked(false)
        let ran = Locked(false)
        let long = Task {
            try await database.write { connection in
                try connection.execute("INSERT INTO t (x) VALUES (1)")
                started.withLock { $0 = true }
                _ = try connection.scalar(countToTenBillion)
            }
        }
        while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        // Queued behind the long write on the store's serial queue.
        let queued = Task { try await database.write { connection in
            ran.withLock { $0 = true }
            try connection.execute("INSERT INTO t (x) VALUES (2)")
        } }
        try await Task.sleep(for: .milliseconds(50))
        queued.cancel()
        long.cancel()
        for task in [long, queued] {
            await assertCancelled(task, "a cancelled write completed")
        }
        XCTAssertFalse(ran.withLock { $0 }, "the queued write never ran")
        let count = try await database.read { try $0.scalar("SELECT count(*) FROM t")?.int64 }
        XCTAssertEqual(count, 0, "the interrupted write was rolled back")
    }

    /// A read beside the writes (on the read connection, as a fleet's local lookup reads)
    /// cancelled while it runs is interrupted, and one queued behind it never runs; a write
    /// committing on the store's own connection meanwhile is not stopped by either.
    func testACancelledReadBesideTheWritesIsInterruptedAndAQueuedOneNeverRuns() async throws {
        let database = try Database(path: url().path)
        defer { database.close() }
        try database.withConnection { _ = try $0.query("PRAGMA journal_mode = WAL") }
        database.openReader()
        try await database.write { try $0.execute("CREATE TABLE t (x INTEGER NOT NULL)") }
        let ran = Locked(false)
        let long = try await longRead { try await database.readBesideWrites($0) }
        let queued = Task {
            try await database.readBesideWrites { connection -> Int64? in
                ran.withLock { $0 = true }
                return try connection.scalar("SELECT count(*) FROM t")?.int64
            }
        }
        try await database.write { try $0.execute("INSERT INTO t (x) VALUES (1)") }
        try await Task.sleep(for: .milliseconds(50))
        let cancelledAt = ContinuousClock.now
        queued.cancel()
        long.cancel()
        for task in [long, queued] {
            await assertCancelled(task, "a cancelled read ran to its end")
        }
        XCTAssertLessThan(ContinuousClock.now - cancelledAt, .seconds(2), "stopped at once")
        XCTAssertFalse(ran.withLock { $0 }, "the queued read never ran")
        let count = try await database.readBesideWrites { try $0.scalar("SELECT count(*) FROM t")?.int64 }
        XCTAssertEqual(count, 1, "the write committed beside the read, and the read connection serves the next call")
    }

    /// A cancellation that comes once the call returned interrupts nothing: the synchronous
    /// writes of others on the same connection (a group commit) are never stopped by it.
    func testALateCancellationInterruptsNoOtherCall() async throws {
        let database = try Database(path: url().path)
        defer { database.close() }
        try await database.write { try $0.execute("CREATE TABLE t (x INTEGER NOT NULL)") }
        let done = Task { try await database.read { try $0.scalar("SELECT count(*) FROM t")?.int64 } }
        _ = try await done.value
        done.cancel()
        try writeSynchronously(database) { connection in
            for value in 0..<2_000 { try connection.execute("INSERT INTO t (x) VALUES (?)", [.integer(Int64(value))]) }
        }
        let count = try await database.read { try $0.scalar("SELECT count(*) FROM t")?.int64 }
        XCTAssertEqual(count, 2_000)
    }

    /// A task reading `countToTenBillion` through `read`, returned once its statement runs.
    private func longRead(
        _ read: @escaping @Sendable (@escaping @Sendable (Connection) throws -> Int64?) async throws -> Int64?
    ) async throws -> Task<Int64?, any Error> {
        let started = Locked(false)
        let long = Task {
            try await read { connection in
                started.withLock { $0 = true }
                return try connection.scalar(countToTenBillion)?.int64
            }
        }
        while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        return long
    }

    /// Awaits `task`, which must end in `CancellationError`; `message` if it returns.
    private func assertCancelled<T>(_ task: Task<T, any Error>, _ message: String,
                                    file: StaticString = #filePath, line: UInt = #line) async {
        do {
            _ = try await task.value
            XCTFail(message, file: file, line: line)
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)", file: file, line: line)
        }
    }
}

/// `Database.write`'s synchronous form, as a group commit calls it (a plain function, so that
/// Swift picks that overload from async code).
private func writeSynchronously(_ database: Database, _ body: (Connection) throws -> Void) throws {
    try database.write(body)
}
