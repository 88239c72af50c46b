import Foundation

/// Runs a program the way a reader runs a README example, but with no network: in a new network
/// namespace (`unshare --net`) that has only its own loopback, brought up, so a local server on
/// 127.0.0.1:8080 works and nothing reaches another host (a request to a public host fails at
/// once). A new PID namespace too, so a server the example starts in the background ends with it,
/// with its own `/proc` (`--mount-proc`): the Swift runtime reads `/proc/<tid>/stat`, and the
/// host's `/proc` seen from a new PID namespace names other processes (or none: a crash).
/// As root (CI) the namespaces are plain; otherwise `--map-root-user` makes them in a user namespace.
enum OfflineSandbox {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `program arguments` in `directory` with exactly `environment` (plus `/usr/sbin` and
    /// `/sbin` on its `PATH`, for `ip`), killing it and everything it started after `timeout`.
    static func run(_ program: String, _ arguments: [String] = [], in directory: URL,
                    environment: [String: String], timeout: TimeInterval) throws -> Result {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("offline-sandbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: output) }
        let stdoutURL = output.appendingPathComponent("stdout")
        let stderrURL = output.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)

        var environment = environment
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/sbin:/sbin"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["--net", "--pid", "--fork", "--kill-child", "--mount-proc"] + (getuid() == 0 ? [] : ["--map-root-user"])
            + ["/bin/sh", "-c", #"ip link set lo up && exec "$0" "$@""#, program] + arguments
        process.currentDirectoryURL = directory
        process.environment = environment
        // Files, unlike pipes, never fill up and block the child.
        let stdout = try FileHandle(forWritingTo: stdoutURL)
        let stderr = try FileHandle(forWritingTo: stderrURL)
        defer {
            try? stdout.close()
            try? stderr.close()
        }
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                process.terminate()   // unshare's --kill-child then kills the namespace's first process, and with it the rest
                process.waitUntilExit()
                let said = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
                throw Failure(description: "\(program) \(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s; stderr:\n\(said)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return Result(status: process.terminationStatus,
                      stdout: try String(contentsOf: stdoutURL, encoding: .utf8),
                      stderr: try String(contentsOf: stderrURL, encoding: .utf8))
    }

    /// Whether namespaces can be made here (`unshare` present and allowed).
    static var isAvailable: Bool {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return false }
        let directory = FileManager.default.temporaryDirectory
        return (try? run("/bin/true", in: directory, environment: ["PATH": "/usr/bin:/bin"], timeout: 10))?.status == 0
    }
}
