import Foundation

/// A redirect an answer asked for: its status and where `Location` points (resolved against the
/// request's URL; `nil` when it does not make a URL). Judged by the SDK, never followed by the
/// HTTP client itself, since the request's headers carry the API key.
struct Redirect: Sendable {
    /// Redirects followed within the origin before a request fails.
    static let maxFollowed = 5

    let status: Int
    let target: URL?

    /// The redirect an answer to a request for `url` asks for, if it is one: a 301, 302, 303,
    /// 307 or 308 with a `Location` (names lowered, as ``FSHTTPResponse`` keeps them).
    init?(answer response: FSHTTPResponse, to url: URL) {
        guard [301, 302, 303, 307, 308].contains(response.status), let location = response.headers["location"] else { return nil }
        self.init(status: response.status, target: URL(string: location, relativeTo: url)?.absoluteURL)
    }

    init(status: Int, target: URL?) {
        self.status = status
        self.target = target
    }

    /// Where this redirect leads `request`, when it stays within the origin of `first` (the URL
    /// the caller gave). A 307 or 308 keeps the method and the body. Any other would turn a
    /// request with a body into a GET without it, whose answer says nothing about the body (a
    /// batch of hits would look delivered): it is followed only by a request without a body.
    /// The headers, API key included, go along: to the same origin only.
    func request(following request: FSHTTPRequest, from first: URL) throws(TransportError) -> FSHTTPRequest {
        let from = Origin(first)
        let to = target.flatMap(Origin.init)
        guard let from, let to, from == to, let target else {
            throw .redirectRefused(from: from?.description ?? first.hostAndPort, to: to?.description ?? "an unusable URL")
        }
        let keepsBody = status == 307 || status == 308
        guard keepsBody || (request.method == .get && request.body == nil) else {
            throw .redirectNotFollowed(status: status, to: to.description + target.pathForMessages)
        }
        var next = request
        next.url = target
        return next
    }
}
