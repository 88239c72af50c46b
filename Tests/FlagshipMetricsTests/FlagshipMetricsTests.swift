#if Metrics
import Flagship
import FlagshipLocalServer
import FlagshipMetrics
import Foundation
import Metrics
import MetricsTestKit
import XCTest

/// `FlagshipMetrics` on the real SDK against the local server: what an app's metrics backend
/// receives, metric by metric, read back with MetricsTestKit.
final class FlagshipMetricsTests: XCTestCase {
    private var directory: URL!
    private var server: LocalFlagshipServer!
    private var metrics: TestMetrics!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-metrics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        server = LocalFlagshipServer(envId: "metrics_env", apiKey: "metrics_key")
        try server.start()
        metrics = TestMetrics()
    }

    override func tearDown() async throws {
        await Flagship.sharedInstance.close()
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func start(_ configure: (FSConfigBuilder) -> FSConfigBuilder = { $0.DecisionApi() }) {
        // `configure` comes last: it may replace the tracking configuration.
        let builder = configure(FSConfigBuilder()
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 1, batchIntervalTimer: 0.05)))
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withBucketingBaseURL(server.bucketingBaseURL)
            .withCacheFile(directory.appendingPathComponent("flagship.sqlite"))
            .withLogLevel(.NONE)
            .withInstrumentation(FlagshipMetrics(factory: metrics))
        Flagship.sharedInstance.start(envId: "metrics_env", apiKey: "metrics_key", config: builder.build())
    }

    private func counter(_ label: String, _ dimensions: [(String, String)]) throws -> Int64 {
        try metrics.expectCounter(label, dimensions).totalValue
    }

    /// Polls `condition` (the sender and the interval work on their own) for 5 s at most.
    private func eventually(_ what: String, _ condition: () throws -> Bool) async throws {
        let started = ContinuousClock.now
        while try !condition() {
            guard ContinuousClock.now - started < .seconds(5) else { return XCTFail("not within 5 s: \(what)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func testAVisitorsFetchReadAndHitAreCountedFromAcceptedToDelivered() async throws {
        start()
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "buy"))
        try await eventually("the event and the activate delivered") {
            try counter("flagship_hits_total", [("outcome", "delivered"), ("kind", "activate")]) == 1
                && counter("flagship_hits_total", [("outcome", "delivered"), ("kind", "hit")]) == 2
        }

        // The consent hit and the event, and the flag read's activate.
        XCTAssertEqual(try counter("flagship_hits_total", [("outcome", "accepted"), ("kind", "hit")]), 2)
        XCTAssertEqual(try counter("flagship_hits_total", [("outcome", "accepted"), ("kind", "activate")]), 1)
        XCTAssertEqual(try counter("flagship_hits_total", [("outcome", "committed"), ("kind", "hit")]), 2)
        XCTAssertEqual(try counter("flagship_hits_total", [("outcome", "committed"), ("kind", "activate")]), 1)
        XCTAssertEqual(try counter("flagship_fetches_total", [("outcome", "success"), ("source", "decision_api")]), 1)
        XCTAssertEqual(try metrics.expectTimer("flagship_fetch_duration_seconds", [("outcome", "success"), ("source", "decision_api")])
            .values.count, 1)
        XCTAssertGreaterThanOrEqual(try counter("flagship_batches_total", [("endpoint", "events"), ("outcome", "delivered")]), 1)
        XCTAssertEqual(try counter("flagship_batches_total", [("endpoint", "activate"), ("outcome", "delivered")]), 1)
        XCTAssertFalse(try metrics.expectTimer("flagship_batch_duration_seconds", [("endpoint", "activate"), ("outcome", "delivered")])
            .values.isEmpty)
        let commits = try metrics.expectTimer("flagship_commit_duration_seconds").values
        XCTAssertFalse(commits.isEmpty)
        XCTAssertEqual(try metrics.expectRecorder("flagship_committed_rows").values.reduce(0, +), 3, "every hit committed once")
        // Each interval counts what waits: nothing, once delivered.
        try await eventually("the waiting gauges at zero") {
            try metrics.expectGauge("flagship_hits_waiting", [("where", "store")]).lastValue == 0
                && metrics.expectGauge("flagship_hits_waiting", [("where", "memory")]).lastValue == 0
        }
    }

    private func evaluations(_ flag: String, _ reason: String, _ errorCode: String = "none") throws -> Int64 {
        try counter("flagship_flag_evaluations_total", [("flag", flag), ("reason", reason), ("error_code", errorCode)])
    }

    func testEvaluationsAreCountedByFlagReasonAndErrorCode() async throws {
        start { $0.DecisionApi().withHooks([FlagshipEvaluationMetrics(factory: self.metrics)]) }
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "ada", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")        // before any fetch
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        _ = visitor.getFlag(key: "btnColor").details(defaultValue: "blue")
        _ = visitor.getFlag(key: "btnSize").value(defaultValue: 12)
        _ = visitor.getFlag(key: "btnSize").value(defaultValue: "12")           // a string asked of a number
        _ = visitor.getFlag(key: "nope").value(defaultValue: false)
        _ = visitor.getFlag(key: "btnColor").exists()                           // not an evaluation

        XCTAssertEqual(try evaluations("btnColor", "error", "provider_not_ready"), 1)
        XCTAssertEqual(try evaluations("btnColor", "split"), 2)
        XCTAssertEqual(try evaluations("btnSize", "split"), 1)
        XCTAssertEqual(try evaluations("btnSize", "error", "type_mismatch"), 1)
        XCTAssertEqual(try evaluations("nope", "default", "flag_not_found"), 1)
        XCTAssertEqual(metrics.counters(label: "flagship_flag_evaluations_total").map(\.totalValue).reduce(0, +), 6)
    }

    /// Flag keys are whatever the app reads: past the cap, they share the flag value `other`.
    func testFlagKeysPastTheCapAreCountedUnderOther() async throws {
        start { $0.DecisionApi().withHooks([FlagshipEvaluationMetrics(maxFlagKeys: 2, factory: self.metrics)]) }
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "ben", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        for key in ["btnColor", "btnSize", "price", "unknown-1", "unknown-2", "btnColor"] {
            _ = visitor.getFlag(key: key).value(defaultValue: nil as Any?)
        }

        XCTAssertEqual(try evaluations("btnColor", "split"), 2, "a key within the cap keeps its own value")
        XCTAssertEqual(try evaluations("btnSize", "split"), 1)
        XCTAssertEqual(try evaluations(FlagshipEvaluationMetrics.otherFlags, "split"), 1, "price")
        XCTAssertEqual(try evaluations(FlagshipEvaluationMetrics.otherFlags, "default", "flag_not_found"), 2)
        XCTAssertEqual(Set(metrics.counters(label: "flagship_flag_evaluations_total").compactMap { counter in
            counter.dimensions.first { $0.0 == "flag" }?.1
        }), ["btnColor", "btnSize", "other"])
    }

    private struct FailingHook: FlagshipHook {
        struct Failure: Error {}

        func before(_ evaluation: FSEvaluation) throws { throw Failure() }
        func error(_ evaluation: FSEvaluation, _ result: FSEvaluationResult) throws { throw Failure() }
    }

    func testAHookThatThrowsIsCountedByStage() async throws {
        start { $0.DecisionApi().withHooks([FailingHook()]) }
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "cy", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        XCTAssertEqual(visitor.getFlag(key: "btnColor").value(defaultValue: "blue"), "green")
        XCTAssertEqual(visitor.getFlag(key: "nope").value(defaultValue: "blue"), "blue")

        XCTAssertEqual(try counter("flagship_hook_failures_total", [("stage", "before")]), 2)
        XCTAssertEqual(try counter("flagship_hook_failures_total", [("stage", "after")]), 0)
        XCTAssertEqual(try counter("flagship_hook_failures_total", [("stage", "error")]), 1)
    }

    func testFailedFetchesRetriedAndRejectedHitsAreCountedApart() async throws {
        _ = server.injectFault(.status(500), on: .campaigns, share: .next(1))
        _ = server.injectFault(.status(503), on: .events, share: .next(1))
        start()
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "bob", hasConsented: false, instanceType: .NEW_INSTANCE)
            .buildAsync()
        do {
            try await visitor.fetchFlags()
            XCTFail("the injected 500")
        } catch {}
        try await visitor.fetchFlags()
        XCTAssertEqual(try counter("flagship_fetches_total", [("outcome", "failure"), ("source", "decision_api")]), 1)
        XCTAssertEqual(try counter("flagship_fetches_total", [("outcome", "success"), ("source", "decision_api")]), 1)

        // The consent hit (consent false) meets the 503: retried, then delivered after the backoff.
        try await eventually("the 503 counted as a failed batch and a retried hit") {
            try counter("flagship_batches_total", [("endpoint", "events"), ("outcome", "failed")]) == 1
                && counter("flagship_hits_total", [("outcome", "retried"), ("kind", "hit")]) == 1
        }

        // A hit the server refuses for good.
        _ = server.injectFault(.status(400), on: .events)
        let carol = await Flagship.sharedInstance.newVisitor(visitorId: "carol", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await carol.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "refused"))
        await Flagship.sharedInstance.close()
        XCTAssertGreaterThanOrEqual(try counter("flagship_hits_total", [("outcome", "rejected"), ("kind", "hit")]), 1)
        XCTAssertGreaterThanOrEqual(try counter("flagship_batches_total", [("endpoint", "events"), ("outcome", "rejected")]), 1)
    }

    func testHitsEvictedPastTheCacheCapacityAreCountedUnsent() async throws {
        start {
            // Nothing is sent: every hit waits in the cache.
            $0.DecisionApi().withNetworkDisabled()
                .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 100, batchIntervalTimer: 60, maxCachedHits: 2))
        }
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "dave", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        for number in 1...4 {
            try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "e\(number)"))
        }
        // Five hits (the consent hit and four events) in a cache of two.
        XCTAssertEqual(try counter("flagship_hits_unsent_total", [("reason", "evicted")]), 3)
    }

    func testABucketingFetchIsCountedWithItsSource() async throws {
        server.decision = .bucketing
        try server.setBucketingFile(ServedBucketingFile.sampleData)
        start { $0.Bucketing() }
        try await eventually("the bucketing file loaded") { Flagship.sharedInstance.getStatus() == .SDK_INITIALIZED }
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "erin", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        XCTAssertEqual(try counter("flagship_fetches_total", [("outcome", "success"), ("source", "bucketing")]), 1)
    }
}
#endif
