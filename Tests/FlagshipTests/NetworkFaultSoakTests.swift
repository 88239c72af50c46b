import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

@testable import Flagship

/// Issue 9, item 2: minutes of simulated time against a server that fails half the requests
/// (500s, answers later than the timeout, connections dropped or cut off mid-answer, 429 with
/// `Retry-After`), with a real SQLite store: nothing accepted is lost, the backoff stays within
/// its bounds, and memory stays flat.
///
/// `FLAGSHIP_TORTURE_FAULT_MINUTES` sets the simulated minutes of faults (default 10; `make
/// torture` runs 60). One clock second per step: the test acts, lets the SDK settle, advances.
final class NetworkFaultSoakTests: TrackingTestCase {
    private static let interval: TimeInterval = 5
    private static let backoffCap: TimeInterval = 60
    private static let retryAfter = 20
    /// The events and Decision API requests' timeout: what a late answer costs in wall time.
    private static let requestTimeout: TimeInterval = 0.25
    /// Beyond the timeout: the server answers (and has taken the hits in) after the SDK gave up.
    private static let lateAnswer: Duration = .milliseconds(600)

    private var recording: RecordingClock!

    func testHitsSurviveMinutesOfNetworkFaultsWithBoundedBackoffAndFlatMemory() async throws {
        try await runSoak(.CONTINUOUS_CACHING, defaultMinutes: 10)
    }

    /// The same faults with the pool in memory between intervals: at most an interval of hits
    /// waits there, the rest in SQLite.
    func testPeriodicCachingSurvivesTheSameFaultsWithAtMostAnIntervalOfHitsInMemory() async throws {
        try await runSoak(.PERIODIC_CACHING, defaultMinutes: 3)
    }

