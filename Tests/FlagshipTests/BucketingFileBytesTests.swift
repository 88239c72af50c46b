import Foundation
import XCTest

@testable import Flagship

/// The size limit of a bucketing file, and reading one from a file of any kind (issue 33, point 5).
final class BucketingFileBytesTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("bucketing-bytes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func testTheLimitIsTheDownloadsOne() {
        XCTAssertEqual(BucketingFile.maximumBytes, 10 * 1024 * 1024)
        XCTAssertEqual(BucketingFile.maximumBytes, URLSessionTransport.defaultMaxResponseBytes)
    }

    func testDataOverTheLimitIsRefusedWholeSayingWhy() {
        var data = Data(#"{"campaigns": []}"#.utf8)
        data.append(Data(repeating: 0x20, count: BucketingFile.maximumBytes - data.count))
        XCTAssertNoThrow(try BucketingFile(json: data), "exactly at the limit: read")
        data.append(0x20)
        XCTAssertThrowsError(try BucketingFile(json: data)) { error in
            XCTAssertEqual((error as? BucketingFileError)?.reason,
                           "the document is 10485761 bytes, over the 10485760 bytes (10 MiB) a bucketing file may be")
        }
    }

    func testARegularFileIsReadWhole() throws {
        let file = directory.appendingPathComponent("file.json")
        let bytes = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0) })
        try bytes.write(to: file)
        XCTAssertEqual(try BucketingFile.bytes(at: file), bytes)
        XCTAssertThrowsError(try BucketingFile.bytes(at: file, maximumBytes: 199_999)) { error in
            XCTAssertEqual((error as? BucketingFileError)?.reason,
                           "it is 200000 bytes, over the 199999 bytes a bucketing file may be")
        }
    }

    func testAFIFOIsReadToItsEndAndStopsAtTheLimit() throws {
        for (count, limit, readable) in [(150_000, 200_000, true), (250_000, 200_000, false)] {
            let fifo = directory.appendingPathComponent("fifo-\(count)")
            XCTAssertEqual(mkfifo(fifo.path, 0o600), 0)
            let bytes = Data(repeating: 0x7B, count: count)
            let writer = Thread {
                // Opens once the reader has; a reader that stops early makes this write fail (EPIPE), ignored.
                if let handle = FileHandle(forWritingAtPath: fifo.path) {
                    try? handle.write(contentsOf: bytes)
                    try? handle.close()
                }
            }
            signal(SIGPIPE, SIG_IGN)
            writer.start()
            if readable {
                XCTAssertEqual(try BucketingFile.bytes(at: fifo, maximumBytes: limit), bytes)
            } else {
                XCTAssertThrowsError(try BucketingFile.bytes(at: fifo, maximumBytes: limit)) { error in
                    XCTAssertEqual((error as? BucketingFileError)?.reason,
                                   "it is more than 200000 bytes, over the 200000 bytes a bucketing file may be")
                }
            }
        }
    }

    func testWhatCannotBeReadIsNamed() {
        XCTAssertThrowsError(try BucketingFile.bytes(at: directory.appendingPathComponent("missing.json"))) { error in
            XCTAssertEqual((error as? BucketingFileError)?.reason, "no such file")
        }
        XCTAssertThrowsError(try BucketingFile.bytes(at: directory)) { error in
            XCTAssertEqual((error as? BucketingFileError)?.reason, "it is a directory")
        }
    }
}
