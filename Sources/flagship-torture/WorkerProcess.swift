import FlagshipLocalServer
import Foundation

/// A `flagship-torture worker` child, its output in files (a file never fills up and blocks the
/// child the way a pipe can), killed with SIGKILL when its kill point comes.
struct WorkerProcess {
    let process: Process
    let stdoutURL: URL
    let stderrURL: URL

    static func start(executable: URL, arguments: [String], outputDirectory: URL, name: String) throws -> WorkerProcess {
        let stdoutURL = outputDirectory.appendingPathComponent("\(name).stdout")
        let stderrURL = outputDirectory.appendingPathComponent("\(name).stderr")
        for url in [stdoutURL, stderrURL] {
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw TortureFailure("cannot create \(url.path)")
            }
        }
        let stdout = try FileHandle(forWritingTo: stdoutURL)
        let stderr = try FileHandle(forWritingTo: stderrURL)
        defer {
            try? stdout.close()
            try? stderr.close()
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        return WorkerProcess(process: process, stdoutURL: stdoutURL, stderrURL: stderrURL)
    }

    /// The complete lines printed so far (a line the kill cut short is left out).
    func completeLines() -> [Substring] {
        guard let text = try? String(contentsOf: stdoutURL, encoding: .utf8) else { return [] }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()
        return lines
    }

    var stderrText: String {
        (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
    }

    /// How the process ended.
    enum Ending: Equatable {
        /// Killed by us at its kill point, as planned.
        case killed
        /// Ended on its own before its kill point (a crash, or an error it reported).
        case exited(status: Int32, bySignal: Bool)
        /// Did not reach its kill point in time (a `sendHit` that never returned): killed.
        case stalled
    }

    /// Waits for `point`, then sends SIGKILL (unless `killSwitch` already did) and reaps the process.
    /// Polls with `Task.sleep`: no thread of the cooperative pool (the server's too) is held.
    func kill(at point: KillPoint, killSwitch: KillSwitch, stallTimeout: TimeInterval) async -> Ending {
        let started = Date()
        let deadline = started.addingTimeInterval(stallTimeout)
        if case .whenServerAccepts(let batches) = point { killSwitch.arm(process.processIdentifier, afterAcceptedBatches: batches) }
        defer { killSwitch.disarm() }
        var ending: Ending = .killed
        while true {
            if point.isReached(elapsed: Date().timeIntervalSince(started), acknowledged: { acknowledgedCount() }, killSwitch: killSwitch) { break }
            if !process.isRunning { break }
            if Date() >= deadline {
                ending = .stalled
                break
            }
            await pause(microseconds: 500)
        }
        _ = Foundation.kill(process.processIdentifier, SIGKILL)
        await reaped()
        // Ended by itself: before the kill point, or between the last check and the signal.
        if process.terminationReason == .exit || process.terminationStatus != SIGKILL {
            return .exited(status: process.terminationStatus, bySignal: process.terminationReason == .uncaughtSignal)
        }
        return ending
    }

    /// Waits for the process to end by itself (a drain run), killing it after `timeout`.
    func waitForExit(timeout: TimeInterval) async -> Ending {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() >= deadline {
                _ = Foundation.kill(process.processIdentifier, SIGKILL)
                await reaped()
                return .stalled
            }
            await pause(microseconds: 2_000)
        }
        return .exited(status: process.terminationStatus, bySignal: process.terminationReason == .uncaughtSignal)
    }

    /// Returns once the process has ended and been reaped (`waitUntilExit` would block a thread).
    private func reaped() async {
        while process.isRunning { await pause(microseconds: 1_000) }
    }

    private func acknowledgedCount() -> Int {
        completeLines().reduce(0) { $0 + ($1.hasPrefix("ack ") ? 1 : 0) }
    }
}

/// When a worker is killed: after some of its hits were acknowledged (mid-traffic), after some
/// time from its start (which may fall in the SDK's start, its replay of earlier runs' hits, or
/// a fetch), or the moment the server has taken a batch of its hits and before the worker has
/// its answer (the batch in flight: those hits will be sent again).
enum KillPoint: Equatable, CustomStringConvertible {
    case afterAcknowledgements(Int)
    case afterMilliseconds(Int)
    case whenServerAccepts(batches: Int)

    static func random(using generator: inout some RandomNumberGenerator) -> KillPoint {
        switch Int.random(in: 0..<10, using: &generator) {
        case 0..<4: return .afterAcknowledgements(Int.random(in: 1...400, using: &generator))
        case 4..<6: return .afterMilliseconds(Int.random(in: 20...900, using: &generator))
        // Early: during start, the open of a file the last kill left, the replay.
        case 6: return .afterMilliseconds(Int.random(in: 0...60, using: &generator))
        default: return .whenServerAccepts(batches: Int.random(in: 1...6, using: &generator))
        }
    }

    /// The kind of point, to count them.
    var kind: String {
        switch self {
        case .afterAcknowledgements: return "mid-traffic"
        case .afterMilliseconds(let milliseconds): return milliseconds <= 60 ? "at start" : "timed"
        case .whenServerAccepts: return "batch in flight"
        }
    }

    func isReached(elapsed: TimeInterval, acknowledged: () -> Int, killSwitch: KillSwitch) -> Bool {
        switch self {
        case .afterAcknowledgements(let count): return acknowledged() >= count
        case .afterMilliseconds(let milliseconds): return elapsed * 1000 >= Double(milliseconds)
        case .whenServerAccepts: return killSwitch.hasFired
        }
    }

    var description: String {
        switch self {
        case .afterAcknowledgements(let count): return "after \(count) ack(s)"
        case .afterMilliseconds(let milliseconds): return "after \(milliseconds) ms"
        case .whenServerAccepts(let batches): return "as the server takes batch \(batches)"
        }
    }
}

/// Kills the armed worker from the server's own request callback, the moment the server has
/// recorded an events request it accepted and before it answers: nothing the worker does after
/// the server took its batch can happen first.
final class KillSwitch: @unchecked Sendable {
    // `@unchecked`: every stored property is read and written under `lock`.
    private let lock = NSLock()
    private var target: pid_t = 0
    private var remaining = 0
    private var fired = false

    func arm(_ pid: pid_t, afterAcceptedBatches batches: Int) {
        lock.withLock {
            target = pid
            remaining = batches
            fired = false
        }
    }

    func disarm() {
        lock.withLock {
            target = 0
            remaining = 0
        }
    }

    var hasFired: Bool { lock.withLock { fired } }

    /// The server's `onRequest`: called once a request is recorded, before its answer is sent.
    func serverRecorded(route: Route, accepted: Bool) {
        guard route == .events, accepted else { return }
        lock.withLock {
            guard target != 0, remaining > 0 else { return }
            remaining -= 1
            if remaining == 0 {
                _ = Foundation.kill(target, SIGKILL)
                fired = true
                target = 0
            }
        }
    }
}

struct TortureFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// A short wait between polls, off the cooperative pool's threads.
func pause(microseconds: UInt64) async {
    try? await Task.sleep(nanoseconds: microseconds * 1_000)
}