    /// Found by the periodic soak: the interval's write of the pool took a snapshot, a send took
    /// the same hits from memory meanwhile, and once written they were in the cache, unclaimed,
    /// and went a second time. A real clock with a 1 ms interval and a send per hit make the two
    /// meet often, not always: without the fix, about half the runs deliver some hits twice.
    func testAPeriodicPoolWrittenWhileASendTakesItFromMemoryIsDeliveredOnce() async throws {
        start(configBuilder()
            .withLogLevel(.WARNING)
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 1, batchIntervalTimer: 0.001, strategy: .PERIODIC_CACHING)))
        let visitor = makeVisitor()
        for number in 1...18_000 {
            fireAndForget(visitor, click(number))
            // Paced, so that intervals fall between the hits, not for synchronisation.
            if number % 20 == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        }
        // Delivered before the close, whose deadline a loaded machine could pass with hits left
        // in the cache for the next start (kept, not lost, but not what this test is about).
        _ = try await server.waitForHits(count: 18_001, timeout: .seconds(120))
        let statistics = await flagship.closeReporting()

        let delivered = deliveredClickLabels()
        XCTAssertEqual(Set(delivered).count, 18_000, "every hit delivered")
        XCTAssertEqual(delivered.count, 18_000, "\(delivered.count - Set(delivered).count) delivered twice")
        XCTAssertEqual(statistics?.delivered, 18_001, "the clicks and the consent hit, each counted once")
    }

    /// Found by the periodic soak too: the interval's write skips pool hits a send has in flight;
    /// when that send failed they waited, unwritten, for the next interval: two intervals at risk
    /// where PERIODIC_CACHING promises one. A failed send from the pool now writes it at once.
    func testAPeriodicPoolSendThatFailsIsWrittenAtOnceNotAnIntervalLater() async throws {
        start(trackingBuilder(strategy: .PERIODIC_CACHING, poolMaxSize: 2, interval: 10))
        let visitor = makeVisitor()
        try await waitForSleepers(1)
        server.injectFault(.status(503), on: .events, share: .next(1))

        fireAndForget(visitor, click(1))
        _ = try await server.waitForRequests(route: .events, count: 1)
        await flagship.waitUntilTrackingIsIdle()
        // The backoff's wake is armed by its own loop just after the round ends: waited for, as
        // the idle sender does not wait for it.
        try await waitForSleepers(2)

        XCTAssertEqual(clock.pendingSleepers, 2, "the interval, and the backoff: no interval has passed")
        XCTAssertEqual(try storedClickLabels(), ["hit-1"], "written once its send failed")
        XCTAssertEqual(try storedHits().count, 2, "the click and the consent hit")
        clock.advance(by: 1)
        _ = try await server.waitForHits(count: 2)
        await flagship.waitUntilTrackingIsIdle()
        XCTAssertEqual(deliveredClickLabels(), ["hit-1"])
        XCTAssertEqual(try storedHits(), [])
    }

    private func runSoak(_ strategy: BatchCachingStrategy, defaultMinutes: Int) async throws {
        let minutes = ProcessInfo.processInfo.environment["FLAGSHIP_TORTURE_FAULT_MINUTES"].flatMap(Int.init) ?? defaultMinutes
        let wallStart = Date()
        recording = RecordingClock(clock)
        let exposures = Collected<String>()
        let jitter = Locked(SplitMix64(seed: 0x50A4))
        start(configBuilder(timeout: Self.requestTimeout * 1000)
            .withLogLevel(.INFO)   // the SDK's INFO is swift-log's debug: every backoff wait is logged
            .withClock(recording)
            .withOnVisitorExposed { visitor, flag in exposures.append("\(visitor.id)/\(flag.metadata.variationGroupId)") }
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 10, batchIntervalTimer: Self.interval, strategy: strategy))
            .withTrackingSettings { settings in
                settings.backoffCap = Self.backoffCap
                settings.requestTimeout = Self.requestTimeout
                settings.jitter = { jitter.withLock { $0.nextUnitInterval() } }
            })
        let tracking = try XCTUnwrap(flagship.currentRuntime?.tracking)
        var ledger = SoakLedger()
        var visitors: [FSVisitor] = []
        for name in ["alice", "bob", "carol", "dave"] {
            visitors.append(await flagship.newVisitor(visitorId: "soak-\(name)", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync())
            ledger.consentHits += 1
        }
        try await settle()
        injectFaults()

        var random = SplitMix64(seed: 0x50A7)
        let steps = minutes * 60
        var residentAtHalf: Int?
        for step in 1...steps {
            for visitor in visitors where random.nextUnitInterval() < 0.5 {
                ledger.sentLabels.append("soak-\(ledger.sentLabels.count + 1)")
                let event = FSEvent(eventCategory: .Action_Tracking, eventAction: "click")
                event.label = ledger.sentLabels.last
                if random.nextUnitInterval() < 0.7 {
                    try await visitor.sendHit(event)
                } else {
                    fireAndForget(visitor, event)
                }
            }
            if step % 10 == 0 {
                // The campaigns route fails too: the visitor keeps its flags, the test goes on.
                if (try? await visitors[step / 10 % visitors.count].fetchFlags()) == nil { ledger.failedFetches += 1 }
            }
            if step % 60 == 30 { try await exposeNewVisitor(step: step, ledger: &ledger) }
            try await settle()
            recording.advance(by: 1)
            try await settle()
            try await sample(tracking, ledger: &ledger)
            if step == steps / 2 { residentAtHalf = Self.residentBytes() }
        }
        let residentAtEnd = Self.residentBytes()

        // The faults clear: everything waiting goes once the backoff gate opens, within an interval.
        server.clearFaults()
        let cleared = clock.now()
        let gateOpens = recording.pendingBackoffDeadline(interval: Self.interval) ?? cleared
        var recovered: Date?
        for _ in 0..<Int(Self.backoffCap + 3 * Self.interval) {
            recording.advance(by: 1)
            try await settle()
            if delivery(of: ledger).missing.isEmpty {
                recovered = clock.now()
                break
            }
        }
        try await sample(tracking, ledger: &ledger)
        // The backoff's waits; close's own deadline waits on the same clock come after.
        let armed = recording.backoffWaits(interval: Self.interval)
        let statistics = await flagship.closeReporting()
        drainCallbacks()

        let delivery = delivery(of: ledger)
        let backoff = backoffWaits()
        let faults = server.received.flatMap(\.faults).reduce(into: [String: Int]()) { $0[Self.faultName($1), default: 0] += 1 }
        let resident = residentAtHalf.flatMap { half in residentAtEnd.map { $0 - half } }
        print("""
            Network fault soak (\(strategy.rawValue)): \(minutes) simulated min of faults, \(server.received.count) requests \
            (events \(server.received(.events).count), activate \(server.received(.activate).count), campaigns \(server.received(.campaigns).count)); \
            faults \(faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")); \
            hits sent \(ledger.sentLabels.count) delivered \(delivery.labelCopies.count) duplicated \(delivery.duplicateCopies) \
            (\(delivery.unexplainedDuplicates.count) unexplained) lost \(delivery.missing.count); \
            activates \(ledger.expectedActivates.count) delivered \(delivery.activates.intersection(ledger.expectedActivates).count); \
            failed fetches \(ledger.failedFetches); backoff waits \(backoff.count), max \(Self.seconds(backoff.map(\.delay).max() ?? 0)) \
            (cap \(Self.backoffCap) s), after a 429 min \(backoff.filter(\.afterTooManyRequests).map(\.delay).min() ?? 0) s \
            (Retry-After \(Self.retryAfter) s); recovery \(recovered.map { Self.seconds($0.timeIntervalSince(cleared)) } ?? "none") after the faults cleared \
            (backoff gate open after \(Self.seconds(max(0, gateOpens.timeIntervalSince(cleared))))); rows waiting max \(ledger.maxRows); \
            memory structures max \(ledger.maxFootprint); resident memory over the second half \(resident.map { "\($0 / 1024) KiB" } ?? "n/a"); \
            wall \(String(format: "%.1f", Date().timeIntervalSince(wallStart))) s
            """)

        // Nothing lost: every hit and activate accepted reached the server at least once.
        XCTAssertEqual(delivery.missing, [], "hits accepted and never delivered")
        XCTAssertEqual(ledger.expectedActivates.subtracting(delivery.activates), [], "activates never delivered")
        XCTAssertEqual(statistics?.lost, 0)
        XCTAssertEqual(statistics?.waiting, 0)
        XCTAssertEqual(statistics?.rejected, 0)
        XCTAssertEqual(try storedHits().count, 0, "the table is empty once everything is delivered")
        XCTAssertEqual(Set(exposures.values), ledger.expectedActivates, "onVisitorExposed for every activate delivered")
        // Duplicates only where the server took a batch in and answered after the SDK's timeout.
        XCTAssertEqual(delivery.unexplainedDuplicates, [:], "delivered twice without a late answer to explain it")
        XCTAssertEqual(delivery.unknownLabels, [], "the server received hits nobody sent")

        // Backoff: as many waits armed on the clock as failures logged, each within its bounds.
        XCTAssertGreaterThan(backoff.count, steps / 60, "the faults made the SDK back off")
        XCTAssertEqual(armed.map(\.length).map(Self.milliseconds),
                       backoff.map(\.delay).map(Self.milliseconds), "the waits logged are the waits armed")
        for wait in backoff {
            XCTAssertLessThanOrEqual(wait.delay, Self.backoffCap, "\(wait)")
            XCTAssertGreaterThanOrEqual(wait.delay, Self.backoffCeiling(failure: wait.failure) / 2, "\(wait)")
            if wait.afterTooManyRequests { XCTAssertGreaterThanOrEqual(wait.delay, TimeInterval(Self.retryAfter), "\(wait)") }
        }
        XCTAssertTrue(backoff.contains(where: \.afterTooManyRequests), "a 429 was met and honoured")
        XCTAssertGreaterThanOrEqual(backoff.map(\.failure).max() ?? 0, 4, "failures in a row made the wait grow")
        let recovery = try XCTUnwrap(recovered, "delivery resumed once the faults cleared")
        XCTAssertLessThanOrEqual(recovery.timeIntervalSince(max(gateOpens, cleared)), Self.interval,
                                 "everything went within an interval of the backoff gate opening")

        // Memory: the SDK's structures stay empty at rest, rows track exactly what waits.
        if strategy == .CONTINUOUS_CACHING {
            XCTAssertEqual(ledger.maxFootprint.unwritten, 0, "hits wait in SQLite, not in memory")
        } else {
            // Four visitors, a hit each per second at most, an exposure, its consent hit.
            XCTAssertLessThanOrEqual(ledger.maxFootprint.unwritten, 4 * Int(Self.interval) + 3, "at most an interval of hits in memory")
        }
        XCTAssertEqual(ledger.maxFootprint.ingress, 0, "every accepted hit was written by the next group commit")
        XCTAssertEqual(ledger.maxFootprint.waiters, 0)
        XCTAssertLessThanOrEqual(ledger.maxFootprint.activateCallbacks, ledger.expectedActivates.count)
        XCTAssertEqual(ledger.leaks, [], "hits waiting + delivered = accepted, at every sample")
        if let resident {
            XCTAssertLessThan(resident, 64 << 20, "resident memory grew by \(resident / 1024) KiB over the second half")
        }
    }

    // MARK: Faults

    private func injectFaults() {
        let late = FaultKind.latency(Self.lateAnswer)
        server.injectFault(late, on: .events, share: .fraction(0.04, seed: 11))
        server.injectFault(.status(500), on: .events, share: .fraction(0.5, seed: 12))
        server.injectFault(.dropConnection, on: .events, share: .fraction(0.1, seed: 13))
        server.injectFault(.cutOffBody, on: .events, share: .fraction(0.1, seed: 14))
        server.injectFault(.tooManyRequests(retryAfter: Self.retryAfter), on: .events, share: .fraction(0.08, seed: 15))

        server.injectFault(late, on: .activate, share: .fraction(0.04, seed: 21))
        server.injectFault(.status(500), on: .activate, share: .fraction(0.5, seed: 22))
        server.injectFault(.tooManyRequests(retryAfter: Self.retryAfter), on: .activate, share: .fraction(0.1, seed: 23))
        server.injectFault(.dropConnection, on: .activate, share: .fraction(0.1, seed: 24))

        server.injectFault(late, on: .campaigns, share: .fraction(0.05, seed: 31))
        server.injectFault(.status(500), on: .campaigns, share: .fraction(0.3, seed: 32))
        server.injectFault(.cutOffBody, on: .campaigns, share: .fraction(0.15, seed: 33))
        server.injectFault(.dropConnection, on: .campaigns, share: .fraction(0.05, seed: 34))
    }

    private static func faultName(_ fault: FaultKind) -> String {
        switch fault {
        case .status(let status): return "\(status)"
        case .tooManyRequests: return "429"
        case .latency: return "late answer"
        case .dropConnection: return "dropped"
        case .cutOffBody: return "cut off"
        case .malformedBody: return "malformed"
        case .redirect: return "redirect"
        }
    }

    // MARK: Driving

    /// A new visitor fetches (retrying through the campaigns faults) and reads two flags: one
    /// activate per variation group, through the activate route's faults.
    private func exposeNewVisitor(step: Int, ledger: inout SoakLedger) async throws {
        let id = "exposed-\(step)"
        let visitor = await flagship.newVisitor(visitorId: id, hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        ledger.consentHits += 1
        for _ in 0..<10 {
            if (try? await visitor.fetchFlags()) != nil { break }
            ledger.failedFetches += 1
        }
        guard visitor.fetchStatus == .FETCHED else { return }
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue"), "red")
        XCTAssertEqual(visitor.getFlag(key: "price").value(defaultValue: 0.0), 9.99)
        ledger.expectedActivates.formUnion(["\(id)/vg2", "\(id)/vg1"])
    }

    /// Lets the SDK react to what the test did or to the clock: every wait that came due has
    /// ended, the batch timer is armed again, every backoff logged is armed, no send is running.
    private func settle() async throws {
        await flagship.waitUntilTrackingIsIdle()
        let recording = recording!
        let log = log!
        try await waitUntil("the SDK's waits are armed", timeout: 10) {
            recording.isSettled(interval: Self.interval)
                && recording.backoffWaits(interval: Self.interval).count == Self.backoffMessages(log).count
        }
        await flagship.waitUntilTrackingIsIdle()
    }

    /// Memory and rows, at rest: the in-memory structures, and rows waiting + delivered = accepted.
    private func sample(_ tracking: TrackingManager, ledger: inout SoakLedger) async throws {
        let footprint = tracking.memoryFootprint()
        ledger.maxFootprint = TrackingMemoryFootprint(
            ingress: max(ledger.maxFootprint.ingress, footprint.ingress),
            unwritten: max(ledger.maxFootprint.unwritten, footprint.unwritten),
            activateCallbacks: max(ledger.maxFootprint.activateCallbacks, footprint.activateCallbacks),
            waiters: max(ledger.maxFootprint.waiters, footprint.waiters),
            purging: max(ledger.maxFootprint.purging, footprint.purging))
        let statistics = await tracking.statistics()
        let store = try inspectStore()
        defer { store.close() }
        let rows = try await store.read { try $0.hits.count() }
        ledger.maxRows = max(ledger.maxRows, rows)
        let accepted = ledger.sentLabels.count + ledger.consentHits + ledger.expectedActivates.count
        if statistics.waiting + statistics.delivered != accepted || statistics.waiting != rows + footprint.unwritten {
            ledger.leaks.append("at \(clock.now()): \(rows) rows, \(statistics.waiting) waiting, \(statistics.delivered) delivered, \(accepted) accepted")
        }
    }

    // MARK: What the server received, what the SDK logged

    private struct Delivery {
        /// Click labels in the batches the server took in (a 2xx, whole or cut off), with copies.
        var labelCopies: [String: Int] = [:]
        /// Copies beyond the first not explained by a batch answered after the SDK's timeout.
        var unexplainedDuplicates: [String: Int] = [:]
        var duplicateCopies = 0
        var unknownLabels: [String] = []
        /// Labels sent and never taken in.
        var missing: [String] = []
        var activates: Set<String> = []
    }

    /// A batch the server took in: it read the whole request and chose a 2xx, whether or not the
    /// SDK saw the answer (late, or cut off: the events and activate answers have no body).
    private static func tookIn(_ request: RecordedRequest) -> Bool {
        request.status.map { (200..<300).contains($0) } ?? false
    }

    private func delivery(of ledger: SoakLedger) -> Delivery {
        var delivery = Delivery()
        var lateCopies: [String: Int] = [:]
        for request in server.received(.events) where Self.tookIn(request) {
            let late = request.faults.contains { if case .latency = $0 { return true } else { return false } }
            for hit in request.json?["h"]?.arrayValue ?? [] where hit["ea"]?.stringValue == "click" {
                guard let label = hit["el"]?.stringValue else { continue }
                delivery.labelCopies[label, default: 0] += 1
                if late { lateCopies[label, default: 0] += 1 }
            }
        }
        let sent = Set(ledger.sentLabels)
        delivery.missing = ledger.sentLabels.filter { delivery.labelCopies[$0] == nil }
        for (label, copies) in delivery.labelCopies {
            if !sent.contains(label) { delivery.unknownLabels.append(label) }
            delivery.duplicateCopies += copies - 1
            if copies - 1 > lateCopies[label, default: 0] { delivery.unexplainedDuplicates[label] = copies }
        }
        for request in server.received(.activate) where Self.tookIn(request) {
            for entry in request.json?["batch"]?.arrayValue ?? [] {
                if let visitor = entry["vid"]?.stringValue, let group = entry["caid"]?.stringValue {
                    delivery.activates.insert("\(visitor)/\(group)")
                }
            }
        }
        return delivery
    }

    private struct BackoffWait: CustomStringConvertible {
        let delay: TimeInterval
        let failure: Int
        let afterTooManyRequests: Bool
        let message: String

        var description: String { message }
    }

    /// The first failure of a streak is a warning, the next ones debug lines: both say the wait.
    private static func backoffMessages(_ log: LogCapture) -> [String] {
        log.entries.filter { ($0.level == .warning || $0.level == .debug) && $0.message.contains("next try in ") }.map(\.message)
    }

    /// Every wait the SDK announced: "... (reason): kept, next try in 1234 ms (failure 3 in a row)".
    private func backoffWaits() -> [BackoffWait] {
        Self.backoffMessages(log).compactMap { message in
            guard let range = message.range(of: "next try in "),
                  let milliseconds = Int(message[range.upperBound...].prefix { $0.isNumber }),
                  let failureRange = message.range(of: "(failure "),
                  let failure = Int(message[failureRange.upperBound...].prefix { $0.isNumber }) else { return nil }
            return BackoffWait(delay: TimeInterval(milliseconds) / 1000, failure: failure,
                               afterTooManyRequests: message.contains("HTTP status 429"), message: message)
        }
    }

    private static func backoffCeiling(failure: Int) -> TimeInterval {
        min(backoffCap, pow(2, Double(failure - 1)))
    }

    private static func seconds(_ interval: TimeInterval) -> String {
        String(format: "%.1f s", interval)
    }

    private static func milliseconds(_ seconds: TimeInterval) -> Int {
        Int((seconds * 1000).rounded())
    }

    /// The resident set size of this process, from `/proc/self/statm` (Linux).
    private static func residentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// What the soak test did, to compare with what the server received.
private struct SoakLedger {
    /// Click labels accepted by `sendHit`, in order.
    var sentLabels: [String] = []
    var consentHits = 0
    /// `visitor/variation group` of every activate a flag read made.
    var expectedActivates: Set<String> = []
    var failedFetches = 0
    var maxRows = 0
    var maxFootprint = TrackingMemoryFootprint()
    var leaks: [String] = []
}

/// The test's manual clock, recording every wait the SDK arms on it: from when, until when, and
/// whether it ended. The batch timer's waits are the ones exactly one interval long.
final class RecordingClock: SDKClock {
    struct Wait: Sendable {
        let armedAt: Date
        let until: Date
        var ended = false

        var length: TimeInterval { until.timeIntervalSince(armedAt) }

        func isBatchTimer(interval: TimeInterval) -> Bool {
            abs(length - interval) < 1e-9
        }
    }

    private let manual: ManualClock
    private let waits = Locked<[Wait]>([])

    init(_ manual: ManualClock) {
        self.manual = manual
    }

    func now() -> Date {
        manual.now()
    }

    func uptime() -> TimeInterval {
        manual.uptime()
    }

    func sleep(until deadline: Date) async throws {
        let index = waits.withLock { waits in
            waits.append(Wait(armedAt: manual.now(), until: deadline))
            return waits.count - 1
        }
        defer { waits.withLock { $0[index].ended = true } }
        try await manual.sleep(until: deadline)
    }

    func advance(by interval: TimeInterval) {
        manual.advance(by: interval)
    }

    /// Every wait that came due has ended, and the batch timer waits again.
    func isSettled(interval: TimeInterval) -> Bool {
        let now = now()
        return waits.withLock { waits in
            !waits.contains { !$0.ended && $0.until <= now }
                && waits.contains { !$0.ended && $0.isBatchTimer(interval: interval) }
        }
    }

    /// The waits other than the batch timer's: the backoff, in the order armed.
    func backoffWaits(interval: TimeInterval) -> [Wait] {
        waits.withLock { $0.filter { !$0.isBatchTimer(interval: interval) } }
    }

    /// When the backoff wait still pending ends, if one is.
    func pendingBackoffDeadline(interval: TimeInterval) -> Date? {
        backoffWaits(interval: interval).filter { !$0.ended }.map(\.until).max()
    }
}
