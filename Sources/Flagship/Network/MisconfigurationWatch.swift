import FlagshipStore
import Foundation
import Logging

/// Watches every answer for the statuses that mean the SDK is set up wrong (401, 403, 404) and
/// says so once, as an error naming the environment and the setting to check: a wrong API key
/// or env id must not pass for a network hiccup, one fetch line at a time. Each endpoint and
/// status is told once per start; the requests themselves go on as before.
struct MisconfigurationWatch: HTTPTransport {
    let base: any HTTPTransport
    let envId: String
    let logger: Logger
    private let told = Locked<Set<String>>([])

    init(_ base: any HTTPTransport, envId: String, logger: Logger) {
        self.base = base
        self.envId = envId
        self.logger = logger
    }

    func send(_ request: FSHTTPRequest) async throws(TransportError) -> FSHTTPResponse {
        let response = try await base.send(request)
        if [401, 403, 404].contains(response.status) {
            report(response.status, for: request.url)
        }
        return response
    }

    func shutdown() async {
        await base.shutdown()
    }

    /// Which endpoint a URL is, and which setting points there.
    private static func endpoint(of url: URL) -> (name: String, setting: String) {
        let path = url.path
        if path.hasSuffix("/campaigns") { return ("the Decision API", "withDecisionBaseURL") }
        if path.hasSuffix("/activate") { return ("the activate endpoint", "withDecisionBaseURL") }
        if path.hasSuffix("/bucketing.json") { return ("the bucketing file's host", "withBucketingBaseURL") }
        return ("the events endpoint", "withEventsBaseURL")
    }

    private func report(_ status: Int, for url: URL) {
        let (name, setting) = Self.endpoint(of: url)
        guard told.withLock({ $0.insert("\(name) \(status)").inserted }) else { return }
        // Origin and path, never the query: what was asked, never more.
        let asked = (Origin(url)?.description ?? "") + url.pathForMessages
        let advice: String
        switch (status, setting) {
        case (401, _):
            advice = "the API key was refused: check the API key given to start(envId:apiKey:config:) (the platform's Parameters > Environment & Security)"
        case (403, _):
            advice = "this API key may not be used for this environment: check that the env id and the API key are of the same environment"
        case (_, "withBucketingBaseURL"):
            advice = "no bucketing file for this env id: check the env id, that bucketing mode is enabled for the environment in the platform, and \(setting) if you set it"
        default:
            advice = "not found: check the env id, and \(setting) if you set it"
        }
        logger.error("Flagship is misconfigured for environment '\(envId)': \(name) answered HTTP \(status) at \(asked); \(advice). Said once; requests go on and fail until it is fixed")
    }
}
