import Foundation
import XCTest

import FlagshipStore

/// Many writers on one `FlagshipDatabase`, and several connections on one file, lose and
/// duplicate nothing.
final class ConcurrencyTests: StoreTestCase {
    func testEightThreadsInsertingAndDeletingOnOneDatabaseLoseAndDuplicateNothing() throws {
        let store = try openStore()
        let deadline = ContinuousClock.now + .seconds(2)
        let outcomes = Locked([WorkerOutcome](repeating: WorkerOutcome(), count: 8))

        onThreads(8) { worker in
            var outcome = WorkerOutcome()
            do {
                while ContinuousClock.now < deadline {
                    let round = outcome.rounds
                    // Equal creation times across workers: paging must break the ties by id.
                    let batch = (0..<10).map { HitRecord.sample("w\(worker)-r\(round)-\($0)", visitorId: "worker-\(worker)", createdAt: Int64(round)) }
                    try store.write { try $0.hits.insert(batch) }
                    let doomed = stride(from: 0, to: 10, by: 3).map { batch[$0].id }
                    let deleted = try store.write { try $0.hits.delete(ids: doomed + ["worker-\(worker):never-inserted"]) }
                    if deleted != doomed.count { outcome.problems.append("round \(round) deleted \(deleted) of \(doomed.count)") }
                    outcome.remaining.formUnion(batch.map(\.id))
                    outcome.remaining.subtract(doomed)
                    if round % 16 == 0 { _ = try store.read { try $0.hits.page(limit: 100) } }
                    outcome.rounds += 1
                }
            } catch {
                outcome.problems.append("\(error)")
            }
            outcomes.withLock { $0[worker] = outcome }
        }

        let results = outcomes.withLock { $0 }
        XCTAssertEqual(results.flatMap(\.problems), [])
        for (worker, result) in results.enumerated() {
            XCTAssertGreaterThan(result.rounds, 0, "worker \(worker) never ran")
        }
        let expected = results.reduce(into: Set<String>()) { $0.formUnion($1.remaining) }
        let stored = try store.read { try $0.hits.allIds() }
        XCTAssertEqual(stored.count, expected.count, "no row lost, none duplicated")
        XCTAssertEqual(Set(stored), expected)
        XCTAssertEqual(try store.read { try $0.hits.count() }, expected.count)
        XCTAssertEqual(expected.count, results.reduce(0) { $0 + $1.rounds * 6 })
    }

    func testTwoConnectionsOnOneFileWriteConcurrentlyWithinTheBusyTimeout() throws {
        let connections = [try openStore(), try openStore()]
        let deadline = ContinuousClock.now + .seconds(1)
        let outcomes = Locked([WorkerOutcome](repeating: WorkerOutcome(), count: 4))

        onThreads(4) { worker in
            let store = connections[worker % 2]
            var outcome = WorkerOutcome()
            do {
                while ContinuousClock.now < deadline {
                    let hit = HitRecord.sample("c\(worker)-\(outcome.rounds)", createdAt: Int64(outcome.rounds))
                    try store.write { try $0.hits.insert([hit]) }
                    outcome.remaining.insert(hit.id)
                    outcome.rounds += 1
                }
            } catch {
                outcome.problems.append("\(error)")
            }
            outcomes.withLock { $0[worker] = outcome }
        }

        let results = outcomes.withLock { $0 }
        XCTAssertEqual(results.flatMap(\.problems), [], "no SQLITE_BUSY within the busy timeout")
        for (worker, result) in results.enumerated() {
            XCTAssertGreaterThan(result.rounds, 0, "worker \(worker) never ran")
        }
        let expected = results.reduce(into: Set<String>()) { $0.formUnion($1.remaining) }
        for connection in connections {
            let stored = try connection.read { try $0.hits.allIds() }
            XCTAssertEqual(stored.count, expected.count)
            XCTAssertEqual(Set(stored), expected)
        }
    }

    func testConnectionsInsertingAnAbsentStateValueAtOnceAllGetTheSameOne() throws {
        let connections = [try openStore(), try openStore()]
        let answers = Locked([String?](repeating: nil, count: 8))
        let problems = Locked([String]())

        onThreads(8) { worker in
            do {
                let value = try connections[worker % 2].write { try $0.state.valueInsertingIfAbsent("anon-\(worker)", forKey: "anonymous_id", now: 1) }
                answers.withLock { $0[worker] = value }
            } catch {
                problems.withLock { $0.append("\(error)") }
            }
        }

        XCTAssertEqual(problems.withLock { $0 }, [])
        let stored = try XCTUnwrap(try connections[0].read { try $0.state.value(forKey: "anonymous_id") })
        XCTAssertEqual(answers.withLock { $0 }, Array(repeating: stored, count: 8))
    }

    func testConnectionsOpeningOneNewFileAtOnceApplyEachMigrationOnce() throws {
        let url = url()
        let opened = Locked([FlagshipDatabase]())
        let problems = Locked([String]())

        onThreads(4) { _ in
            do {
                let store = try FlagshipDatabase.open(at: url, now: { fixedNow })
                opened.withLock { $0.append(store) }
            } catch {
                problems.withLock { $0.append("\(error)") }
            }
        }

        let stores = opened.withLock { $0 }
        defer { stores.forEach { $0.close() } }
        XCTAssertEqual(problems.withLock { $0 }, [])
        XCTAssertEqual(stores.count, 4)
        XCTAssertEqual(stores.filter { $0.opening.fromVersion == 0 }.count, 1, "one of them created the schema")
        XCTAssertEqual(stores.compactMap(\.opening.movedAside).count, 0)
        let versions = try XCTUnwrap(stores.first).database.column("SELECT version FROM schema_migrations ORDER BY version")
        XCTAssertEqual(versions, Migrator().migrations.map { .integer(Int64($0.version)) })
    }
}

/// What one thread of a concurrency test did.
private struct WorkerOutcome: Sendable {
    var rounds = 0
    /// The ids this thread inserted and did not delete.
    var remaining = Set<String>()
    var problems: [String] = []
}
