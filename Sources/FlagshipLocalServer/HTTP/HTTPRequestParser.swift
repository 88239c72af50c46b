import Foundation

/// Reads HTTP/1.x requests off the front of a connection's input bytes.
///
/// Bodies must come with `Content-Length` (what URLSession and every Flagship SDK send for a
/// JSON body); a chunked body is refused with 501 rather than misread.
enum HTTPRequestParser {
    enum Result {
        /// The request is not complete yet. `expectsContinue`: the head is complete, asks for
        /// `100 Continue`, and the body has not come.
        case incomplete(expectsContinue: Bool)
        /// A whole request, and how many input bytes it took.
        case request(HTTPRequestMessage, consumed: Int)
        /// The input is not a request this server can read: answer `status` and close.
        case invalid(status: Int, reason: String)
    }

    static let maximumHeadBytes = 64 * 1024
    static let maximumBodyBytes = 64 * 1024 * 1024

    private static let headTerminator: [UInt8] = [13, 10, 13, 10]

    static func parse(_ input: [UInt8]) -> Result {
        guard let headEnd = firstIndex(of: headTerminator, in: input) else {
            if input.count > maximumHeadBytes {
                return .invalid(status: 431, reason: "the request head is over \(maximumHeadBytes) bytes")
            }
            return .incomplete(expectsContinue: false)
        }
        do throws(Refusal) {
            // A complete head is held to the same limit as one still arriving.
            guard headEnd + headTerminator.count <= maximumHeadBytes else {
                throw Refusal(status: 431, reason: "the request head is over \(maximumHeadBytes) bytes")
            }
            let head = try RequestHead(String(decoding: input[..<headEnd], as: UTF8.self))
            let bodyLength = try head.bodyLength()
            let bodyStart = headEnd + headTerminator.count
            guard input.count - bodyStart >= bodyLength else {
                return .incomplete(expectsContinue: head.expectsContinue)
            }
            let message = HTTPRequestMessage(
                method: String(head.method),
                target: String(head.target),
                headers: head.headers,
                body: Data(input[bodyStart..<(bodyStart + bodyLength)]),
                keepAlive: head.keepAlive
            )
            return .request(message, consumed: bodyStart + bodyLength)
        } catch {
            return .invalid(status: error.status, reason: error.reason)
        }
    }

    /// Why the input is not a request this server can read: the status to answer, and the reason.
    private struct Refusal: Error {
        let status: Int
        let reason: String
    }

    /// A request's head: its request line and header fields, and what they say about the body and
    /// the connection.
    private struct RequestHead {
        let method: Substring
        let target: Substring
        let version: String
        let headers: [(name: String, value: String)]

        /// Reads the head's text (without the blank line that ends it).
        init(_ text: String) throws(Refusal) {
            var lines = text.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
            guard requestLine.count == 3, !requestLine[0].isEmpty, requestLine[1].hasPrefix("/") else {
                throw Refusal(status: 400, reason: "malformed request line")
            }
            let version = String(requestLine[2])
            guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
                throw Refusal(status: 505, reason: "unsupported version \(version)")
            }
            var headers: [(name: String, value: String)] = []
            for line in lines {
                guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                    throw Refusal(status: 400, reason: "malformed header line")
                }
                headers.append((
                    String(line[..<colon]),
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                ))
            }
            method = requestLine[0]
            target = requestLine[1]
            self.version = version
            self.headers = headers
        }

        /// The values of the header fields named `name` (in any case), in order.
        func values(_ name: String) -> [String] {
            headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
        }

        /// The body's length its `Content-Length` gives (0 without one); refused when it is chunked,
        /// given twice differently, not a length, or over `maximumBodyBytes`.
        func bodyLength() throws(Refusal) -> Int {
            if !values("Transfer-Encoding").isEmpty {
                throw Refusal(status: 501, reason: "Transfer-Encoding bodies (chunked) are not supported: send Content-Length")
            }
            let lengths = Set(values("Content-Length"))
            guard lengths.count <= 1 else { throw Refusal(status: 400, reason: "conflicting Content-Length headers") }
            guard let text = lengths.first else { return 0 }
            guard let length = Int(text), length >= 0 else {
                throw Refusal(status: 400, reason: "invalid Content-Length \(text)")
            }
            guard length <= maximumBodyBytes else {
                throw Refusal(status: 413, reason: "the body is over \(maximumBodyBytes) bytes")
            }
            return length
        }

        /// Whether the client waits for `100 Continue` before sending the body.
        var expectsContinue: Bool {
            values("Expect").contains { $0.lowercased() == "100-continue" }
        }

        /// Whether the connection stays open after the answer: HTTP/1.1 unless `Connection: close`,
        /// HTTP/1.0 only with `Connection: keep-alive`.
        var keepAlive: Bool {
            let connectionTokens = values("Connection").flatMap { $0.lowercased().split(separator: ",") }
                .map { $0.trimmingCharacters(in: .whitespaces) }
            return version == "HTTP/1.1"
                ? !connectionTokens.contains("close")
                : connectionTokens.contains("keep-alive")
        }
    }

    private static func firstIndex(of pattern: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= pattern.count else { return nil }
        for start in 0...(bytes.count - pattern.count) where bytes[start] == pattern[0] {
            if bytes[start..<(start + pattern.count)].elementsEqual(pattern) { return start }
        }
        return nil
    }
}
