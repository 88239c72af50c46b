import Flagship
import Foundation

/// What a decision handler answers: a status and a body, sent as `application/json`.
public struct ServerResponse: Sendable, Equatable {
    /// The HTTP status code.
    public var status: Int
    /// The body bytes, sent as given.
    public var body: Data
    /// The `Content-Type` header's value. Default `application/json`.
    public var contentType: String
    /// Further header fields (`Last-Modified`...), sent in name order.
    public var headers: [String: String]

    /// An answer of `status` (default 200) with `body`, of `contentType`, with further `headers`.
    public init(status: Int = 200, body: Data, contentType: String = "application/json", headers: [String: String] = [:]) {
        self.status = status
        self.body = body
        self.contentType = contentType
        self.headers = headers
    }

    /// `value` as JSON text.
    public static func json(_ value: FSJSONValue, status: Int = 200) -> ServerResponse {
        ServerResponse(status: status, body: value.jsonData())
    }

    /// `{"message": "..."}`: the shape of the server's own error answers.
    public static func error(_ status: Int, _ message: String) -> ServerResponse {
        .json(["message": .string(message)], status: status)
    }
}
