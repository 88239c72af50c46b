import Foundation
import XCTest

/// The built `flagship` binary, run as a subprocess the way a user runs it.
enum FlagshipExecutable {
    struct Result {
        let status: Int32
        /// Killed by a signal (`status` is then its number), not exited.
        let signaled: Bool
        let stdout: String
        let stderr: String
    }

    /// Runs `flagship arguments`, its output captured in files under `outputDirectory`
    /// (files, unlike pipes, never fill up and block the child), and kills it after `timeout`.
    /// `environment`: the child's whole environment (default: this process's).
    static func run(_ arguments: [String], outputDirectory: URL, timeout: TimeInterval = 60, executable: String = "flagship",
                    environment: [String: String]? = nil, shellPrefix: String? = nil, readOnlyDirectory: URL? = nil) throws -> Result {
        try start(arguments, outputDirectory: outputDirectory, executable: executable, environment: environment, shellPrefix: shellPrefix,
                  readOnlyDirectory: readOnlyDirectory)
            .waitForExit(timeout: timeout)
    }

    /// Starts `flagship arguments` without waiting for it: its output can be read while it runs.
    /// `shellPrefix` (`ulimit -f 100`, say) runs in `/bin/sh` first, which then execs the tool.
    /// `readOnlyDirectory`: the tool runs in a mount namespace of its own where that directory is
    /// mounted read-only (as root: `unshare --mount`), so that not even root can write there.
    static func start(_ arguments: [String], outputDirectory: URL, executable: String = "flagship",
                      environment: [String: String]? = nil, shellPrefix: String? = nil,
                      readOnlyDirectory: URL? = nil) throws -> Running {
        let process = Process()
        let tool = try location(of: executable)
        if let readOnlyDirectory {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            let script = #"d="$1"; shift; mount --bind "$d" "$d" && mount -o remount,bind,ro "$d" && exec "$0" "$@""#
            process.arguments = ["--mount", "--propagation", "private", "/bin/sh", "-c", script, tool.path, readOnlyDirectory.path] + arguments
        } else if let shellPrefix {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", shellPrefix + "; exec \"$0\" \"$@\"", tool.path] + arguments
        } else {
            process.executableURL = tool
            process.arguments = arguments
        }
        if let environment { process.environment = environment }
        let name = UUID().uuidString
        let stdoutURL = outputDirectory.appendingPathComponent("\(name).stdout")
        let stderrURL = outputDirectory.appendingPathComponent("\(name).stderr")
        for url in [stdoutURL, stderrURL] {
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw Failure("cannot create \(url.path)")
            }
        }
        let stdout = try FileHandle(forWritingTo: stdoutURL)
        let stderr = try FileHandle(forWritingTo: stderrURL)
        // The child has its own descriptors once started.
        defer {
            try? stdout.close()
            try? stderr.close()
        }
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        return Running(process: process, arguments: arguments, stdoutURL: stdoutURL, stderrURL: stderrURL)
    }

    /// A `flagship` process under way.
    struct Running {
        let process: Process
        let arguments: [String]
        let stdoutURL: URL
        let stderrURL: URL

        /// What it has printed on stdout so far.
        func stdoutSoFar() throws -> String {
            try String(contentsOf: stdoutURL, encoding: .utf8)
        }

        /// Sends `signal` (SIGKILL: no handler, no flush, no clean-up).
        func kill(_ signal: Int32 = SIGKILL) {
            _ = Foundation.kill(process.processIdentifier, signal)
        }

        /// Waits for the process to end, and kills it after `timeout`.
        func waitForExit(timeout: TimeInterval = 60) throws -> Result {
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning {
                guard Date() < deadline else {
                    process.terminate()
                    process.waitUntilExit()
                    let printed = (try? stdoutSoFar()) ?? ""
                    let said = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
                    throw Failure("flagship \(arguments.joined(separator: " ")) did not finish within \(timeout) s; stdout:\n\(printed)\nstderr:\n\(said)")
                }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return Result(
                status: process.terminationStatus,
                signaled: process.terminationReason == .uncaughtSignal,
                stdout: try stdoutSoFar(),
                stderr: try String(contentsOf: stderrURL, encoding: .utf8)
            )
        }
    }

    /// `flagship` (or `flagship-torture`) sits in the products directory with the test bundle:
    /// on Linux the runner executable itself is `<products>/<package>PackageTests.xctest`; on
    /// macOS the `.xctest` bundle is a directory there. `FLAGSHIP_EXECUTABLE` overrides the
    /// search for `flagship`; a path (`/...`) names the executable itself.
    static func location(of name: String = "flagship") throws -> URL {
        let fileManager = FileManager.default
        if name.hasPrefix("/") { return URL(fileURLWithPath: name) }
        if name == "flagship", let override = ProcessInfo.processInfo.environment["FLAGSHIP_EXECUTABLE"], !override.isEmpty {
            return URL(fileURLWithPath: override)
        }
        var directories = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL,
            Bundle.main.executableURL?.deletingLastPathComponent(),
        ].compactMap { $0 }
        directories += Bundle.allBundles.filter { $0.bundlePath.hasSuffix(".xctest") }.map { $0.bundleURL.deletingLastPathComponent() }
        for directory in directories {
            let candidate = directory.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            if fileManager.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
               fileManager.isExecutableFile(atPath: candidate.path) {
                return candidate
            }
        }
        throw Failure("no \(name) executable in \(directories.map(\.path)); build it (swift build --build-tests)")
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String

        init(_ description: String) {
            self.description = description
        }
    }
}
