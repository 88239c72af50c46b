import Dispatch
import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship

/// A fleet's lookup in its local file (made while PostgreSQL is away) reads beside the writes, as
/// the SQLite store's own lookups do: it does not wait for a group commit that holds the store.
final class LocalVisitorLookupTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var store: FlagshipDatabase!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        store = try FlagshipDatabase.open(at: directory.file("flagship.sqlite"))
    }

    override func tearDown() {
        store.close()
        directory.remove()
    }

    func testALocalLookupDoesNotWaitForAWriteUnderWay() async throws {
        let saved = VisitorRecord(visitorId: "ada", anonymousId: nil, consent: true, document: #"{"version": 1}"#, updatedAt: 1)
        try await store.write { try $0.visitors.save(saved) }
        let local = LocalHitsAndVisitors(hits: SQLiteHitQueue(store: store, capacity: 100, leaseDuration: 60, logger: Logger(label: "test")),
                                         store: store)
        let writing = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let held = DispatchGroup()
        DispatchQueue.global().async(group: held) { [store] in
            try? store!.write { connection in
                try connection.visitors.save(VisitorRecord(visitorId: "grace", anonymousId: nil, consent: true,
                                                           document: #"{"version": 2}"#, updatedAt: 2))
                writing.signal()
                _ = release.wait(timeout: .now() + 10)
            }
        }
        defer {
            release.signal()
            held.wait()
        }
        XCTAssertEqual(writing.wait(timeout: .now() + 5), .success, "the write did not start")

        let started = Date()
        let found = try await local.lookUpVisitor(id: "ada")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2, "the lookup waited for the write")
        XCTAssertEqual(found, saved)
        let uncommitted = try await local.lookUpVisitor(id: "grace")
        XCTAssertNil(uncommitted, "a document not committed yet is not read")
    }
}
