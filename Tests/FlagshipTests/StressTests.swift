import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Issue 9, item 6: 16 tasks share a few visitors for 30 s (`FLAGSHIP_STRESS_SECONDS` to change
/// it), each doing a seeded random mix of context updates, fetches, flag reads, hits (awaited
/// and not) and authentication, against the local server and a real store. Nothing deadlocks
/// (a watchdog crashes the run with what it saw), nothing is lost, every flag read is a value the
/// server could have decided, each task's context keys hold what it wrote last, and the store
/// passes `integrity_check`.
final class StressTests: SDKTestCase {
    private static let tasks = 16
    private static let sharedVisitors = 4
    /// The colours the server decides between, from the visitor's `pick` context key.
    static let palette = ["red", "green", "blue", "amber"]
    static let defaultColor = "none"

    func testSixteenTasksSharingVisitorsLoseNoHitAndReadOnlyDecidedFlags() async throws {
        let seconds = ProcessInfo.processInfo.environment["FLAGSHIP_STRESS_SECONDS"].flatMap(TimeInterval.init) ?? 30
        server.decision = .handler { request in .json(Self.decision(for: request)) }
        start(configBuilder()
            .withLogLevel(.WARNING)
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 50, batchIntervalTimer: 1)))
        var visitors: [FSVisitor] = []
        for index in 0..<Self.sharedVisitors {
            visitors.append(await flagship.newVisitor(visitorId: "stress-\(index)", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync())
        }
        let shared = visitors
        let progress = Locked(0)
        let watchdog = Watchdog(progress: progress, limit: seconds + 120)
        let deadline = Date().addingTimeInterval(seconds)

        let reports = try await withThrowingTaskGroup(of: StressReport.self) { group in
            for task in 0..<Self.tasks {
                group.addTask {
                    try await Self.run(task: task, visitors: shared, until: deadline, progress: progress)
                }
            }
            var reports: [StressReport] = []
            for try await report in group { reports.append(report) }
            return reports
        }
        watchdog.stop()
        await flagship.waitUntilTrackingIsIdle()
        let statistics = await flagship.closeReporting()

        let total = reports.reduce(into: StressReport(task: -1)) { $0.merge($1) }
        let delivered = server.hits.compactMap { $0["el"]?.stringValue }.filter { $0.hasPrefix("stress-") }
        let copies = Dictionary(delivered.map { ($0, 1) }, uniquingKeysWith: +)
        let awaitedMissing = total.awaitedLabels.filter { copies[$0] == nil }
        let firedMissing = total.firedLabels.filter { copies[$0] == nil }
        let store = try inspectStore()
        let integrity = try await store.database.read { try $0.query("PRAGMA integrity_check").compactMap { $0[0].text } }
        store.close()
        print("""
            Stress: \(Self.tasks) tasks on \(Self.sharedVisitors) shared visitors for \(seconds) s: \
            \(total.counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")); \
            \(total.operations) operations, fetch failures \(total.fetchFailures), flag reads decided \(total.decidedReads); hits awaited \(total.awaitedLabels.count) \
            + not awaited \(total.firedLabels.count), delivered \(copies.count), duplicated \(delivered.count - copies.count), \
            lost \(awaitedMissing.count + firedMissing.count); requests \(server.received.count); integrity \(integrity)
            """)

        XCTAssertGreaterThan(total.operations, Self.tasks * 10, "the tasks made progress")
        XCTAssertEqual(awaitedMissing, [], "awaited hits never delivered")
        XCTAssertEqual(firedMissing, [], "hits sent without waiting never delivered")
        XCTAssertEqual(delivered.count, copies.count, "no hit delivered twice: the server failed nothing")
        XCTAssertEqual(statistics?.lost, 0)
        XCTAssertEqual(statistics?.waiting, 0)
        XCTAssertEqual(total.undecidedReads, [], "flag values the server never decided")
        XCTAssertGreaterThan(total.decidedReads, 0, "reads saw fetched flags")
        XCTAssertEqual(integrity, ["ok"])
        for (index, visitor) in visitors.enumerated() {
            let context = visitor.getContext()
            for task in 0..<Self.tasks {
                let written = reports.first { $0.task == task }?.lastWritten[index]
                XCTAssertEqual(context["task\(task)"] as? Int, written, "visitor \(index), key task\(task)")
            }
            if let pick = context["pick"] as? Int {
                XCTAssertTrue(total.picksWritten.contains(pick), "pick \(pick) was written by a task")
            }
        }
        let activates = Set(server.activates.compactMap { $0["vaid"]?.stringValue })
        XCTAssertTrue(activates.isSubset(of: Set(Self.palette.map { "var-\($0)" })), "\(activates)")
    }

    // MARK: One task

    private static func run(task: Int, visitors: [FSVisitor], until deadline: Date, progress: Locked<Int>) async throws -> StressReport {
        var random = SplitMix64(seed: 0x57E5 &+ UInt64(task))
        var report = StressReport(task: task)
        var written = 0
        while Date() < deadline {
            let index = Int(random.next() % UInt64(visitors.count))
            let visitor = visitors[index]
            let roll = random.nextUnitInterval()
            let operation: String
            switch roll {
            case ..<0.20:
                operation = "updateContext"
                written += 1
                visitor.updateContext("task\(task)", written)
                report.lastWritten[index] = written
            case ..<0.25:
                operation = "updateContext pick"
                let pick = Int(random.next() % 1000)
                report.picksWritten.insert(pick)
                visitor.updateContext(["pick": pick])
            case ..<0.40:
                operation = "fetchFlags"
                if (try? await visitor.fetchFlags()) == nil { report.fetchFailures += 1 }
            case ..<0.60:
                operation = "getFlag value"
                report.record(read: visitor.getFlag(key: "btnColor").value(defaultValue: defaultColor) ?? "nil")
            case ..<0.65:
                operation = "getFlags"
                for (key, flag) in visitor.getFlags() where key == "btnColor" {
                    report.record(read: flag.value(defaultValue: defaultColor, visitorExposed: false) ?? "nil")
                }
            case ..<0.80:
                operation = "sendHit awaited"
                let label = "stress-\(task)-\(report.awaitedLabels.count + report.firedLabels.count)"
                try await visitor.sendHit(event(label))
                report.awaitedLabels.append(label)
            case ..<0.93:
                operation = "sendHit"
                let label = "stress-\(task)-\(report.awaitedLabels.count + report.firedLabels.count)"
                fireAndForget(visitor, event(label))
                report.firedLabels.append(label)
            case ..<0.965:
                operation = "authenticate"
                visitor.authenticate(visitorId: "user-\(index)")
            default:
                operation = "unauthenticate"
                if visitor.anonymousId != nil { visitor.unauthenticate() }
            }
            report.counts[operation, default: 0] += 1
            report.operations += 1
            progress.withLock { $0 += 1 }
        }
        return report
    }

    /// The synchronous `sendHit`, which async code does not pick by itself.
    private static func fireAndForget(_ visitor: FSVisitor, _ hit: FSEvent) {
        visitor.sendHit(hit)
    }

    private static func event(_ label: String) -> FSEvent {
        let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "stress")
        event.label = label
        return event
    }

    /// One campaign whose variation (and `btnColor`) the visitor's `pick` context value chooses.
    private static func decision(for request: ServerRequest) -> FSJSONValue {
        let pick = request.json?["context"]?["pick"]?.intValue ?? 0
        let color = palette[Int(pick) % palette.count]
        return [
            "visitorId": request.json?["visitorId"] ?? .null, "panic": false,
            "campaigns": [[
                "id": "c-stress", "name": "Stress", "type": "ab", "variationGroupId": "vg-stress", "variationGroupName": "VG",
                "variation": [
                    "id": .string("var-\(color)"), "name": .string(color), "reference": false,
                    "modifications": ["type": "FLAG", "value": ["btnColor": .string(color)]],
                ],
            ]],
        ]
    }
}

