import Foundation
import XCTest

@testable import FlagshipStore

/// After a crash, a store larger than `fullCheckBeforeUseMaximumBytes` is checked before use
/// only where a crash can leave damage (schema, hits), and in full in the
/// background; what the full check finds is handled at the next start, as a damaged page met by a
/// statement is.
final class DeferredCheckTests: StoreTestCase {
    /// Every file is "large": the full check is always deferred.
    private var deferring: DatabaseOptions {
        var options = DatabaseOptions()
        options.fullCheckBeforeUseMaximumBytes = 0
        return options
    }

    private func open(_ options: DatabaseOptions) throws -> FlagshipDatabase {
        let store = try FlagshipDatabase.open(at: url(), options: options, now: { fixedNow })
        addTeardownBlock { store.close() }
        return store
    }

    /// A store that was open when its process died: its session's marker left in the file, which
    /// was checkpointed whole (so the file's pages are what a page edit below changes).
    private func crashedStore(hits: Int = 1) throws {
        let store = try FlagshipDatabase.open(at: url(), now: { fixedNow })
        try store.write { connection in
            for index in 0..<hits { try connection.hits.insert([.sample("h\(index)")]) }
        }
        store.close()
        let database = try rawDatabase()
        try database.write { connection in
            try connection.execute("INSERT INTO sdk_state (key, value, updated_at) VALUES (?, '0', 0)",
                                   [.text("store.session.\(try deadProcessId()).0000")])
        }
        database.close()
    }

    private func outcome(of store: FlagshipDatabase) -> DeferredCheck.Outcome? {
        let ended = expectation(description: "the deferred check ended")
        let seen = Locked<DeferredCheck.Outcome?>(nil)
        store.onDeferredCheckEnded { outcome in
            seen.withLock { $0 = outcome }
            ended.fulfill()
        }
        wait(for: [ended], timeout: 30)
        return seen.withLock { $0 }
    }

    private func stateValue(_ key: String, in store: FlagshipDatabase) throws -> String? {
        try store.read { try $0.scalar("SELECT value FROM sdk_state WHERE key = ?", [.text(key)])?.text }
    }

    func testALargeStoreAfterACrashIsCheckedInTheBackgroundAndNotAgainOnceThatPassed() throws {
        try crashedStore()
        let store = try open(deferring)
        XCTAssertNil(store.opening.fullCheck, "not read whole before use")
        let reason = try XCTUnwrap(store.opening.deferredCheck)
        XCTAssertTrue(reason.hasPrefix("the last session (pid"), reason)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["visitor-1:h0"], "served at once")

        guard case .passed? = outcome(of: store) else { return XCTFail("the full check passes on a sound file") }
        XCTAssertNil(try stateValue(StoreSessions.checkDueKey, in: store), "no longer due once passed")
        XCTAssertNotNil(try stateValue(StoreSessions.checkedKey, in: store))
        store.close()

        let reopened = try open(deferring)
        XCTAssertNil(reopened.opening.fullCheck)
        XCTAssertNil(reopened.opening.deferredCheck, "a clean close after a check that passed: none due")
    }

    func testADeferredCheckThatDidNotPassIsStillDueAtTheNextStart() throws {
        try crashedStore()
        let store = try open(deferring)
        XCTAssertNotNil(store.opening.deferredCheck)
        _ = outcome(of: store)
        // As if the process had died before the check passed: the mark the start left.
        try store.write { try $0.state.setValue("0", forKey: StoreSessions.checkDueKey, now: 0) }
        store.close()

        let small = try open(DatabaseOptions())
        XCTAssertEqual(small.opening.fullCheck, "a full check deferred at an earlier start has not passed yet",
                       "a file under the bound is then checked in full before use")
        small.close()
        XCTAssertNil(try open(DatabaseOptions()).opening.fullCheck, "and not again")
    }

    func testDamageTheFullCheckFindsInTheBackgroundMovesTheFileAsideAtTheNextStart() throws {
        try crashedStore()
        try zeroRootPage(of: "visitors_by_last_seen")
        let store = try open(deferring)
        XCTAssertNil(store.opening.movedAside, "a page no crash could have left damaged: found in the background")
        guard case .damaged(let findings)? = outcome(of: store) else { return XCTFail("the zeroed page is found") }
        XCTAssertFalse(findings.isEmpty)
        let mark = try String(contentsOfFile: url().path + "-damaged", encoding: .utf8)
        XCTAssertTrue(mark.contains("the full check found damage"), "marked as a damaged statement marks it: \(mark)")
        store.close()

        // Even a start that would defer the check again moves it aside.
        let next = try open(deferring)
        XCTAssertNotNil(next.opening.movedAside, "the next start moves it aside")
        XCTAssertEqual(try next.read { try $0.hits.allIds() }, ["visitor-1:h0"], "and copies what it still holds")
    }

    func testDamageWhereACrashCanLeaveItIsFoundBeforeUseWhateverTheSize() throws {
        try crashedStore(hits: 3)
        try zeroRootPage(of: "hits_by_visitor")
        let store = try open(deferring)
        let movedAside = try XCTUnwrap(store.opening.movedAside, "the hits are checked before they are replayed")
        XCTAssertTrue(movedAside.reason.contains("quick_check(hits)"), movedAside.reason)
        XCTAssertNil(store.opening.deferredCheck, "a new file: nothing left to check")
    }

    func testCloseInterruptsTheFullCheckAndLeavesItDue() throws {
        let store = try FlagshipDatabase.open(at: url(), now: { fixedNow })
        try store.write { connection in
            for index in 0..<500 {
                try connection.execute("INSERT INTO sdk_state (key, value, updated_at) VALUES (?, ?, 0)",
                                       [.text("filler.\(index)"), .text(String(repeating: "x", count: 3_000))])
            }
        }
        store.close()
        // The check is held inside its statement until close() has come: then it must stop.
        let checking = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let seen = Locked<[DeferredCheck.Outcome]>([])
        let check = DeferredCheck(path: url().path, whileChecking: { checking.signal(); proceed.wait() }) { outcome in
            seen.withLock { $0.append(outcome) }
        }
        check.start()
        XCTAssertEqual(checking.wait(timeout: .now() + 30), .success, "the check's statement runs")
        let closed = expectation(description: "close() returned")
        DispatchQueue.global().async {
            check.close()
            closed.fulfill()
        }
        while !check.isClosed { usleep(1_000) }
        proceed.signal()
        wait(for: [closed], timeout: 30)
        XCTAssertEqual(seen.withLock { $0 }, [.interrupted], "told once, interrupted")
        check.close()
    }
}
