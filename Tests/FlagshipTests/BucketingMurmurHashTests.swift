import XCTest

@testable import Flagship

final class BucketingMurmurHashTests: XCTestCase {
    /// The vectors BUCKETING.md gives, over UTF-8 bytes.
    func testHashOfSpecVectors() {
        XCTAssertEqual(MurmurHash3.x86_32(Array("123visitor_1".utf8)), 3_635_969_351)
        XCTAssertEqual(MurmurHash3.x86_32(Array("9273BKSDJtoto123456".utf8)), 2_207_745_127)
        XCTAssertEqual(MurmurHash3.x86_32(Array("vgidflagship@abtast.com".utf8)), 1_551_214_225)
        XCTAssertEqual(MurmurHash3.x86_32(Array("vgidéééàëééééé".utf8)), 1_846_876_870)
    }

    func testHashOfNothingWithSeedZeroIsZero() {
        XCTAssertEqual(MurmurHash3.x86_32([UInt8]()), 0)
    }

    func testSeedChangesTheHash() {
        // Reference values of MurmurHash3_x86_32 for the empty input.
        XCTAssertEqual(MurmurHash3.x86_32([UInt8](), seed: 1), 0x514E_28B7)
        XCTAssertEqual(MurmurHash3.x86_32([UInt8](), seed: 0xFFFF_FFFF), 0x81F1_6F39)
    }

    func testTwoStringsHashLikeTheirConcatenation() {
        XCTAssertEqual(MurmurHash3.x86_32(utf8Of: "123", followedBy: "visitor_1"), 3_635_969_351)
        XCTAssertEqual(MurmurHash3.x86_32(utf8Of: "vgid", followedBy: "éééàëééééé"), 1_846_876_870)
        XCTAssertEqual(MurmurHash3.x86_32(utf8Of: "", followedBy: "123visitor_1"), 3_635_969_351)
        XCTAssertEqual(MurmurHash3.x86_32(utf8Of: "123visitor_1", followedBy: ""), 3_635_969_351)
    }

    /// Every split of the input into two pieces (each tail length, each block boundary) hashes the same.
    func testHashDoesNotDependOnHowTheBytesArriveInPieces() {
        let text = "c20j8bk3fk9hdphqtd2gvisitor_éà_0123456789"
        let whole = MurmurHash3.x86_32(Array(text.utf8))
        let bytes = Array(text.utf8)
        for split in 0...bytes.count {
            var state = MurmurHash3.State()
            state.append(bytes[..<split])
            state.append(bytes[split...])
            XCTAssertEqual(state.finalized(), whole, "split at byte \(split)")
        }
        var byteByByte = MurmurHash3.State()
        for byte in bytes { byteByByte.append(byte) }
        XCTAssertEqual(byteByByte.finalized(), whole)
    }

    /// A sequence without contiguous storage takes the byte-by-byte path.
    func testHashOfANonContiguousSequence() {
        XCTAssertEqual(MurmurHash3.x86_32("123visitor_1".utf8.lazy.map { $0 }), 3_635_969_351)
        XCTAssertEqual(MurmurHash3.x86_32(AnySequence("9273BKSDJtoto123456".utf8)), 2_207_745_127)
    }

    func testConformanceVectors() throws {
        let document = try Conformance.bucketingDocument("bucketing-cases.json")
        guard case .array(let vectors)? = document["murmur3_x86_32_seed0"], !vectors.isEmpty else {
            return XCTFail("bucketing-cases.json has no murmur3_x86_32_seed0 vectors")
        }
        for vector in vectors {
            guard let input = vector["input"]?.stringValue, let expected = vector["hash"]?.int64Value else {
                XCTFail("unreadable vector \(vector.jsonString())")
                continue
            }
            XCTAssertEqual(Int64(MurmurHash3.x86_32(Array(input.utf8))), expected, "murmur vector \"\(input)\"")
        }
    }
}
