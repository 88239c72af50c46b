import BenchSupport
import Benchmark
import Flagship
import FlagshipLocalServer
import Foundation

/// A server's requests (issue 45): 64 at a time, each a visitor built with its context, fetched
/// in bucketing mode, three flags read with their exposure and, but in the read-only phase, one
/// awaited event; against the local server in this process. Each phase on a store of its own:
///
/// - new visitors: each request a visitor never seen;
/// - returning: 256 visitors served once before the measurement, again, nothing changed;
/// - returning, reads only: the same without the event;
/// - returning, context changed: each request a context other than the visitor's last;
/// - returning, consent withdrawn: each request a known visitor built without consent.
///
/// Each with the default deduplication and with `.reference` (the reference's behaviour, which
/// this SDK had before: every request sends everything again), measured in the same run. Beside
/// the rate, what the local server received per 100 requests, by kind, once everything the
/// round sent was delivered.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, requestsPerSecond, consentPer100, segmentPer100, activatePer100, eventPer100],
        timeUnits: .milliseconds,
        units: [requestsPerSecond: .count],
        warmupIterations: 1,
        maxDuration: .seconds(120),
        maxIterations: Requests.measuredRounds
    )
    for (suffix, deduplication) in [("", FSDeduplication.standard), (", reference", FSDeduplication.reference)] {
        for phase in Phase.allCases {
            let box = Box<RequestSession>()
            Benchmark("requests: \(phase.rawValue)\(suffix)") { (benchmark: Benchmark, session: RequestSession) async in
                for _ in benchmark.scaledIterations {
                    let elapsed = await measure(benchmark) { await session.serveRound(phase) }
                    benchmark.measurement(requestsPerSecond, rate(Requests.perRound, elapsed))
                    let received = await session.receivedSinceLastRound()
                    benchmark.measurement(consentPer100, received.consent * 100 / Requests.perRound)
                    benchmark.measurement(segmentPer100, received.segment * 100 / Requests.perRound)
                    benchmark.measurement(activatePer100, received.activate * 100 / Requests.perRound)
                    benchmark.measurement(eventPer100, received.event * 100 / Requests.perRound)
                }
                if let failure = session.failure { benchmark.error(failure) }
            } setup: {
                let session = try await RequestSession.start(deduplication: deduplication)
                box.value = session
                // The returning visitors, as new ones once: what the platform was told is recorded.
                if phase != .new { await session.introduceReturningVisitors() }
                _ = await session.receivedSinceLastRound()
                return session
            } teardown: {
                await box.value?.stop()
            }
        }
    }
}

let requestsPerSecond = BenchmarkMetric.custom("requests/s", polarity: .prefersLarger, useScalingFactor: false)
let consentPer100 = BenchmarkMetric.custom("consent hits per 100 requests", polarity: .prefersSmaller, useScalingFactor: false)
let segmentPer100 = BenchmarkMetric.custom("segment hits per 100 requests", polarity: .prefersSmaller, useScalingFactor: false)
let activatePer100 = BenchmarkMetric.custom("activates per 100 requests", polarity: .prefersSmaller, useScalingFactor: false)
let eventPer100 = BenchmarkMetric.custom("events per 100 requests", polarity: .prefersSmaller, useScalingFactor: false)

enum Requests {
    static let concurrency = 64
    static let perRound = 2_000
    static let measuredRounds = 5
    static let returningVisitors = 256
    static let envId = "bench_env"
    static let apiKey = "bench_key"
    static let flagKeys = ["btnColor", "freeShipping", "bannerText"]
}

enum Phase: String, CaseIterable, Sendable {
    case new = "new visitors"
    case returning = "returning, nothing changed"
    case readOnly = "returning, reads only"
    case contextChanged = "returning, context changed"
    case consentWithdrawn = "returning, consent withdrawn"
}

/// The hits the local server received, by kind.
struct ReceivedItems {
    var consent = 0
    var segment = 0
    var activate = 0
    var event = 0
}

/// The SDK, on a store of its own, serving rounds of requests against the local server.
final class RequestSession: Sendable {
    let server: LocalFlagshipServer
    let directory: TemporaryDirectory
    let flagship: Flagship
    private let rounds = Locked(0)
    private let failures = Locked<String?>(nil)

