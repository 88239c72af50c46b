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
        // A complete head is held to the same limit as one still arriving.
        guard headEnd + headTerminator.count <= maximumHeadBytes else {
            return .invalid(status: 431, reason: "the request head is over \(maximumHeadBytes) bytes")
        }
        let headText = String(decoding: input[..<headEnd], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, !requestLine[0].isEmpty, requestLine[1].hasPrefix("/") else {
            return .invalid(status: 400, reason: "malformed request line")
        }
        let version = String(requestLine[2])
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            return .invalid(status: 505, reason: "unsupported version \(version)")
        }

        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                return .invalid(status: 400, reason: "malformed header line")
            }
            headers.append((
                String(line[..<colon]),
                line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            ))
        }
        func values(_ name: String) -> [String] {
            headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
        }

        if !values("Transfer-Encoding").isEmpty {
            return .invalid(status: 501, reason: "Transfer-Encoding bodies (chunked) are not supported: send Content-Length")
        }
        let lengths = Set(values("Content-Length"))
        guard lengths.count <= 1 else { return .invalid(status: 400, reason: "conflicting Content-Length headers") }
        var bodyLength = 0
        if let text = lengths.first {
            guard let length = Int(text), length >= 0 else {
                return .invalid(status: 400, reason: "invalid Content-Length \(text)")
            }
            guard length <= maximumBodyBytes else {
                return .invalid(status: 413, reason: "the body is over \(maximumBodyBytes) bytes")
            }
            bodyLength = length
        }

        let bodyStart = headEnd + headTerminator.count
        guard input.count - bodyStart >= bodyLength else {
            let expectsContinue = values("Expect").contains { $0.lowercased() == "100-continue" }
            return .incomplete(expectsContinue: expectsContinue)
        }

        let connectionTokens = values("Connection").flatMap { $0.lowercased().split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        let keepAlive = version == "HTTP/1.1"
            ? !connectionTokens.contains("close")
            : connectionTokens.contains("keep-alive")
        let message = HTTPRequestMessage(
            method: String(requestLine[0]),
            target: String(requestLine[1]),
            headers: headers,
            body: Data(input[bodyStart..<(bodyStart + bodyLength)]),
            keepAlive: keepAlive
        )
        return .request(message, consumed: bodyStart + bodyLength)
    }

    private static func firstIndex(of pattern: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= pattern.count else { return nil }
        for start in 0...(bytes.count - pattern.count) where bytes[start] == pattern[0] {
            if bytes[start..<(start + pattern.count)].elementsEqual(pattern) { return start }
        }
        return nil
    }
}
