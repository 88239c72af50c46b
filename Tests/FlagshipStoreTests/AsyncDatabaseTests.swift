import Foundation
import XCTest

import FlagshipStore

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
}