    var failure: String? { failures.withLock { $0 } }

    private init(server: LocalFlagshipServer, directory: TemporaryDirectory, flagship: Flagship) {
        self.server = server
        self.directory = directory
        self.flagship = flagship
    }

    static func start(deduplication: FSDeduplication) async throws -> RequestSession {
        let server = LocalFlagshipServer(envId: Requests.envId, apiKey: Requests.apiKey)
        try server.setBucketingFile(ServedBucketingFile.sampleData)
        try server.start()
        let directory = try TemporaryDirectory()
        let flagship = Flagship()
        flagship.start(envId: Requests.envId, apiKey: Requests.apiKey, config: FSConfigBuilder()
            .Bucketing()
            .withBucketingBaseURL(server.bucketingBaseURL)
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(directory.url.appendingPathComponent("flagship.sqlite"))
            .withLogLevel(.NONE)
            .withDeduplication(deduplication)
            .build())
        let deadline = ContinuousClock.now + .seconds(10)
        while flagship.getStatus() != .SDK_INITIALIZED, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        return RequestSession(server: server, directory: directory, flagship: flagship)
    }

    /// A round of `Requests.perRound` requests, 64 at a time: new visitors get ids never used,
    /// the others are the returning visitors (`introduceReturningVisitors()`).
    func serveRound(_ phase: Phase) async {
        let round = rounds.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        await forEachRequest(Requests.perRound) { index in
            // A returning visitor's context is its own, the same at each request (but where the
            // phase changes it): its number gives it.
            let number = phase == .new ? index : index % Requests.returningVisitors
            let id = phase == .new ? "new-\(round)-\(index)" : "returning-\(number)"
            await self.request(id, index: number, change: "\(round)-\(index)", phase: phase)
        }
    }

    /// Each returning visitor's first request: a new visitor's.
    func introduceReturningVisitors() async {
        await forEachRequest(Requests.returningVisitors) { index in
            await self.request("returning-\(index)", index: index, change: "", phase: .new)
        }
    }

    /// `change`: a value of the context that differs at each request, for the phase that changes it.
    private func request(_ id: String, index: Int, change: String, phase: Phase) async {
        var context: [String: Any] = ["isVip": index % 2 == 0, "plan": ["free", "pro", "enterprise"][index % 3]]
        if phase == .contextChanged { context["page"] = change }
        let visitor = await flagship.newVisitor(visitorId: id, hasConsented: phase != .consentWithdrawn, instanceType: .NEW_INSTANCE)
            .withContext(context: context)
            .buildAsync()
        guard phase != .consentWithdrawn else { return }
        do {
            try await visitor.fetchFlags()
            for key in Requests.flagKeys {
                blackHole(visitor.getFlag(key: key).value(defaultValue: "none"))
            }
            if phase != .readOnly {
                try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "purchase"))
            }
        } catch {
            failures.withLock { $0 = $0 ?? "\(error)" }
        }
    }

    /// What the server received since the last call, once everything sent was delivered.
    func receivedSinceLastRound() async -> ReceivedItems {
        await flagship.waitUntilTrackingIsIdle()
        defer { server.clearReceived() }
        var items = ReceivedItems()
        for hit in server.hits {
            if hit["ea"] == "fs_consent" {
                items.consent += 1
            } else if hit["t"] == "SEGMENT" {
                items.segment += 1
            } else {
                items.event += 1
            }
        }
        items.activate = server.activates.count
        return items
    }

    func stop() async {
        await flagship.close()
        server.stop()
        directory.remove()
    }
}

/// Runs `body` for indexes 0..<count, 64 at a time.
private func forEachRequest(_ count: Int, _ body: @escaping @Sendable (Int) async -> Void) async {
    await withTaskGroup(of: Void.self) { group in
        let next = Locked(0)
        for _ in 0..<Requests.concurrency {
            group.addTask {
                while true {
                    let index = next.withLock { value -> Int in
                        defer { value += 1 }
                        return value
                    }
                    guard index < count else { return }
                    await body(index)
                }
            }
        }
    }
}
