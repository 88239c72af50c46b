import Foundation
import XCTest

@testable import Flagship

final class HitIDTests: XCTestCase {
    func testAnIdIsTheVisitorIdAndAVersion7UUIDOfTheCreationTime() throws {
        let id = HitID.make(visitorId: "alice", createdAt: 1_763_700_000_123)

        XCTAssertTrue(id.hasPrefix("alice:"))
        let text = String(id.dropFirst("alice:".count))
        let uuid = try XCTUnwrap(UUID(uuidString: text), "a UUID: \(text)")
        XCTAssertEqual(uuid.uuidString.lowercased(), text)
        let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
        XCTAssertEqual(bytes[6] >> 4, 7, "version 7")
        XCTAssertEqual(bytes[8] >> 6, 0b10, "RFC 9562 variant")
        let millisecond = bytes[0..<6].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        XCTAssertEqual(millisecond, 1_763_700_000_123)
    }

    func testIdsMadeInOneMillisecondSortInTheOrderTheyWereMadeAndNeverRepeat() {
        let ids = (0..<1_000).map { _ in HitID.uuid(millisecond: 1_763_700_000_456) }

        XCTAssertEqual(Set(ids).count, 1_000)
        XCTAssertEqual(ids, ids.sorted(), "the 12-bit sequence starts below 2,048: room for 2,048 more in order")
        XCTAssertLessThan(HitID.uuid(millisecond: 1_763_700_000_456), HitID.uuid(millisecond: 1_763_700_000_457))
    }
}
