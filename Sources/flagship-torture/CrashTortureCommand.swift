import ArgumentParser
import FlagshipLocalServer
import FlagshipStore
import Foundation

/// `flagship-torture crash`: kills a worker process with SIGKILL at random points while it
/// fetches flags and sends hits (continuous caching, each hit's commit awaited), restarts it on
/// the same store file each time, then lets a last run send what is left and checks:
/// every acknowledged hit reached the server at least once, a hit reached it twice only when it
/// was in the batch a killed process had in flight, and the file passed `PRAGMA
/// integrity_check` after every kill.
struct CrashTortureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crash",
        abstract: "Kill the SDK's process at random points; check no acknowledged hit is lost.",
        discussion: """
            A local Flagship server runs in this process; a share of its event requests fail with \
            500 (--failure-rate), so kills also land during retries and backoff. Each worker starts \
            the SDK on the same store (replaying what the last one left), then loops over its \
            visitors: sometimes a fetch, always a hit awaited with `try await sendHit` and then \
            printed as acknowledged. The kill points come from --seed: the same seed, the same plan \
            (the process's timing still varies). Exits 1 if a hit is lost, a duplicate is \
            unexplained, an integrity check fails, or a worker crashes or stalls.
            """
    )

    @Option(help: "How many kill points.") var kills = 50
    @Option(help: "Seeds the kill plan, the faults and the workers' choices (default: from the clock, printed).") var seed: UInt64?
    @Option(help: "The share (0...1) of event requests answered 500 while workers run.") var failureRate = 0.25
    @Option(help: ArgumentHelp("Where the store and the workers' output go (default: a new temporary directory, removed after a passing run).", valueName: "path"))
    var directory: String?
    @Option(help: "Seconds a worker may take to reach its kill point before it counts as stalled.") var stallTimeout: Double = 30
    @Flag(help: "Print the report as one JSON line.") var json = false
    @Flag(help: "Print the kill points the seed gives, and run nothing.") var dryRun = false

    static let envId = "torture-env"
    static let apiKey = "torture-key"

    func validate() throws {
        guard kills > 0 else { throw ValidationError("--kills must be positive") }
        guard (0...1).contains(failureRate) else { throw ValidationError("--failure-rate must be within 0...1") }
    }

    func run() async throws {
        let seed = self.seed ?? UInt64(Date().timeIntervalSince1970 * 1000)
        if dryRun {
            var generator = SplitMix64(seed: seed)
            for index in 1...kills { print("kill \(index): \(KillPoint.random(using: &generator))") }
            return
        }
        let workDirectory = try makeDirectory()
        let killSwitch = KillSwitch()
        let server = LocalFlagshipServer(LocalFlagshipServer.Configuration(
            envId: Self.envId, apiKey: Self.apiKey, decision: .sample,
            onRequest: { killSwitch.serverRecorded(route: $0.route, accepted: $0.isAccepted) }
        ))
        try server.start()
        defer { server.stop() }
        let failures = server.injectFault(.status(500), on: .events, share: .fraction(failureRate, seed: seed))
        var torture = CrashRun(self, seed: seed, server: server, killSwitch: killSwitch, workDirectory: workDirectory)

        var generator = SplitMix64(seed: seed)
        let started = Date()
        for index in 1...kills {
            try await torture.killWorker(index, at: KillPoint.random(using: &generator))
        }
        // Faults off: the next start must send everything the kills left.
        server.removeFault(failures)
        try await torture.drain()

        let report = torture.report(started: started)
        print(json ? report.jsonLine : report.text)
        if report.problems.isEmpty, directory == nil {
            try? FileManager.default.removeItem(at: workDirectory)
        } else if !report.problems.isEmpty {
            FileHandle.standardError.write(Data("the store and the workers' output are kept in \(workDirectory.path)\n".utf8))
            throw ExitCode.failure
        }
    }

    private func makeDirectory() throws -> URL {
        let url = directory.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("flagship-torture-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// What the server recorded, once no request it read is still being recorded (a request
    /// is recorded by a task a moment after it is read: wait until the log stops growing).
    private static func quiescentLog(of server: LocalFlagshipServer) async -> [RecordedRequest] {
        var log = server.received
        while true {
            await pause(microseconds: 20_000)
            let again = server.received
            if again.count == log.count { return again }
            log = again
        }
    }

    /// The torture hits' labels in each events request the server accepted, in order.
    private static func acceptedBatches(_ requests: ArraySlice<RecordedRequest>) -> [[String]] {
        requests.filter { $0.route == .events && $0.isAccepted }.map { request in
            (request.json?["h"]?.arrayValue ?? []).compactMap { hit in
                hit["ea"]?.stringValue == TortureWorkerCommand.hitAction ? hit["el"]?.stringValue : nil
            }
        }
    }

    /// `PRAGMA integrity_check` of the file as the killed process left it, its WAL included.
    private static func integrityCheck(_ file: URL) -> [String] {
        do {
            let database = try Database(path: file.path, options: DatabaseOptions(readOnly: true))
            defer { database.close() }
            return try database.read { try $0.query("PRAGMA integrity_check").compactMap { $0[0].text } }
        } catch {
            return ["cannot be checked: \(error)"]
        }
    }
}

extension CrashTortureCommand {
    /// One torture run: the workers started in turn on one store against one server, and what
    /// they left (the ledger, the problems found, the counts the report gives).
    private struct CrashRun {
        let seed: UInt64
        let kills: Int
        let stallTimeout: Double
        let printsProgress: Bool
        let server: LocalFlagshipServer
        let killSwitch: KillSwitch
        let workDirectory: URL
        let database: URL
        let executable: URL
        let workerArguments: [String]
        var ledger = CrashLedger()
        var problems: [String] = []
        var fetches = 0
        /// How many kill points of each kind (`KillPoint.kind`).
        var kinds: [String: Int] = [:]
        var integrityChecks = 0
        /// How many of the server's recorded requests the runs so far account for.
        var recorded = 0

        /// A run of `command`'s options whose workers use the store in `workDirectory` and `server`.
        init(_ command: CrashTortureCommand, seed: UInt64, server: LocalFlagshipServer, killSwitch: KillSwitch, workDirectory: URL) {
            self.seed = seed
            kills = command.kills
            stallTimeout = command.stallTimeout
            printsProgress = !command.json
            self.server = server
            self.killSwitch = killSwitch
            self.workDirectory = workDirectory
            database = workDirectory.appendingPathComponent("torture.sqlite")
            executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            workerArguments = [
                "worker", "--env-id", CrashTortureCommand.envId, "--api-key", CrashTortureCommand.apiKey, "--db", database.path,
                "--decision-url", server.decisionBaseURL.absoluteString, "--events-url", server.eventsBaseURL.absoluteString,
                "--seed", "\(seed)",
            ]
        }

        /// Starts worker `index`, kills it at `point`, checks the file, and records in the ledger
        /// what the worker acknowledged and what the server accepted from it.
        mutating func killWorker(_ index: Int, at point: KillPoint) async throws {
            kinds[point.kind, default: 0] += 1
            let worker = try WorkerProcess.start(
                executable: executable, arguments: workerArguments + ["--run", "\(index)"],
                outputDirectory: workDirectory, name: "run-\(index)"
            )
            let ending = await worker.kill(at: point, killSwitch: killSwitch, stallTimeout: stallTimeout)
            let lines = worker.completeLines()
            fetches += lines.filter { $0.hasPrefix("fetched ") }.count
            switch ending {
            case .killed: break
            case .stalled: problems.append("run \(index) (\(point)): no progress for \(stallTimeout) s")
            case .exited(let status, let bySignal):
                problems.append("run \(index) (\(point)): ended by itself (\(bySignal ? "signal" : "status") \(status)): \(worker.stderrText.suffix(400))")
            }
            let integrity = checkIntegrity(as: "run \(index) (\(point))")
            // The process is reaped and the next is not started: whatever the server holds
            // beyond `recorded`, once it has recorded all it read, came from this one.
            let acceptedBatches = await newAcceptedBatches()
            ledger.runs.append(CrashLedger.Run(
                acknowledged: lines.filter { $0.hasPrefix("ack ") }.map { String($0.dropFirst(4)) },
                acceptedBatches: acceptedBatches,
                killed: ending == .killed
            ))
            if printsProgress {
                print("kill \(index)/\(kills) \(point): \(ledger.runs[index - 1].acknowledged.count) acknowledged, integrity \(integrity.first ?? "?")")
            }
        }

        /// Starts workers with `--drain` (up to three) until one reports no hit waiting in the
        /// store, then checks the file.
        mutating func drain() async throws {
            var waiting = -1
            for attempt in 1...3 where waiting != 0 {
                let worker = try WorkerProcess.start(
                    executable: executable, arguments: workerArguments + ["--run", "\(kills + attempt)", "--drain"],
                    outputDirectory: workDirectory, name: "drain-\(attempt)"
                )
                let ending = await worker.waitForExit(timeout: 120)
                let acceptedBatches = await newAcceptedBatches()
                ledger.runs.append(CrashLedger.Run(acknowledged: [], acceptedBatches: acceptedBatches, killed: false))
                guard ending == .exited(status: 0, bySignal: false),
                      let line = worker.completeLines().last,
                      let report = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Int],
                      let left = report["waiting"] else {
                    problems.append("drain \(attempt): \(ending): \(worker.stderrText.suffix(400))")
                    continue
                }
                waiting = left
            }
            if waiting != 0 { problems.append("hits still waiting in the store after the drain: \(waiting)") }
            checkIntegrity(as: "after the drain")
        }

        /// What the ledger comes to, and the run's counts, as the report; a hit lost or delivered
        /// again unexplained is a problem.
        mutating func report(started: Date) -> Report {
            let tally = ledger.tally()
            if !tally.lost.isEmpty { problems.append("lost (acknowledged, never delivered): \(tally.lost.prefix(20))") }
            if !tally.unexplainedDuplicates.isEmpty {
                problems.append("delivered again outside a killed process's last batch: \(tally.unexplainedDuplicates.prefix(20))")
            }
            return Report(
                seed: seed, kills: kills, killPoints: kinds, acknowledged: tally.acknowledged, delivered: tally.delivered,
                lost: tally.lost.count, duplicated: tally.duplicated, unexplainedDuplicates: tally.unexplainedDuplicates.count,
                deliveredUnacknowledged: tally.deliveredUnacknowledged, fetches: fetches, integrityChecks: integrityChecks,
                eventRequests: server.received(.events).count,
                failedRequests: server.received(.events).filter { !$0.isAccepted }.count,
                seconds: (Date().timeIntervalSince(started) * 10).rounded() / 10, problems: problems
            )
        }

        /// `PRAGMA integrity_check` of the store, counted, and a problem (`what` names the check)
        /// unless it says ok: what it said.
        @discardableResult
        private mutating func checkIntegrity(as what: String) -> [String] {
            let integrity = CrashTortureCommand.integrityCheck(database)
            integrityChecks += 1
            if integrity != ["ok"] { problems.append("\(what): integrity_check says \(integrity.prefix(5))") }
            return integrity
        }

        /// The batches the server accepted since the last call, once it has recorded all it read.
        private mutating func newAcceptedBatches() async -> [[String]] {
            let requests = await CrashTortureCommand.quiescentLog(of: server)
            defer { recorded = requests.count }
            return CrashTortureCommand.acceptedBatches(requests[recorded...])
        }
    }
}

