import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest

@testable import flagship_soak
import FlagshipStore

/// The tool's core loop for two seconds at a low rate, against the real local server and the real
/// SDK on a real store: what it writes must be readable.
final class SoakRunTests: XCTestCase {
    func testAShortRunDeliversEveryHitAndWritesACSVRowPerSampleAndAWellFormedSVG() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("soak-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let plan = try LoadPlan(rate: 20, duration: .seconds(2), sampleInterval: .milliseconds(500)).validated()

        let run = try await OpenLoop.run(plan, fixture: try SoakFixture()) { _ in }
        let summary = RunSummary(run)
        let csvURL = directory.appendingPathComponent("soak.csv")
        let svgURL = directory.appendingPathComponent("soak.svg")
        try SampleCSV.write(run.samples, to: csvURL)
        try SoakChart(samples: run.samples, title: SoakConsole.title(run), subtitle: SoakConsole.verdict(summary)).write(to: svgURL)

        // At the start, then every half second: due times, each taken once due (later on a busy machine).
        let elapsed = run.samples.map(\.elapsed)
        XCTAssertEqual(elapsed.count, 5, "\(elapsed)")
        XCTAssertEqual(elapsed, elapsed.sorted())
        XCTAssertGreaterThanOrEqual(elapsed.last ?? 0, 2)
        XCTAssertEqual(run.load.offered, 40)
        XCTAssertEqual(run.load.completed, 40, run.load.firstFailure ?? "")
        XCTAssertEqual(run.load.notStarted, 0)
        XCTAssertGreaterThan(summary.accepted, 0)
        XCTAssertEqual(run.deliveredAtClose, run.closing?.delivered, "what the SDK delivered is what the server counted")
        XCTAssertEqual(run.closing?.waiting, 0, "close sent the rest")
        XCTAssertGreaterThan(run.samples.last?.visitorRows ?? 0, 0, "the store's visitor rows are read while the SDK has it open")
        XCTAssertEqual(run.decidedAgain, 0, "every returning visitor was decided from its history")

        let lines = try String(contentsOf: csvURL, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 1 + run.samples.count)
        XCTAssertEqual(String(lines[0]), SampleCSV.header)
        let columns = lines[0].split(separator: ",", omittingEmptySubsequences: false).count
        XCTAssertEqual(Set(lines.map { $0.split(separator: ",", omittingEmptySubsequences: false).count }), [columns])

        let document = try XMLDocument(contentsOf: svgURL)
        let root = try XCTUnwrap(document.rootElement())
        XCTAssertEqual(root.name, "svg")
        XCTAssertEqual(try root.nodes(forXPath: "//*[local-name()='polyline']").count, 6, "backlog; delivered and accepted; store, RSS and its anonymous part")
        let texts = try root.nodes(forXPath: "//*[local-name()='text']").compactMap(\.stringValue)
        for label in ["hits waiting", "hits/s", "MB", "elapsed (s)", "backlog (hits waiting)", "delivered/s (server)"] {
            XCTAssertTrue(texts.contains(label), "the chart labels \(label)")
        }
    }
}

/// The rules a run is judged by, on made-up samples.
final class RunSummaryTests: XCTestCase {
    func testTheSlopeOfPointsOnALineIsItsSlope() throws {
        XCTAssertEqual(try XCTUnwrap(RunSummary.slope([(0, 1), (1, 3), (2, 5), (3, 7)])), 2, accuracy: 1e-12)
        XCTAssertNil(RunSummary.slope([(1, 1)]), "one point has no slope")
        XCTAssertNil(RunSummary.slope([(1, 1), (1, 5)]), "nor points at one time")
    }

    func testABacklogGrowingFasterThanTwoPercentOfTheIntakeIsNotSteady() {
        // 1,000 hits/s taken in; the backlog grows by 10/s (1%), then by 30/s (3%).
        XCTAssertEqual(summary(backlogGrowth: 10).unsteadyReasons, [])
        XCTAssertEqual(summary(backlogGrowth: 30).unsteadyReasons, ["backlog grows by 3.0% of the intake (limit 2%)"])
        XCTAssertEqual(summary(backlogGrowth: 30).backlogSlopeShare ?? 0, 0.03, accuracy: 1e-9)
    }

