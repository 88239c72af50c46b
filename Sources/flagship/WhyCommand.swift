import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship why`: a visitor's decision history from the store (when, flag, campaign, variation,
/// reason, file version), and with `--replay` each decision made again on its recorded file
/// version and context by this build's engine.
struct WhyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "why",
        abstract: "Show why a visitor got its variations, from the store's decision history; replay them.",
        discussion: """
            Reads the decisions the SDK recorded (decision provenance): one line per flag of each \
            assignment, oldest first. FILE VERSION is the first 12 hex digits of the sha256 of the \
            bucketing file that decided; 'unknown' for the Decision API and for assignments carried \
            from a store older than provenance. --flag keeps the decisions that set that flag. \
            --replay decides each again on its recorded file version and context, and says whether \
            this build agrees; without --visitor-id it replays every decision of the store and \
            lists the disagreements only. Each kept file is checked against its version (its sha256) \
            first, and a version must match whole. The exit status is 2 when a kept file was edited \
            (nothing is replayed on it), else 1 when a replayed decision disagrees. \
            --explain adds how the recorded file decides the recorded context (targeting, bucket).
            """ + postgresDiscussion("With --db postgres://..., the decisions of the environment --env-id names.")
    )

    @OptionGroup var database: DatabaseArguments<WhyStore>
    @OptionGroup var environment: EnvironmentArguments
    @Option(help: "The visitor whose decisions to show.") var visitorId: String?
    @Option(help: ArgumentHelp("Only the decisions that set this flag.", valueName: "key")) var flag: String?
    @Flag(help: "Decide each decision again on its recorded file version and context, and compare.") var replay = false
    @Flag(help: "Explain each decision: targeting conditions, bucket and allocation ranges.") var explain = false
    @Flag(help: "Print JSON instead of text.") var json = false

    func validate() throws {
        if visitorId == nil && !replay {
            throw ValidationError("give --visitor-id, or --replay to replay every decision of the store")
        }
        if visitorId == nil && explain { throw ValidationError("--explain goes with --visitor-id") }
    }

    func run() async throws {
        let source = try await DecisionHistorySource.open(database, environment, visitorId: visitorId)
        defer { source.close() }
        if let visitorId {
            try await showVisitor(visitorId, from: source)
        } else {
            try await replayAll(from: source)
        }
    }

    // MARK: One visitor

    private func showVisitor(_ visitorId: String, from source: DecisionHistorySource) async throws {
        let (decisions, unreadable) = try await source.decisions(visitorId: visitorId)
        var replayer = source.replay()
        var rows: [Row] = []
        for decision in decisions {
            let keys = Self.flagKeys(decision)
            if let flag, !keys.contains(flag) { continue }
            let outcome = replay ? replayer.replay(decision) : nil
            let explanation = explain ? replayer.explain(decision) : nil
            rows.append(Row(decision: decision, flagKeys: keys, outcome: outcome, explanation: explanation))
        }
        if json {
            try Output.printJSON(rows.map(\.json))
        } else if rows.isEmpty {
            print(decisions.isEmpty ? "no decision recorded for visitor \(visitorId)"
                                    : "no decision of visitor \(visitorId) set flag \(flag ?? "")")
        } else {
            var header = ["DECIDED (UTC)", "FLAG", "CAMPAIGN", "VARIATION", "REASON", "SOURCE", "FILE VERSION"]
            if replay { header.append("REPLAY") }
            let table = rows.flatMap { row in
                (row.flagKeys.isEmpty ? ["-"] : row.flagKeys.filter { flag == nil || $0 == flag }).map { key in
                    var cells = [Output.utc(unixMilliseconds: row.decision.decidedAt), key, row.decision.campaignId ?? "?",
                                 row.decision.variationId, row.decision.reason, row.decision.source.rawValue,
                                 ExplanationOutput.shortVersion(row.decision.fileVersion)]
                    if let outcome = row.outcome { cells.append(Self.text(outcome)) }
                    return cells
                }
            }
            print(Output.table([header] + table))
            for row in rows {
                guard let explanation = row.explanation else { continue }
                print("")
                print("decided \(Output.utc(unixMilliseconds: row.decision.decidedAt)), variation group \(row.decision.variationGroupId):")
                switch explanation {
                case .success(let explanation): print(ExplanationOutput.text(explanation, indent: "  "))
                case .failure(let reason): print("  not explained: \(reason.rawValue)")
                }
            }
        }
        Self.warnSkipped(unreadable)
        let tampered = rows.filter { $0.outcome == .notReplayable(.tampered) }.count
        if tampered > 0 {
            Output.warn("\(tampered) decision(s) recorded on a kept file whose bytes no longer hash to its version: "
                + "the evidence was edited, and nothing was replayed on it")
            throw ExitCode(Self.tamperedExitStatus)
        }
        if rows.contains(where: { if case .disagrees? = $0.outcome { true } else { false } }) {
            throw ExitCode(1)
        }
    }

    private struct Row {
        let decision: DecisionRecord
        let flagKeys: [String]
        let outcome: DecisionReplay.Outcome?
        let explanation: Result<FSDecisionExplanation, DecisionReplay.NotReplayable>?

        var json: [String: Any] {
            var row: [String: Any] = [
                "visitorId": decision.visitorId,
                "decidedAt": decision.decidedAt,
                "decidedAtUTC": Output.utc(unixMilliseconds: decision.decidedAt),
                "campaignId": decision.campaignId ?? NSNull(),
                "variationGroupId": decision.variationGroupId,
                "variationId": decision.variationId,
                "reason": decision.reason,
                "source": decision.source.rawValue,
                "fileVersion": decision.fileVersion ?? NSNull(),
                "flags": decision.flags.map(Output.embeddedJSON) ?? NSNull(),
                "context": decision.context.map(Output.embeddedJSON) ?? NSNull(),
            ]
            if let outcome { row["replay"] = WhyCommand.json(outcome) }
            switch explanation {
            case .success(let explanation)?:
                row["explanation"] = Output.embeddedJSON(ExplanationOutput.json(explanation).jsonString())
            case .failure(let reason)?:
                row["explanation"] = ["notExplained": reason.rawValue]
            case nil:
                break
            }
            return row
        }
    }

    // MARK: The whole store

    private func replayAll(from source: DecisionHistorySource) async throws {
        let started = ContinuousClock.now
        var replayer = source.replay()
        var summary = DecisionReplaySummary()
        summary.skip(try await source.forEachDecision { decision in
            if let flag, !Self.flagKeys(decision).contains(flag) { return }
            summary.count(decision, replayer.replay(decision))
        })
        let elapsed = ContinuousClock.now - started
        if json {
            try Output.printJSON([
                "replayed": summary.replayed,
                "agree": summary.agree,
                "disagree": summary.disagree,
                "agreementRate": summary.replayed == 0 ? NSNull() : Double(summary.agree) / Double(summary.replayed) as Any,
                "notReplayable": Dictionary(uniqueKeysWithValues: summary.notReplayable.map { ($0.key.rawValue, $0.value) }),
                "unreadableRows": summary.unreadable.map { ["rowId": $0.rowId, "reason": $0.reason] as [String: Any] },
                "seconds": elapsed.inSeconds,
                "disagreements": summary.disagreements.map { decision, outcome in
                    Row(decision: decision, flagKeys: Self.flagKeys(decision), outcome: outcome, explanation: nil).json
                },
            ])
        } else {
            for (decision, outcome) in summary.disagreements {
                print("DISAGREES  \(decision.visitorId)  \(Output.utc(unixMilliseconds: decision.decidedAt))  "
                      + "campaign \(decision.campaignId ?? "?")  recorded \(decision.variationGroupId)/\(decision.variationId)  "
                      + "\(Self.text(outcome))  file \(ExplanationOutput.shortVersion(decision.fileVersion))")
            }
            print(Self.text(summary, seconds: elapsed.inSeconds))
        }
        Self.warnSkipped(summary.unreadable)
        if let tampered = summary.notReplayable[.tampered], tampered > 0 {
            Output.warn("\(tampered) decision(s) recorded on a kept file whose bytes no longer hash to its version: "
                + "the evidence was edited, and nothing was replayed on it")
            throw ExitCode(Self.tamperedExitStatus)
        }
        if summary.disagree > 0 { throw ExitCode(1) }
    }

    /// Says on stderr which `decisions` rows could not be read and were skipped (the first ten by
    /// row id and reason; `flagship db inspect` counts them all).
    private static func warnSkipped(_ unreadable: [UnreadableDecision]) {
        guard !unreadable.isEmpty else { return }
        let named = unreadable.prefix(10).map { "row \($0.rowId) (\($0.reason))" }.joined(separator: "; ")
        Output.warn("\(unreadable.count) decision row(s) could not be read and were skipped: \(named)"
            + (unreadable.count > 10 ? "; and \(unreadable.count - 10) more" : ""))
    }

    /// `why --replay`'s exit status when a kept file was edited: the evidence itself is wrong,
    /// which is not the engine disagreeing (1).
    static let tamperedExitStatus: Int32 = 2

    private static func text(_ summary: DecisionReplaySummary, seconds: Double) -> String {
        let replayed = summary.replayed
        let rate = replayed == 0 ? "-" : String(format: "%.2f %%", 100 * Double(summary.agree) / Double(replayed))
        var text = "\(replayed) decision(s) replayed in \(String(format: "%.2f", seconds)) s: \(summary.agree) agree, "
            + "\(summary.disagree) disagree (agreement \(rate))"
        for reason in DecisionReplay.NotReplayable.allCases {
            if let count = summary.notReplayable[reason] { text += "\n\(count) not replayable: \(reason.rawValue)" }
        }
        return text
    }

    // MARK: Helpers

    /// The flag keys a decision set, sorted (none when its flags were not recorded).
    static func flagKeys(_ decision: DecisionRecord) -> [String] {
        guard let flags = decision.flags, case .object(let object)? = try? FSJSONValue(parsing: Data(flags.utf8)) else { return [] }
        return object.keys.sorted()
    }

    static func text(_ outcome: DecisionReplay.Outcome) -> String {
        switch outcome {
        case .agrees: return "agrees"
        case .disagrees(let group, let variation):
            guard let group, let variation else { return "DISAGREES: today nothing" }
            return "DISAGREES: today \(group)/\(variation)"
        case .notReplayable(let reason): return "not replayable (\(reason.rawValue))"
        }
    }

    static func json(_ outcome: DecisionReplay.Outcome) -> [String: Any] {
        switch outcome {
        case .agrees: return ["outcome": "agrees"]
        case .disagrees(let group, let variation):
            return ["outcome": "disagrees", "todayVariationGroupId": group ?? NSNull(), "todayVariationId": variation ?? NSNull()]
        case .notReplayable(let reason): return ["outcome": "not replayable", "why": reason.rawValue]
        }
    }
}

/// Where `why` reads decisions and file versions: a store file (read-only).
struct DecisionHistorySource {
    /// A visitor's decisions, and the rows of its that could not be read (skipped).
    let decisions: (String) async throws -> (records: [DecisionRecord], unreadable: [UnreadableDecision])
    /// Calls `body` on every decision, in the order they were recorded, a page at a time; returns
    /// the rows that could not be read (skipped).
    let forEachDecision: (_ body: (DecisionRecord) -> Void) async throws -> [UnreadableDecision]
    /// Every kept version's document, by version, read at open: a replay reads no store.
    let documents: [String: String]
    let close: () -> Void

    func decisions(visitorId: String) async throws -> (records: [DecisionRecord], unreadable: [UnreadableDecision]) {
        try await decisions(visitorId)
    }

    func forEachDecision(_ body: (DecisionRecord) -> Void) async throws -> [UnreadableDecision] { try await forEachDecision(body) }

    func replay() -> DecisionReplay {
        let documents = documents
        // Exactly the recorded version: a prefix, or an empty version, names no evidence.
        return DecisionReplay { version in documents[version] }
    }

    /// Store reads are awaited (the file's on the store's own queue): no thread of Swift's pool
    /// waits for SQLite or the network.
    static func open(_ database: DatabaseArguments<WhyStore>, _ environment: EnvironmentArguments,
                     visitorId: String?) async throws -> DecisionHistorySource {
        #if Postgres
        if let location = try database.postgresLocation() {
            // One read-only snapshot: the decisions asked for and every kept version, then replayed here.
            let envId = environment.envId
            let (decisions, versions) = try await PostgresReading.read(location) { inspection in
                let envId = try await PostgresReading.environment(envId, in: inspection, location: location)
                return (try await inspection.decisions(envId: envId, visitorId: visitorId),
                        try await inspection.bucketingFileVersions(envId: envId))
            }
            return DecisionHistorySource(
                decisions: { _ in (decisions, []) },
                forEachDecision: { body in
                    decisions.forEach(body)
                    return []
                },
                documents: Dictionary(versions.map { ($0.version, $0.document) }) { first, _ in first },
                close: {})
        }
        #endif
        environment.warnIfGivenForAFile()
        let store = try database.openForInspection()
        let versions = try await store.read { try $0.bucketingFiles.versions() }
        return DecisionHistorySource(
            decisions: { visitorId in
                try await store.read { db in
                    var unreadable: [UnreadableDecision] = []
                    let decisions = try db.decisions.decisions(visitorId: visitorId, unreadable: &unreadable)
                    return (decisions, unreadable)
                }
            },
            forEachDecision: { body in
                var after: Int64 = 0
                var unreadable: [UnreadableDecision] = []
                while true {
                    let from = after
                    let page = try await store.read { try $0.decisions.page(after: from, limit: 10_000) }
                    for (_, record) in page.decisions { body(record) }
                    unreadable += page.unreadable
                    guard let last = page.lastRowId else { return unreadable }
                    after = last
                }
            },
            documents: Dictionary(versions.map { ($0.version, $0.document) }) { first, _ in first },
            close: { store.close() })
    }
}
