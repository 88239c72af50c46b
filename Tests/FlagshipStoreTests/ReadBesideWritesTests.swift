import Foundation
import XCTest

import FlagshipStore

/// A lookup on the store's read-only connection runs beside a write transaction of the same
/// process instead of waiting for it, and reads only what was committed.
final class ReadBesideWritesTests: StoreTestCase {
    func testALookupDoesNotWaitForAWriteTransactionAndSeesOnlyWhatWasCommitted() throws {
        let store = try openStore()
        try store.write { try $0.visitors.save([.sample("committed")]) }
        let writing = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let written = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? store.write { connection in
                try connection.visitors.save([.sample("uncommitted")])
                writing.signal()
                release.wait()
            }
            written.signal()
        }
        writing.wait()

        let started = Date()
        let (committed, uncommitted) = try store.readBesideWrites {
            (try $0.visitors.visitor(id: "committed"), try $0.visitors.visitor(id: "uncommitted"))
        }
        let waited = Date().timeIntervalSince(started)
        release.signal()
        written.wait()

        XCTAssertLessThan(waited, 0.5, "the read waited for the write transaction")
        XCTAssertNotNil(committed)
        XCTAssertNil(uncommitted, "a transaction not yet committed is not read")
        XCTAssertNotNil(try store.readBesideWrites { try $0.visitors.visitor(id: "uncommitted") }, "read once committed")
    }

    func testAnInMemoryStoreReadsThroughItsOneConnection() throws {
        let store = try FlagshipDatabase.inMemory(now: { fixedNow })
        defer { store.close() }
        try store.write { try $0.visitors.save([.sample("v")]) }
        XCTAssertNotNil(try store.readBesideWrites { try $0.visitors.visitor(id: "v") })
    }
}