    func testAnEvictedOrLostHitOrAVisitorNotStartedIsNotSteady() {
        XCTAssertEqual(summary(backlogGrowth: 0, evicted: 1, lost: 2, notStarted: 5).unsteadyReasons, [
            "1 hit(s) evicted", "2 hit(s) lost", "5 of 100 visitors not started (256 in flight)",
        ])
    }

    func testAReturningVisitorDecidedAgainWithoutItsHistoryIsNotSteady() {
        XCTAssertEqual(summary(backlogGrowth: 0, decidedAgain: 3).unsteadyReasons, ["3 returning visitor(s) decided again without their history"])
        XCTAssertTrue(summary(backlogGrowth: 0, decidedAgain: 3).report().contains("continuity 3 returning visitor(s) decided again"))
        XCTAssertTrue(summary(backlogGrowth: 0, decidedAgain: nil).report().contains("continuity not counted"))
        XCTAssertEqual(summary(backlogGrowth: 0, decidedAgain: 0).unsteadyReasons, [])
    }

    /// The store's decision rows say who was decided twice: a visitor with rows from two moments.
    func testAVisitorWithDecisionRowsFromTwoMomentsIsCountedOnce() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("soak-decided-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("flagship.sqlite")
        let store = try FlagshipDatabase.open(at: file)
        try store.write { connection in
            // alice: two campaigns decided at once, then once more later; bob: once.
            for (visitor, decidedAt) in [("alice", 1_000), ("alice", 1_000), ("alice", 9_000), ("bob", 1_000), ("bob", 1_000)] {
                try connection.execute("INSERT INTO decisions (visitor_id, decided_at, source, assignments) VALUES (?, ?, 'bucketing_file', '[]')",
                                       [.text(visitor), .integer(Int64(decidedAt))])
            }
        }
        store.close()
        XCTAssertEqual(try SoakSession.visitorsDecidedAgain(in: file), ["alice"])
    }

    /// A visit that began before an earlier visit of the same visitor was decided could not read
    /// its history: such visitors are left out of the continuity count.
    func testAVisitBeganWhileAnEarlierOneOfTheSameVisitorWasBeingDecidedIsAnOverlap() {
        let overlaps = VisitOverlaps()
        overlaps.begin(1)
        overlaps.begin(2)
        overlaps.decided(2)
        overlaps.begin(2)      // 2's first visit was decided: its history was there to read
        overlaps.begin(1)      // 1's first visit was not
        overlaps.decided(1)
        overlaps.decided(1)
        overlaps.begin(1)      // nothing of 1 in flight any more
        XCTAssertEqual(overlaps.overlapped.indexes, [1])
        XCTAssertFalse(overlaps.overlapped.overflowed)
    }

    /// glibc's `malloc_info` document: the process-wide lines come after the last arena's.
    func testMallocInfoTotalsAreTheLinesAfterTheLastHeap() throws {
        let xml = """
            <malloc version="1">
            <heap nr="0">
            <total type="fast" count="1" size="10"/>
            <total type="rest" count="2" size="20"/>
            <system type="current" size="1000"/>
            </heap>
            <total type="fast" count="3" size="100"/>
            <total type="rest" count="4" size="200"/>
            <total type="mmap" count="1" size="4096"/>
            <system type="current" size="50000"/>
            <system type="max" size="60000"/>
            </malloc>
            """
        let totals = try XCTUnwrap(HeapUsage.totals(inMallocInfo: xml))
        XCTAssertEqual(totals.system, 54_096)
        XCTAssertEqual(totals.free, 300)
        let live = HeapUsage.current()
        XCTAssertGreaterThan(live.sqliteBytes, -1)
        XCTAssertTrue(HeapUsage.trim(), "glibc's malloc_trim, found and called")
        // `make tsan`: the thread sanitizer's allocator replaces glibc's, and malloc_info reports no heap.
        try XCTSkipIf(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil, "under the thread sanitizer, malloc_info reports no heap")
        XCTAssertGreaterThan(live.mallocInUseBytes ?? 0, 0, "this process's malloc, read through malloc_info")
    }

    func testPercentilesAreNearestRank() {
        let values = (1...200).map(Double.init).shuffled()
        XCTAssertEqual(LatencyPercentiles(values), LatencyPercentiles(p50: 100, p99: 198))
        XCTAssertNil(LatencyPercentiles([]))
    }