/// What a crash torture run found.
struct Report: Encodable {
    let seed: UInt64
    let kills: Int
    /// How many kill points of each kind (`KillPoint.kind`).
    let killPoints: [String: Int]
    let acknowledged: Int
    let delivered: Int
    let lost: Int
    let duplicated: Int
    let unexplainedDuplicates: Int
    let deliveredUnacknowledged: Int
    let fetches: Int
    let integrityChecks: Int
    let eventRequests: Int
    let failedRequests: Int
    let seconds: Double
    let problems: [String]

    var jsonLine: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    var text: String {
        """
        seed \(seed): \(kills) kill points in \(seconds) s (\(killPoints.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")))
          hits acknowledged      \(acknowledged)
          delivered (distinct)   \(delivered)  (\(deliveredUnacknowledged) committed but killed before their ack line)
          lost                   \(lost)
          duplicated             \(duplicated)  (outside a killed batch: \(unexplainedDuplicates))
          fetches                \(fetches)
          event requests         \(eventRequests), \(failedRequests) failed (injected 500s)
          integrity checks       \(integrityChecks), \(problems.isEmpty ? "all ok" : "see below")
        \(problems.isEmpty ? "PASS" : "FAIL\n" + problems.map { "  - " + $0 }.joined(separator: "\n"))
        """
    }
}