/// What one task did.
private struct StressReport: Sendable {
    let task: Int
    var operations = 0
    var counts: [String: Int] = [:]
    var fetchFailures = 0
    var awaitedLabels: [String] = []
    var firedLabels: [String] = []
    var undecidedReads: [String] = []
    /// Reads that gave a colour the server decided (not the default).
    var decidedReads = 0
    /// The last value this task gave its own context key, by visitor index.
    var lastWritten: [Int: Int] = [:]
    var picksWritten: Set<Int> = []

    init(task: Int) {
        self.task = task
    }

    /// A `btnColor` read: the default before any fetch, else one of the server's colours.
    mutating func record(read color: String) {
        if StressTests.palette.contains(color) {
            decidedReads += 1
        } else if color != StressTests.defaultColor {
            undecidedReads.append(color)
        }
    }

    mutating func merge(_ other: StressReport) {
        operations += other.operations
        counts.merge(other.counts, uniquingKeysWith: +)
        fetchFailures += other.fetchFailures
        awaitedLabels += other.awaitedLabels
        firedLabels += other.firedLabels
        undecidedReads += other.undecidedReads
        decidedReads += other.decidedReads
        picksWritten.formUnion(other.picksWritten)
    }
}

/// Crashes the test process, saying what it saw, when the operations stop progressing for 30 s
/// or the run outlives its limit: a deadlock must fail the run, not hang it.
private final class Watchdog {
    private let timer: any DispatchSourceTimer

    init(progress: Locked<Int>, limit: TimeInterval) {
        let started = Date()
        let last = Locked((count: -1, at: Date()))
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
        timer.schedule(deadline: .now() + 10, repeating: 10)
        timer.setEventHandler {
            let count = progress.withLock { $0 }
            let stalled = last.withLock { last -> TimeInterval in
                if last.count != count { last = (count, Date()) }
                return Date().timeIntervalSince(last.at)
            }
            if stalled >= 30 || Date().timeIntervalSince(started) > limit {
                fatalError("StressTests: deadlock? \(count) operations, none for \(Int(stalled)) s, \(Int(Date().timeIntervalSince(started))) s in")
            }
        }
        timer.resume()
    }

    func stop() {
        timer.cancel()
    }
}
