#if Postgres
import Foundation
import PostgresTestSupport
import XCTest

/// The tests' own PostgreSQL servers never outlive the process that started them: one killed by a
/// signal (`make test` interrupted, SIGKILL) leaves no server running and no data folder behind.
final class TemporaryPostgresTests: XCTestCase {
    private static let childVariable = "FLAGSHIP_POSTGRES_ORPHAN_REPORT"

    /// As the child (the variable set): starts a server, says where, and waits to be killed.
    private func actAsTheChild(reportingTo path: String) throws {
        let server = try TemporaryPostgres()
        try "\(server.directory.path) \(server.port)".write(toFile: path, atomically: true, encoding: .utf8)
        Thread.sleep(forTimeInterval: 120)
    }

    private func isListening(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    func testTheServerOfAProcessKilledByASignalIsStoppedAndItsFilesRemoved() throws {
        if let report = ProcessInfo.processInfo.environment[Self.childVariable] {
            return try actAsTheChild(reportingTo: report)
        }
        guard TemporaryPostgres.binaries() != nil else {
            if TemporaryPostgres.isRequired { XCTFail("PostgreSQL is required here (FLAGSHIP_REQUIRE_POSTGRES=1)") }
            throw XCTSkip("no PostgreSQL binaries")
        }
        // SIGTERM and SIGKILL: a job a shell started in the background (as `make test` runs the
        // suite) ignores SIGINT, and so do its children.
        for signal in [SIGTERM, SIGKILL] {
            let report = FileManager.default.temporaryDirectory.appendingPathComponent("orphan-\(UUID().uuidString)").path
            // Spawned and reaped by hand: Foundation's `Process` on Linux waits for an exit its
            // own monitor may never see once the child is killed.
            let pid = try TemporaryPostgres.spawn(ProcessInfo.processInfo.arguments[0],
                                ["FlagshipPostgresTests.TemporaryPostgresTests/testTheServerOfAProcessKilledByASignalIsStoppedAndItsFilesRemoved"],
                                environment: [Self.childVariable: report])
            let started = Date()
            while !FileManager.default.fileExists(atPath: report), Date().timeIntervalSince(started) < 60 { Thread.sleep(forTimeInterval: 0.1) }
            let fields = try String(contentsOfFile: report, encoding: .utf8).split(separator: " ")
            try? FileManager.default.removeItem(atPath: report)
            let (directory, port) = (String(fields[0]), Int(fields[1]) ?? 0)
            XCTAssertTrue(isListening(port), "the child's server runs")

            kill(pid, signal)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}

            let killed = Date()
            while (FileManager.default.fileExists(atPath: directory) || isListening(port)), Date().timeIntervalSince(killed) < 20 {
                Thread.sleep(forTimeInterval: 0.2)
            }
            XCTAssertFalse(isListening(port), "signal \(signal): the server is stopped")
            XCTAssertFalse(FileManager.default.fileExists(atPath: directory), "signal \(signal): its files are removed")
        }
    }
}
#endif
