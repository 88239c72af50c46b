import Flagship
import Foundation

/// A request that reached the server, as a decision handler and a test see it.
public struct ServerRequest: Sendable {
    /// Which endpoint the path names.
    public let route: Route
    /// The HTTP method as sent (`POST`, `GET`...).
    public let method: String
    /// The path, percent-decoded, without the query.
    public let path: String
    /// The query parameters in order, percent-decoded (`extras[]` appears as named).
    public let query: [(name: String, value: String)]
    /// The header fields, looked up without regard to case.
    public let headers: RequestHeaders
    /// The body bytes as received.
    public let body: Data
    /// The body parsed as JSON; `nil` when empty or not JSON.
    public let json: FSJSONValue?
    /// When the whole request had arrived.
    public let receivedAt: Date
    /// The environment id a campaigns or bucketing path names (`/v2/{envId}/campaigns`,
    /// `/{envId}/bucketing.json`).
    public let envId: String?

    init(_ message: HTTPRequestMessage, receivedAt: Date) {
        let target = message.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let rawPath = String(target[0])
        path = rawPath.removingPercentEncoding ?? rawPath
        query = target.count > 1 ? ServerRequest.parameters(String(target[1])) : []
        (route, envId) = Route.match(path: rawPath)
        method = message.method
        headers = RequestHeaders(message.headers)
        body = message.body
        json = try? FSJSONValue(parsing: message.body)
        self.receivedAt = receivedAt
    }

    /// The values of query parameter `name`, in order.
    public func queryValues(_ name: String) -> [String] {
        query.filter { $0.name == name }.map(\.value)
    }

    private static func parameters(_ query: String) -> [(name: String, value: String)] {
        func decode(_ text: Substring) -> String {
            let spaced = text.replacingOccurrences(of: "+", with: " ")
            return spaced.removingPercentEncoding ?? spaced
        }
        return query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }
}

/// A request's header fields, looked up without regard to case as HTTP wants.
public struct RequestHeaders: Sendable {
    /// Every field in the order received, names as sent.
    public let fields: [(name: String, value: String)]

    init(_ fields: [(name: String, value: String)]) {
        self.fields = fields
    }

    /// The first value of `name`, any case; `nil` when absent.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
