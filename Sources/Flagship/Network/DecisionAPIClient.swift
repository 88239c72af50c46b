import Foundation

/// Asks the Decision API for a visitor's campaigns (API mode, PROTOCOL.md section 1).
///
/// `POST {baseURL}/{envId}/campaigns?exposeAllKeys=true&extras%5B%5D=accountSettings`: the brackets
/// of `extras[]` are percent-encoded, as RFC 3986 wants and as Foundation's `URL` always writes them;
/// servers decode the query either way.
package final class DecisionAPIClient: Sendable {
    let envId: String
    let baseURL: URL
    /// Seconds; bounds the whole call, connection included.
    let timeout: TimeInterval
    let sdkVersion: String
    private let apiKey: String
    private let transport: any HTTPTransport

    package init(envId: String, apiKey: String, baseURL: URL, timeout: TimeInterval, sdkVersion: String = SDKInfo.version,
         transport: any HTTPTransport) {
        self.envId = envId
        self.apiKey = apiKey
        self.baseURL = baseURL
        self.timeout = timeout
        self.sdkVersion = sdkVersion
        self.transport = transport
    }

    /// The campaigns URL for this environment.
    package var campaignsURL: URL {
        baseURL.flagshipEndpoint(path: [envId, "campaigns"], query: "exposeAllKeys=true&extras%5B%5D=accountSettings")
    }

    /// The visitor's decision. `context` is sent as given (the caller adds the predefined keys);
    /// `trigger_hit` is always false, because the SDK reports exposure itself (activate).
    package func fetchCampaigns(visitorId: String, anonymousId: String?, context: [String: FSJSONValue],
                        hasConsented: Bool) async throws(DecisionError) -> DecisionResponse {
        let body = FSJSONValue.object([
            "visitorId": .string(visitorId),
            "anonymousId": anonymousId.map(FSJSONValue.string) ?? .null,
            "context": .object(context),
            "trigger_hit": .bool(false),
            "visitor_consent": .bool(hasConsented),
        ])
        let request = FSHTTPRequest.flagshipPOST(url: campaignsURL, body: body.jsonData(), apiKey: apiKey,
                                               sdkVersion: sdkVersion, timeout: timeout)
        let response: FSHTTPResponse
        do {
            response = try await transport.send(request)
        } catch {
            switch error {
            case .timedOut(let after): throw .timedOut(after: after)
            case .responseTooLarge: throw .malformedBody(error.description(redacting: apiKey))
            case .connectionFailed, .cancelled, .redirectRefused, .redirectNotFollowed, .networkDisabled: throw .transport(error.description(redacting: apiKey))
            }
        }
        guard response.isSuccess else { throw .httpStatus(response.status) }
        return try DecisionResponse(json: response.body)
    }
}

extension URL {
    /// `self` (a service's base URL, with or without a trailing slash) followed by the given path
    /// segments, each percent-encoded, and a query already percent-encoded.
    func flagshipEndpoint(path segments: [String], query: String? = nil) -> URL {
        var components = URLComponents(url: self, resolvingAgainstBaseURL: false) ?? URLComponents()
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        for segment in segments {
            path += "/" + (segment.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentAllowed) ?? segment)
        }
        components.percentEncodedPath = path.isEmpty ? "/" : path
        components.percentEncodedQuery = query
        return components.url ?? self
    }
}

extension CharacterSet {
    /// Characters allowed in one path segment: `urlPathAllowed` without the `/`.
    fileprivate static let urlPathSegmentAllowed = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))
}
