import ArgumentParser
import Flagship
import Foundation

/// The `--context` option's JSON object, each value exact or refused by its key.
///
/// `JSONSerialization` reads `18446744073709551615` and `1e29` as doubles that are not the numbers written,
/// and refuses a whole document for one `1e309` or `NaN`. This reads the flat object itself, so a value the
/// decision API cannot take is named with the reason instead.
enum ContextArgument {
    static let example = #"for example '{"plan": "pro", "age": 32, "isVip": true}'"#

    static func parse(_ text: String) throws -> [String: FSJSONValue] {
        var reader = Reader(bytes: Array(text.utf8))
        return try reader.object()
    }

    /// The values as `withContext` takes them.
    static func anyValues(_ context: [String: FSJSONValue]) -> [String: Any] {
        context.compactMapValues { value -> Any? in
            switch value {
            case .string(let string): return string
            case .bool(let bool): return bool
            case .int(let int): return Int(int)
            case .double(let double): return double
            default: return nil
            }
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        private var notAnObject: ValidationError { ValidationError("--context must be a JSON object, \(ContextArgument.example)") }

        private mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        private mutating func expect(_ byte: UInt8) throws {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == byte else { throw notAnObject }
            index += 1
        }

        mutating func object() throws -> [String: FSJSONValue] {
            try expect(UInt8(ascii: "{"))
            var result: [String: FSJSONValue] = [:]
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    skipWhitespace()
                    let key = try string()
                    try expect(UInt8(ascii: ":"))
                    skipWhitespace()
                    let value = try self.value(key: key)
                    if result[key] != nil { throw refusal(key, "appears twice") }
                    if key.hasPrefix("fs_") { throw ValidationError(#"--context: "\#(key)" is refused: keys starting with fs_ belong to the SDK"#) }
                    result[key] = value
                    skipWhitespace()
                    guard index < bytes.count else { throw notAnObject }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "}") { index += 1; break }
                    throw notAnObject
                }
            }
            skipWhitespace()
            guard index == bytes.count else { throw notAnObject }
            return result
        }

        /// A JSON string token, decoded by `JSONSerialization` so escapes and UTF-8 are checked as JSON does.
        private mutating func string() throws -> String {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw notAnObject }
            let start = index
            index += 1
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            guard index < bytes.count else { throw notAnObject }
            index += 1
            let token = Data([UInt8(ascii: "[")] + bytes[start..<index] + [UInt8(ascii: "]")])
            guard let array = try? JSONSerialization.jsonObject(with: token) as? [Any], let string = array.first as? String else {
                throw notAnObject
            }
            return string
        }

        private func refusal(_ key: String, _ reason: String) -> ValidationError {
            ValidationError(#"--context: the value of "\#(key)" \#(reason)"#)
        }

        private mutating func value(key: String) throws -> FSJSONValue {
            guard index < bytes.count else { throw notAnObject }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                throw refusal(key, "must be a string, a number or a boolean, not a nested object or array")
            default:
                let start = index
                while index < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), 0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) {
                    index += 1
                }
                let token = String(decoding: bytes[start..<index], as: UTF8.self)
                return try scalar(token, key: key)
            }
        }

        private func scalar(_ token: String, key: String) throws -> FSJSONValue {
            switch token {
            case "true": return .bool(true)
            case "false": return .bool(false)
            case "null": throw refusal(key, "must be a string, a number or a boolean, not null")
            default: break
            }
            let isJSONNumber = token.range(of: #"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"#, options: .regularExpression) != nil
            guard isJSONNumber else {
                if Double(token).map({ !$0.isFinite }) == true {
                    throw refusal(key, "\(token) is not a finite number")
                }
                throw notAnObject
            }
            let isInteger = !token.contains(".") && !token.contains("e") && !token.contains("E")
            if isInteger {
                guard let int = Int64(token) else {
                    throw refusal(key, "\(token) is an integer outside -9223372036854775808...9223372036854775807 and cannot be sent exactly")
                }
                return .int(int)
            }
            guard let double = Double(token), double.isFinite else {
                throw refusal(key, "\(token) is not a finite number")
            }
            if double.rounded() == double, Int64(exactly: double) == nil {
                throw refusal(key, "\(token) is an integer outside -9223372036854775808...9223372036854775807 and cannot be sent exactly")
            }
            return .double(double)
        }
    }
}
