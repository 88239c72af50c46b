#if Tracing
import Flagship
import FlagshipLocalServer
import FlagshipTracing
import Foundation
import InMemoryTracing
import Tracing
import XCTest

/// `FlagshipTracing` on the real SDK against the local server, with swift-distributed-tracing's
/// in-memory tracer: the spans made, their attributes, their parent, and the trace context on
/// the requests.
final class FlagshipTracingTests: XCTestCase {
    private var directory: URL!
    private var server: LocalFlagshipServer!
    private var tracer: InMemoryTracer!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-tracing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        server = LocalFlagshipServer(envId: "trace_env", apiKey: "trace_key")
        try server.start()
        tracer = InMemoryTracer()
    }

    override func tearDown() async throws {
        await Flagship.sharedInstance.close()
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func start(_ configure: (FSConfigBuilder) -> FSConfigBuilder = { $0 }) {
        let config = configure(FSConfigBuilder().DecisionApi())
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(directory.appendingPathComponent("flagship.sqlite"))
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 1, batchIntervalTimer: 0.05))
            .withLogLevel(.NONE)
            .withTracer(FlagshipTracing(tracer: tracer))
            .build()
        Flagship.sharedInstance.start(envId: "trace_env", apiKey: "trace_key", config: config)
    }

    private func spans(named name: String) -> [FinishedInMemorySpan] {
        tracer.finishedSpans.filter { $0.operationName == name }
    }

    private func text(_ span: FinishedInMemorySpan?, _ key: String) -> String? {
        guard case .string(let value)? = span?.attributes[key]?.toSpanAttribute() else { return nil }
        return value
    }

    func testAFetchIsAClientSpanUnderTheAppsSpanAndItsRequestCarriesTheTraceContext() async throws {
        start()
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        // The app's own span: a request handler's, say.
        try await tracer.withSpan("GET /checkout") { _ in
            try await visitor.fetchFlags()
        }

        let fetch = try XCTUnwrap(spans(named: "flagship.fetchFlags").first, "\(tracer.finishedSpans.map(\.operationName))")
        let parent = try XCTUnwrap(spans(named: "GET /checkout").first)
        XCTAssertEqual(fetch.kind, .client)
        XCTAssertEqual(fetch.traceID, parent.traceID, "one trace")
        XCTAssertEqual(fetch.spanContext.parentSpanID, parent.spanID, "the app's span is the parent")
        XCTAssertEqual(text(fetch, "flagship.outcome"), "success")
        XCTAssertEqual(text(fetch, "flagship.decision_source"), "decision_api")
        XCTAssertEqual(text(fetch, "flagship.env_id"), "trace_env")
        XCTAssertGreaterThan(Int(text(fetch, "flagship.campaigns") ?? "") ?? 0, 0, "the campaigns decided")

        // The decision request carried the fetch span's context, as the tracer's propagator writes it.
        let headers = try XCTUnwrap(server.received(.campaigns).last?.headers)
        XCTAssertEqual(headers[InMemoryTracer.traceIDKey], fetch.traceID)
        XCTAssertEqual(headers[InMemoryTracer.spanIDKey], fetch.spanID)
    }

    func testAFailedFetchRecordsItsError() async throws {
        _ = server.injectFault(.status(500), on: .campaigns)
        start()
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "bob", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try? await visitor.fetchFlags()
        let fetch = try XCTUnwrap(spans(named: "flagship.fetchFlags").first)
        XCTAssertEqual(fetch.errors.count, 1, "the failure is on the span")
    }

    private func text(_ event: SpanEvent, _ key: String) -> String? {
        guard case .string(let value)? = event.attributes[key]?.toSpanAttribute() else { return nil }
        return value
    }

    func testEachEvaluationInASpanIsAnEventWithTheFeatureFlagAttributesAndNoneOutsideASpan() async throws {
        start { $0.withHooks([FlagshipEvaluationTracing(tracer: self.tracer)]) }
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "dora", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")     // outside any span: no event, no error
        tracer.withSpan("GET /checkout") { _ in
            _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
            _ = visitor.getFlag(key: "nope").details(defaultValue: 0)
            _ = visitor.getFlag(key: "btnColor").exists()                    // not an evaluation
        }

        XCTAssertTrue(tracer.finishedSpans.filter { $0.operationName != "GET /checkout" }.allSatisfy(\.events.isEmpty))
        let events = try XCTUnwrap(spans(named: "GET /checkout").first).events
        XCTAssertEqual(events.map(\.name), ["feature_flag.evaluation", "feature_flag.evaluation"])
        let (read, missing) = (events[0], events[1])
        XCTAssertEqual(text(read, "feature_flag.key"), "btnColor")
        XCTAssertEqual(text(read, "feature_flag.provider.name"), "Flagship")
        XCTAssertEqual(text(read, "feature_flag.context.id"), "dora")
        XCTAssertEqual(text(read, "feature_flag.result.reason"), "split")
        XCTAssertEqual(text(read, "feature_flag.result.variant"), "v-homepage-green")
        XCTAssertNil(read.attributes["error.type"])
        XCTAssertEqual(text(missing, "feature_flag.key"), "nope")
        XCTAssertEqual(text(missing, "feature_flag.result.reason"), "default")
        XCTAssertNil(missing.attributes["feature_flag.result.variant"], "no campaign gives it")
        XCTAssertEqual(text(missing, "error.type"), "flag_not_found")
        XCTAssertEqual(text(missing, "error.message"), "no campaign gives this visitor the flag 'nope'")
    }

    func testEachBatchSentIsASpanWithItsEndpointAndOutcome() async throws {
        start()
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "carol", hasConsented: true, instanceType: .NEW_INSTANCE)
            .buildAsync()
        try await visitor.fetchFlags()
        _ = visitor.getFlag(key: "btnColor").value(defaultValue: "blue")
        try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "buy"))
        await Flagship.sharedInstance.close()

        let batches = spans(named: "flagship.batch")
        let activates = batches.filter { text($0, "flagship.endpoint") == "activate" }
        let events = batches.filter { text($0, "flagship.endpoint") == "events" }
        XCTAssertEqual(activates.count, 1, "\(batches.map(\.attributes))")
        XCTAssertEqual(text(activates.first, "flagship.outcome"), "delivered")
        XCTAssertEqual(text(activates.first, "flagship.hits"), "1")
        XCTAssertFalse(events.isEmpty)
        XCTAssertTrue(events.allSatisfy { text($0, "flagship.outcome") == "delivered" })
        // Each events request carried the trace context of its batch span.
        let sent = Set(server.received(.events).compactMap { $0.headers[InMemoryTracer.spanIDKey] })
        XCTAssertEqual(sent, Set(events.map(\.spanID)))
    }
}
#endif
