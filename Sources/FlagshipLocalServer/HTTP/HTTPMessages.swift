import Foundation

/// One HTTP/1.x request as read off a connection: what the socket layer hands the server.
struct HTTPRequestMessage: Sendable {
    let method: String
    /// The request target as sent: path and query, still percent-encoded.
    let target: String
    let headers: [(name: String, value: String)]
    let body: Data
    /// Whether the client wants the connection kept for another request (HTTP/1.1 unless it
    /// said `Connection: close`; HTTP/1.0 only if it said `keep-alive`).
    let keepAlive: Bool
}

/// One response: the status, its headers and its whole body.
struct HTTPResponseMessage: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: Data

    /// The head and the body in one buffer, written in one `send`: a head written apart from its
    /// body waits for the client's delayed ACK (Nagle), about 40 ms per request on loopback.
    func serialized(closing: Bool, bodyPrefix: Int? = nil) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(HTTPResponseMessage.reason(for: status))\r\n"
        for (name, value) in headers {
            head += "\(name): \(value)\r\n"
        }
        // 204 and 304 have no body, and say nothing of one.
        if status != 204 && status != 304 {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += closing ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n"
        var bytes = Array(head.utf8)
        bytes.append(contentsOf: body.prefix(bodyPrefix ?? body.count))
        return bytes
    }

    static func reason(for status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Status \(status)"
        }
    }
}

/// What the server does with a connection once it has decided on a request.
enum HTTPReply: Sendable {
    /// Answers; `close` ends the connection afterwards even if the client wanted to keep it.
    case respond(HTTPResponseMessage, close: Bool)
    /// Sends the head, announcing the whole body, then half the body, and closes: a transfer
    /// cut off mid-way.
    case cutOff(HTTPResponseMessage)
    /// Closes the connection without a byte of answer.
    case drop
}
