import Foundation

extension FSJSONValue {
    /// Why text is not a JSON value: where reading stopped and what was wrong there.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        /// The byte offset in the text where the syntax broke, or where a value that cannot be held
        /// (a number beyond `Double`, a string with a lone surrogate) begins.
        public let offset: Int
        /// What is wrong, in words: `unexpected character "]"`, `unexpected end of text`,
        /// `payload.amount: the number 1e400 is beyond the range of a double`.
        public let reason: String

        /// `invalid JSON at byte 7: unexpected character "]"`.
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }

        init(syntaxErrorAt offset: Int, in bytes: Data) {
            self.offset = offset
            guard offset < bytes.count else {
                reason = "unexpected end of text"
                return
            }
            let byte = bytes[bytes.startIndex + offset]
            if (0x21..<0x7F).contains(byte) {
                reason = "unexpected character \"\(Character(Unicode.Scalar(byte)))\""
            } else {
                reason = "unexpected byte 0x" + String(byte, radix: 16, uppercase: true)
            }
        }

        init(_ unusable: TolerantJSON.Unusable) {
            offset = unusable.offset
            reason = unusable.sentence.hasPrefix(": ") ? String(unusable.sentence.dropFirst(2)) : unusable.sentence
        }
    }

    /// Parses JSON text (RFC 8259), any value at the top level, strictly: no trailing comma, no
    /// comment, strings valid UTF-8 with their control characters escaped and no lone surrogate,
    /// numbers within `Double`, nesting at most 256 levels. A number keeps the kind its text
    /// has: an integer that fits `Int64` is `.int`, any other (`1.0`, `1e0`, `-0.0`,
    /// `92233720368547758080`) ``double(_:)``, read exactly (`-114688.00000000001` stays that
    /// double). Of a repeated key the last value wins.
    public init(parsing data: Data) throws(ParseError) {
        let parsed: TolerantJSON
        do {
            parsed = try TolerantJSON(data)
        } catch {
            throw ParseError(syntaxErrorAt: error.offset, in: data)
        }
        if let first = parsed.unusable.first {
            throw ParseError(first)
        }
        self = parsed.value
    }

    /// Parses JSON text from its UTF-8, as `init(parsing:)` does from `Data`.
    public init(parsing text: String) throws(ParseError) {
        try self.init(parsing: Data(text.utf8))
    }

    /// Compact JSON text, object keys sorted (`String` order, which for keys in Unicode normal
    /// form C is the order of their UTF-8 bytes): equal values give equal text. A double keeps
    /// its kind (`1.0`), so the text parses back to the same value; past 2^53 an integral double
    /// is written as its exact integer, which other readers would misread in exponent form. A
    /// non-finite double, which no parsed text holds, is written `null`. Written by hand: it is on
    /// the path of every cached hit and of every answer of the local server.
    public func jsonString() -> String {
        var text = ""
        write(into: &text)
        return text
    }

    /// The UTF-8 of ``jsonString()``.
    public func jsonData() -> Data {
        Data(jsonString().utf8)
    }

    /// Appends the value's text (`jsonString()`'s layout) to `text`.
    func write(into text: inout String, integralDoubles: IntegralDoubles = .asDoubles) {
        switch self {
        case .null:
            text += "null"
        case .bool(let value):
            text += value ? "true" : "false"
        case .int(let value):
            text += String(value)
        case .double(let value):
            // Swift prints the shortest text that reads back the same, which JSON accepts; a
            // non-finite value cannot be written in JSON. Past 2^53 an integral double is always
            // written as its exact integer: "3.316666666666667e+17" reads back as the integer
            // 331666666666666700, not the double's 331666666666666688.
            let asInteger = integralDoubles == .asIntegers || abs(value) >= 9_007_199_254_740_992
            if value.isFinite, asInteger, let exact = Int64(exactly: value) {
                text += String(exact)
            } else {
                text += value.isFinite ? "\(value)" : "null"
            }
        case .string(let value):
            Self.writeString(value, into: &text)
        case .array(let values):
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                value.write(into: &text, integralDoubles: integralDoubles)
            }
            text += "]"
        case .object(let object):
            text += "{"
            for (index, member) in object.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { text += "," }
                Self.writeString(member.key, into: &text)
                text += ":"
                member.value.write(into: &text, integralDoubles: integralDoubles)
            }
            text += "}"
        }
    }

    /// How `write(into:)` writes a double with no fractional part.
    enum IntegralDoubles {
        /// `15.0`: a hit's amount is sent as the app gave it.
        case asDoubles
        /// `15`, as `JSONEncoder` writes it: the visitor cache document's layout, read back as an
        /// integer, so that a document written again is the same text.
        case asIntegers
    }

    /// Appends `string` as a JSON string literal.
    package static func writeString(_ string: String, into text: inout String) {
        text += "\""
        // Most strings need no escape: copy them whole.
        guard string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            text += string
            text += "\""
            return
        }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
