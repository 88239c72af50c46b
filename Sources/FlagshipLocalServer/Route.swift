/// The Flagship endpoints the server answers, named by what they are for.
public enum Route: String, Sendable, CaseIterable, Codable {
    /// `POST /v2/{envId}/campaigns` (or `…/campaigns/`): the Decision API.
    case campaigns
    /// `POST /v2/activate`: a visitor saw a flag.
    case activate
    /// `POST /`: a batch of hits.
    case events
    /// `POST /analytics`: usage telemetry.
    case analytics
    /// `POST /troubleshooting`: troubleshooting telemetry.
    case troubleshooting
    /// `GET /{envId}/bucketing.json`: the bucketing file (the SDK's bucketing mode). The only
    /// route that takes GET.
    case bucketing
    /// Any other path, answered 404 and recorded, so that a test sees where a wrong URL went.
    case unknown

    /// The route of `path` (without its query), and the environment id a campaigns or bucketing
    /// path names.
    static func match(path: String) -> (route: Route, envId: String?) {
        switch path {
        case "/": return (.events, nil)
        case "/v2/activate": return (.activate, nil)
        case "/analytics": return (.analytics, nil)
        case "/troubleshooting": return (.troubleshooting, nil)
        default:
            var segments = path.split(separator: "/", omittingEmptySubsequences: false)
            // `/v2/{envId}/campaigns/`: the trailing slash the official Python SDK sends, which the
            // Decision API answers as it answers the path without it.
            if segments.count == 5, segments[4].isEmpty, segments[3] == "campaigns" { segments.removeLast() }
            if segments.count == 4, segments[0].isEmpty, segments[1] == "v2", !segments[2].isEmpty, segments[3] == "campaigns" {
                return (.campaigns, String(segments[2]).removingPercentEncoding ?? String(segments[2]))
            }
            if segments.count == 3, segments[0].isEmpty, !segments[1].isEmpty, segments[2] == "bucketing.json" {
                return (.bucketing, String(segments[1]).removingPercentEncoding ?? String(segments[1]))
            }
            return (.unknown, nil)
        }
    }

    /// The HTTP method the route takes.
    var method: String {
        self == .bucketing ? "GET" : "POST"
    }
}
