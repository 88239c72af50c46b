import FlagshipStore
import Foundation
import XCTest

/// Point 5 of the hardening issue: something other than a regular file at the store path is
/// refused at once, with the kind named, and left as it is.
final class HostileStorePathTests: XCTestCase {
    private var directory = URL(fileURLWithPath: "/nonexistent")

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-path-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
        try super.tearDownWithError()
    }

    func testAFIFOAtTheStorePathIsRefusedAtOnceByBothOpenings() throws {
        let fifo = directory.appendingPathComponent("flagship-env.sqlite")
        XCTAssertEqual(mkfifo(fifo.path, 0o600), 0)
        let openings: [@Sendable () throws -> FlagshipDatabase] = [
            { try FlagshipDatabase.open(at: fifo) }, { try FlagshipDatabase.openForInspection(at: fifo) },
        ]
        for opening in openings {
            let reason = Self.refusal(within: 10, opening)
            XCTAssertTrue(reason.contains("a FIFO (named pipe), not a store file"), reason)
        }
        XCTAssertEqual(try Self.kind(of: fifo), S_IFIFO, "the FIFO is left as it was")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["flagship-env.sqlite"])
    }

    func testADirectoryAtTheStorePathIsRefusedAndLeftInPlace() throws {
        let folder = directory.appendingPathComponent("flagship-env.sqlite")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let reason = Self.refusal(within: 10) { try FlagshipDatabase.open(at: folder) }
        XCTAssertTrue(reason.contains("a directory, not a store file"), reason)
        XCTAssertEqual(try Self.kind(of: folder), S_IFDIR)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), [], "nothing created inside it")
    }

    func testADeviceAtTheStorePathIsRefused() throws {
        let reason = Self.refusal(within: 10) { try FlagshipDatabase.openForInspection(at: URL(fileURLWithPath: "/dev/null")) }
        XCTAssertTrue(reason.contains("a character device, not a store file"), reason)
    }

    /// The `fileSystem` reason `body` throws, on a thread of its own: a regression that blocks
    /// (SQLite opening a FIFO waits for a writer forever) fails the test instead of hanging it.
    private static func refusal(within seconds: Int, _ body: @escaping @Sendable () throws -> FlagshipDatabase) -> String {
        let outcome = Locked<Result<FlagshipDatabase, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result = Result { try body() }
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + .seconds(seconds)) == .success, let result = outcome.withLock({ $0 }) else {
            XCTFail("opening did not return within \(seconds) s: it blocks on what is at the path")
            return ""
        }
        switch result {
        case .success(let store):
            store.close()
            XCTFail("opened a store that is not a regular file")
            return ""
        case .failure(let error):
            guard case .fileSystem(_, let reason)? = error as? StoreError else {
                XCTFail("expected StoreError.fileSystem, got \(error)")
                return ""
            }
            return reason
        }
    }

    private static func kind(of url: URL) throws -> mode_t {
        var status = stat()
        guard lstat(url.path, &status) == 0 else { throw NSError(domain: NSPOSIXErrorDomain, code: Int(errno)) }
        return status.st_mode & S_IFMT
    }
}

/// Point 1 of the hardening issue: a store path that is a symbolic link.
final class HostileSymbolicLinkTests: XCTestCase {
    private var directory = URL(fileURLWithPath: "/nonexistent")

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-link-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("real"), withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
        try super.tearDownWithError()
    }

    func testALinkToAStoreOpensTheStoreItPointsToAndLeavesTheLink() throws {
        let target = directory.appendingPathComponent("real/flagship-env.sqlite")
        let link = directory.appendingPathComponent("flagship-env.sqlite")
        let first = try FlagshipDatabase.open(at: target)
        try first.database.write { connection in
            try connection.execute("INSERT INTO sdk_state (key, value, updated_at) VALUES ('test.marker', 'kept', 1)")
        }
        first.close()
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)

        let store = try FlagshipDatabase.open(at: link)
        let marker = try store.database.read { try $0.scalar("SELECT value FROM sdk_state WHERE key = 'test.marker'")?.text }
        store.close()
        let inspected = try FlagshipDatabase.openForInspection(at: link)
        inspected.close()

        XCTAssertEqual(marker, "kept", "the target's data, not a new store")
        XCTAssertNil(store.opening.movedAside, "the link is not judged by its own size and moved aside")
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: link.path), target.path, "the link is still a link to the target")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted(), ["flagship-env.sqlite", "real"])
    }

    func testADanglingLinkIsRefusedAndNothingIsCreatedWhereItPoints() throws {
        let target = directory.appendingPathComponent("real/missing.sqlite")
        let link = directory.appendingPathComponent("flagship-env.sqlite")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)

        XCTAssertThrowsError(try FlagshipDatabase.open(at: link)) { error in
            guard case .fileSystem(_, let reason)? = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("a symbolic link to \(target.path), which does not exist"), reason)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.path), "no store created where the link points")
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: link.path), target.path)
    }
}
