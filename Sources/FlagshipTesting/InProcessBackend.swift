import Flagship
import FlagshipStore
import Foundation

/// The network of a ``FlagshipTestEnvironment``, in-process: the Decision API answered from the
/// test data, the events and activate endpoints recording what they receive (PROTOCOL.md
/// sections 1 to 3). No socket, no thread: each request is answered on the caller's task.
///
/// The SDK is pointed at hosts under `.test` (a name reserved by RFC 2606, never resolved), so a
/// request that went around this transport could reach no one.
final class InProcessBackend: HTTPTransport {
    static let decisionBaseURL = URL(string: "https://decision.flagship.test/v2")!
    static let eventsBaseURL = URL(string: "https://events.flagship.test")!

    private struct State {
        var network: TestNetworkCondition = .available
        var hits: [TestHit] = []
        var activates: [TestActivate] = []
        var decisions: [TestDecisionRequest] = []
        /// Every variation a decision gave, by id: what an activate's `vaid` stands for.
        var served: [String: TestVariation] = [:]
        var failedRequests = 0
        /// Requests handled so far, answered or failed.
        var requests = 0
        /// Fulfilled by the next request handled, then replaced: what `waitForRequest` awaits.
        var nextRequest = OneShot<Void>()
    }

    let envId: String
    let testData: FlagshipTestData
    private let state = Locked(State())

    init(envId: String, testData: FlagshipTestData) {
        self.envId = envId
        self.testData = testData
    }

    // MARK: What the test reads

    var network: TestNetworkCondition {
        get { state.withLock { $0.network } }
        set { state.withLock { $0.network = newValue } }
    }

    var hits: [TestHit] { state.withLock { $0.hits } }
    var activates: [TestActivate] { state.withLock { $0.activates } }
    var decisions: [TestDecisionRequest] { state.withLock { $0.decisions } }
    var failedRequests: Int { state.withLock { $0.failedRequests } }
    var requestCount: Int { state.withLock { $0.requests } }

    /// Forgets what was recorded; the variations served stay known, for activates still to come.
    func clearRecords() {
        state.withLock { state in
            state.hits = []
            state.activates = []
            state.decisions = []
            state.failedRequests = 0
        }
    }

    /// Returns once more than `count` requests were handled, or at `deadline`; `true` in the first
    /// case. The caller's cancellation ends the wait too (then: whether they were, by then).
    func waitForRequest(after count: Int, until deadline: ContinuousClock.Instant) async -> Bool {
        let until = DispatchTime.now() + max(0, ContinuousClock.now.duration(to: deadline).inSeconds)
        while true {
            let (done, next) = state.withLock { ($0.requests > count, $0.nextRequest) }
            if done { return true }
            guard await next.value(until: until) != nil else { return state.withLock { $0.requests > count } }
        }
    }

    // MARK: HTTPTransport

    func send(_ request: FSHTTPRequest) async throws(TransportError) -> FSHTTPResponse {
        defer { handled() }
        switch network {
        case .available:
            return answer(request)
        case .unreachable:
            state.withLock { $0.failedRequests += 1 }
            throw .connectionFailed("\(request.url.host ?? "the host") cannot be reached (FlagshipTesting: the network is unreachable)")
        case .failing(let status):
            state.withLock { $0.failedRequests += 1 }
            return FSHTTPResponse(status: status)
        }
    }

    /// Kept answering after the SDK's `close()`: a restarted SDK uses this transport again.
    func shutdown() {}

    private func handled() {
        let next = state.withLock { state -> OneShot<Void> in
            state.requests += 1
            defer { state.nextRequest = OneShot() }
            return state.nextRequest
        }
        next.fulfil(())
    }

    private func answer(_ request: FSHTTPRequest) -> FSHTTPResponse {
        let url = request.url
        guard request.method == .post, let body = request.body, let json = try? FSJSONValue(parsing: body) else {
            return FSHTTPResponse(status: request.method == .post ? 400 : 404)
        }
        switch (url.host, url.path) {
        case (Self.decisionBaseURL.host, Self.decisionBaseURL.path + "/\(envId)/campaigns"):
            return decide(json)
        case (Self.decisionBaseURL.host, Self.decisionBaseURL.path + "/activate"):
            return recordActivates(json)
        case (Self.eventsBaseURL.host, "/"):
            return recordHits(json)
        default:
            return FSHTTPResponse(status: 404)
        }
    }

    // MARK: Decision API

    private func decide(_ body: FSJSONValue) -> FSHTTPResponse {
        guard let visitorId = body["visitorId"]?.stringValue, let context = body["context"]?.objectValue else {
            return FSHTTPResponse(status: 400)
        }
        let testContext = context
        let (panic, values) = testData.decide(visitorId: visitorId, context: testContext)
        let variations = values.map { TestVariation(flagKey: $0.key, value: $0.value) }
        let decision = TestDecisionRequest(
            visitorId: visitorId, anonymousId: body["anonymousId"]?.stringValue, context: testContext,
            hasConsented: body["visitor_consent"]?.boolValue ?? false,
            flags: Dictionary(values.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last }), panic: panic)
        state.withLock { state in
            for variation in variations { state.served[variation.variationId] = variation }
            state.decisions.append(decision)
        }
        let answer = FSJSONValue.object([
            "visitorId": .string(visitorId),
            "panic": .bool(panic),
            "campaigns": .array(variations.map(Self.campaign)),
            "extras": .object(["accountSettings": .object(["enabledXPC": .bool(false), "enabled1V1T": .bool(false)])]),
        ])
        return FSHTTPResponse(status: 200, headers: ["content-type": "application/json"], body: answer.jsonData())
    }

    /// One campaign per flag: its variation gives the flag's value.
    private static func campaign(_ variation: TestVariation) -> FSJSONValue {
        .object([
            "id": .string(variation.campaignId),
            "name": .string(variation.campaignName),
            "slug": .string(variation.campaignName),
            "type": .string(TestVariation.campaignType),
            "variationGroupId": .string(variation.variationGroupId),
            "variationGroupName": .string(TestVariation.variationGroupName),
            "variation": .object([
                "id": .string(variation.variationId),
                "name": .string(variation.variationName),
                "reference": .bool(false),
                "modifications": .object(["type": .string("FLAG"), "value": .object([variation.flagKey: variation.value])]),
            ]),
        ])
    }

    // MARK: Events and activates

    private func recordActivates(_ body: FSJSONValue) -> FSHTTPResponse {
        guard let envId = body["cid"]?.stringValue, case .array(let entries)? = body["batch"] else {
            return FSHTTPResponse(status: 400)
        }
        let fields = entries.compactMap(\.objectValue)
        guard fields.count == entries.count else { return FSHTTPResponse(status: 400) }
        state.withLock { state in
            state.activates += fields.map { entry in
                TestActivate(envId: envId, fields: entry, variation: entry["vaid"]?.stringValue.flatMap { state.served[$0] })
            }
        }
        return FSHTTPResponse(status: 200)
    }

    private func recordHits(_ body: FSJSONValue) -> FSHTTPResponse {
        guard body["t"]?.stringValue == "BATCH", let envId = body["cid"]?.stringValue, case .array(let entries)? = body["h"] else {
            return FSHTTPResponse(status: 400)
        }
        let fields = entries.compactMap(\.objectValue)
        guard fields.count == entries.count else { return FSHTTPResponse(status: 400) }
        state.withLock { $0.hits += fields.map { TestHit(envId: envId, fields: $0) } }
        return FSHTTPResponse(status: 200)
    }
}