    func testProcessIOReadsWcharAndWriteBytesAndNothingWithoutThem() throws {
        let text = "rchar: 6976\nwchar: 1234567\nsyscr: 10\nsyscw: 3\nread_bytes: 0\nwrite_bytes: 40960\ncancelled_write_bytes: 0\n"
        XCTAssertEqual(ProcessIO.parse(text), ProcessIO(writtenBytes: 1_234_567, storageBytes: 40_960))
        XCTAssertNil(ProcessIO.parse("rchar: 6976\nwchar: 12\n"))
        XCTAssertNil(ProcessIO.parse("wchar: twelve\nwrite_bytes: 0\n"))
        // This process's own, on Linux: read, and never less than what it wrote just before.
        let before = try XCTUnwrap(ProcessIO.current())
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("soak-io-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(count: 100_000).write(to: file)
        let after = try XCTUnwrap(ProcessIO.current())
        XCTAssertGreaterThanOrEqual(after.writtenBytes - before.writtenBytes, 100_000)
    }

    func testBytesWrittenPerVisitorAreTakenOverTheLastHalf() {
        // 10 visitors a second; 5,000 bytes written per visitor until second 4, 2,000 after.
        let samples = (0...10).map { second in
            Sample(elapsed: Double(second), offered: 10 * second, completed: 10 * second, offeredRate: 10, achievedRate: 10,
                   notStarted: 0, failedVisitors: 0, inFlight: 0, accepted: 0, acceptedRate: 0,
                   deliveredBySDK: 0, delivered: 0, deliveredRate: 0, backlog: 0, evicted: 0,
                   shed: 0, refusedOverloaded: 0, lost: 0, rejected: 0, failedRequests: 0, storeBytes: 0, visitorRows: 0,
                   io: ProcessIO(writtenBytes: Int64(second <= 4 ? 50_000 * second : 200_000 + 20_000 * (second - 4)),
                                 storageBytes: Int64(4_096 * second)))
        }
        var load = LoadCounters.Snapshot()
        load.offered = 100
        load.started = 100
        load.completed = 100
        let plan = LoadPlan(rate: 10, duration: .seconds(10), sampleInterval: .seconds(1))
        let summary = RunSummary(SoakRun(plan: plan, samples: samples, load: load, abandoned: 0, closing: nil, deliveredAtClose: 0,
                                         decidedAgain: 0))
        XCTAssertEqual(summary.writtenPerVisitor ?? 0, 2_000, accuracy: 1e-9)
        XCTAssertEqual(summary.storagePerVisitor ?? 0, 409.6, accuracy: 1e-9)
        XCTAssertTrue(summary.report().contains("writes    2000 bytes per visitor over the last half, 410 sent to storage"))
    }

    func testReturningVisitorsAreIdsServedBefore() {
        var picker = VisitorPicker(newShare: 0.8, poolSize: 16, seed: 7)
        var served: Set<Int> = []
        var returning = 0
        for _ in 0..<10_000 {
            let index = picker.next()
            if served.contains(index) { returning += 1 }
            served.insert(index)
        }
        XCTAssertEqual(Double(returning) / 10_000, 0.2, accuracy: 0.02)
    }

    /// A 10-second run taking 1,000 hits/s, sampled every second, its backlog growing linearly.
    private func summary(backlogGrowth: Int, evicted: Int = 0, lost: Int = 0, notStarted: Int = 0, decidedAgain: Int? = 0) -> RunSummary {
        let samples = (0...10).map { second in
            Sample(elapsed: Double(second), offered: 10 * second, completed: 10 * second, offeredRate: 10, achievedRate: 10,
                   notStarted: 0, failedVisitors: 0, inFlight: 0, accepted: 1_000 * second, acceptedRate: 1_000,
                   deliveredBySDK: 0, delivered: 0, deliveredRate: 0, backlog: backlogGrowth * second, evicted: evicted,
                   shed: 0, refusedOverloaded: 0, lost: lost, rejected: 0, failedRequests: 0, storeBytes: 0, visitorRows: 0, rssBytes: 0,
                   rssAnonymousBytes: 0, fetchFlags: nil, sendHit: nil)
        }
        var load = LoadCounters.Snapshot()
        load.offered = 100
        load.started = 100 - notStarted
        load.completed = 100 - notStarted
        load.notStarted = notStarted
        let plan = LoadPlan(rate: 10, duration: .seconds(10), sampleInterval: .seconds(1))
        return RunSummary(SoakRun(plan: plan, samples: samples, load: load, abandoned: 0, closing: nil, deliveredAtClose: 0,
                                  decidedAgain: decidedAgain))
    }
}
