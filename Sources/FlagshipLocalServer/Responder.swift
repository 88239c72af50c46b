import FlagshipStore
import Foundation

/// What the server answers: the Flagship routes, the API key check, the decision, the bucketing
/// file, the faults, and the recording of every request with its outcome.
///
/// Kept apart from `LocalFlagshipServer` so that the socket thread holds this, never the server
/// object: a server a test forgets to stop still stops when it is released.
final class Responder: Sendable {
    private struct State {
        var decision: DecisionSource
        var bucketingFile: ServedBucketingFile?
        var faults = FaultSchedule()
        var lastSequence = 0
    }

    let envId: String
    let apiKey: String
    let log: RequestLog
    private let state: Locked<State>
    private let onRequest: (@Sendable (RecordedRequest) -> Void)?
    private let answeringExecutor: (any TaskExecutor)?

    init(configuration: LocalFlagshipServer.Configuration) {
        envId = configuration.envId
        apiKey = configuration.apiKey
        log = RequestLog(recordFile: configuration.recordFile, recordLimit: configuration.recordLimit)
        state = Locked(State(decision: configuration.decision, bucketingFile: configuration.bucketingFile))
        onRequest = configuration.onRequest
        answeringExecutor = configuration.answeringExecutor
    }

    var decision: DecisionSource {
        get { state.withLock { $0.decision } }
        set { state.withLock { $0.decision = newValue } }
    }

    var bucketingFile: ServedBucketingFile? {
        get { state.withLock { $0.bucketingFile } }
        set { state.withLock { $0.bucketingFile = newValue } }
    }

    func injectFault(_ kind: FaultKind, route: Route?, share: FaultShare) -> FaultID {
        state.withLock { $0.faults.add(kind, route: route, share: share) }
    }

    func removeFault(_ id: FaultID) {
        state.withLock { $0.faults.remove(id) }
    }

    func clearFaults() {
        state.withLock { $0.faults.removeAll() }
    }

    /// Called on the socket thread for each request. Its faults are chosen here, in arrival
    /// order; the answer is made, recorded and (after any latency) sent from a task.
    func handle(_ message: HTTPRequestMessage, reply: @escaping @Sendable (HTTPReply) -> Void) {
        let request = ServerRequest(message, receivedAt: Date())
        let (sequence, faults, sources) = state.withLock { state in
            state.lastSequence += 1
            let sources = Sources(decision: state.decision, bucketingFile: state.bucketingFile)
            return (state.lastSequence, state.faults.faults(for: request.route), sources)
        }
        Task(executorPreference: answeringExecutor) { [self] in
            let (httpReply, outcome) = await answer(request, faults: faults, sources: sources)
            let record = RecordedRequest(sequence: sequence, request: request, outcome: outcome, faults: faults)
            log.append(record)
            onRequest?(record)
            let latency = faults.reduce(Duration.zero) { total, fault in
                if case .latency(let duration) = fault { return total + duration }
                return total
            }
            if latency > .zero { try? await Task.sleep(for: latency) }
            reply(httpReply)
        }
    }

    /// What answers the campaigns and bucketing routes, as it was when a request arrived.
    private struct Sources {
        let decision: DecisionSource
        let bucketingFile: ServedBucketingFile?
    }

    private func answer(
        _ request: ServerRequest, faults: [FaultKind], sources: Sources
    ) async -> (HTTPReply, RequestOutcome) {
        switch faults.first(where: { !$0.isLatency }) {
        case .status(let status):
            let response = ServerResponse.error(status, "injected fault: status \(status)")
            return (.respond(message(response), close: true), .answered(status: status))
        case .tooManyRequests(let seconds):
            let response = ServerResponse.error(429, "injected fault: too many requests")
            return (.respond(message(response, headers: [("Retry-After", String(seconds))]), close: true), .answered(status: 429))
        case .dropConnection:
            return (.drop, .dropped)
        case .malformedBody(let body):
            let response = ServerResponse(status: 200, body: body.data)
            return (.respond(message(response), close: true), .answered(status: 200))
        case .redirect(let status, let location):
            let response = ServerResponse(status: status, body: Data())
            return (.respond(message(response, headers: [("Location", location)]), close: false), .answered(status: status))
        case .cutOffBody:
            let response = await route(request, sources: sources)
            return (.cutOff(message(response)), .cutOff(status: response.status))
        case .latency, nil:
            let response = await route(request, sources: sources)
            return (.respond(message(response), close: false), .answered(status: response.status))
        }
    }

    private func route(_ request: ServerRequest, sources: Sources) async -> ServerResponse {
        if request.route == .unknown {
            return .error(404, "no Flagship endpoint at \(request.path)")
        }
        guard request.method == request.route.method else {
            return .error(405, "\(request.path) takes \(request.route.method), not \(request.method)")
        }
        switch request.route {
        case .campaigns:
            guard request.envId == envId else {
                return .error(404, "unknown environment id '\(request.envId ?? "")'")
            }
            if let refusal = checkAPIKey(request) { return refusal }
            guard request.json?.objectValue != nil else { return .error(400, "the body is not a JSON object") }
            switch sources.decision {
            case .fixed(let data):
                return ServerResponse(status: 200, body: data)
            case .panic:
                return .json(["visitorId": request.json?["visitorId"] ?? .null, "panic": true, "campaigns": []])
            case .handler(let handler):
                return await handler(request)
            case .bucketing:
                guard let file = sources.bucketingFile else {
                    return .error(500, "the decision comes from the bucketing file, and the server has none")
                }
                return BucketingRoutes.decision(for: request, file: file)
            }
        case .bucketing:
            guard request.envId == envId else {
                return .error(404, "unknown environment id '\(request.envId ?? "")'")
            }
            guard let file = sources.bucketingFile else {
                return .error(404, "no bucketing file on this server")
            }
            return BucketingRoutes.download(for: request, file: file)
        case .activate:
            // The platform takes activates without a key (the official Python SDK sends none).
            if let refusal = checkAPIKey(request, required: false) { return refusal }
            guard request.json?.objectValue != nil else { return .error(400, "the body is not a JSON object") }
            return ServerResponse(status: 204, body: Data())
        case .events:
            guard request.json?.objectValue != nil else { return .error(400, "the body is not a JSON object") }
            return ServerResponse(status: 200, body: Data())
        case .analytics, .troubleshooting, .unknown:
            return ServerResponse(status: 200, body: Data())
        }
    }

    /// The 403 the Decision API gives for a wrong `x-api-key`, or a missing one where it is
    /// `required`; `nil` when it is right, or absent and not required.
    private func checkAPIKey(_ request: ServerRequest, required: Bool = true) -> ServerResponse? {
        guard let key = request.headers["x-api-key"] else {
            return required ? .error(403, "missing x-api-key header") : nil
        }
        guard key == apiKey else { return .error(403, "invalid x-api-key") }
        return nil
    }

    private func message(_ response: ServerResponse, headers: [(String, String)] = []) -> HTTPResponseMessage {
        HTTPResponseMessage(
            status: response.status,
            headers: (response.body.isEmpty ? [] : [("Content-Type", response.contentType)])
                + response.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } + headers,
            body: response.body
        )
    }
}
