import Foundation

/// JSON text read so that one unusable value costs only itself: a number beyond `Double` (`1e400`), a
/// string with a lone surrogate (`"\ud800"`) or invalid UTF-8, or a value nested deeper than
/// ``maximumDepth`` is replaced by `null` and reported with its path, instead of refusing the whole
/// document as `JSONSerialization` does. Integers that fit `Int64` are kept exactly. Anything that is not
/// JSON syntax still refuses the document.
package struct TolerantJSON: Sendable {
    /// One step of a path from the root.
    package enum Step: Equatable, Sendable, CustomStringConvertible {
        case key(String)
        case index(Int)

        package var description: String {
            switch self {
            case .key(let key): return key
            case .index(let index): return "[\(index)]"
            }
        }
    }

    /// A value replaced by `null`, where it was and why.
    package struct Unusable: Equatable, Sendable {
        package let path: [Step]
        package let reason: String
        /// The byte offset of the value's first byte in the text.
        package let offset: Int

        /// `campaigns[0].variation.id: a string holds a lone surrogate`.
        package var sentence: String {
            let location = path.map { step in
                if case .index = step { return step.description }
                return "." + step.description
            }.joined()
            return "\(location.drop { $0 == "." }): \(reason)"
        }
    }

    package struct SyntaxError: Error, Equatable {
        package let offset: Int
    }

    /// Deeper than this, a value is unusable (`JSONSerialization` refuses about 500 levels).
    package static let maximumDepth = 256

    package let value: FSJSONValue
    package let unusable: [Unusable]

    package init(_ data: Data) throws(SyntaxError) {
        // Read in place: a bucketing file can be tens of megabytes.
        let read: Result<(FSJSONValue, [Unusable]), SyntaxError> = data.withUnsafeBytes { raw in
            var reader = Reader(bytes: raw.bindMemory(to: UInt8.self))
            do throws(SyntaxError) {
                reader.skipWhitespace()
                let value = try reader.value(depth: 0)
                reader.skipWhitespace()
                guard reader.index == reader.bytes.count else { throw SyntaxError(offset: reader.index) }
                return .success((value, reader.unusable))
            } catch {
                return .failure(error)
            }
        }
        (value, unusable) = try read.get()
    }

    /// Reads `bytes`, which outlive it (the caller's `withUnsafeBytes`).
    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var path: [Step] = []
        var unusable: [Unusable] = []
        /// The members of the objects being read, innermost last: an object is made once its
        /// members are known, at its size, instead of growing (and rehashing) as they come.
        var members: [(key: String, value: FSJSONValue)] = []

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipWhitespace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
                index += 1
            }
        }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func expect(_ byte: UInt8) throws(SyntaxError) {
            guard current == byte else { throw SyntaxError(offset: index) }
            index += 1
        }

        private mutating func mark(_ reason: String, at offset: Int) -> FSJSONValue {
            unusable.append(Unusable(path: path, reason: reason, offset: offset))
            return .null
        }

        mutating func value(depth: Int) throws(SyntaxError) -> FSJSONValue {
            guard let byte = current else { throw SyntaxError(offset: index) }
            let start = index
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                if depth >= TolerantJSON.maximumDepth {
                    try skipNested()
                    return mark("nested deeper than \(TolerantJSON.maximumDepth) levels", at: start)
                }
                return byte == UInt8(ascii: "{") ? try object(depth: depth) : try array(depth: depth)
            case UInt8(ascii: "\""):
                switch try string() {
                case .success(let string): return .string(string)
                case .failure(let reason): return mark(reason.reason, at: start)
                }
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return try number()
            }
        }

        private mutating func literal(_ word: String) throws(SyntaxError) {
            for byte in word.utf8 { try expect(byte) }
        }

        private mutating func object(depth: Int) throws(SyntaxError) -> FSJSONValue {
            try expect(UInt8(ascii: "{"))
            skipWhitespace()
            if current == UInt8(ascii: "}") { index += 1; return .object([:]) }
            let first = members.count
            defer { members.removeSubrange(first...) }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw SyntaxError(offset: index) }
                let keyStart = index
                guard case .success(let key) = try string() else { throw SyntaxError(offset: keyStart) }
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                skipWhitespace()
                path.append(.key(key))
                let member = try value(depth: depth + 1)
                members.append((key, member))
                path.removeLast()
                skipWhitespace()
                if current == UInt8(ascii: ",") { index += 1; continue }
                try expect(UInt8(ascii: "}"))
                // Of a repeated key, the last value wins.
                var object = [String: FSJSONValue](minimumCapacity: members.count - first)
                for member in members[first...] { object[member.key] = member.value }
                return .object(object)
            }
        }

        private mutating func array(depth: Int) throws(SyntaxError) -> FSJSONValue {
            try expect(UInt8(ascii: "["))
            var array: [FSJSONValue] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") { index += 1; return .array(array) }
            while true {
                skipWhitespace()
                path.append(.index(array.count))
                array.append(try value(depth: depth + 1))
                path.removeLast()
                skipWhitespace()
                if current == UInt8(ascii: ",") { index += 1; continue }
                try expect(UInt8(ascii: "]"))
                return .array(array)
            }
        }

        /// Passes over a nested value too deep to keep, checking only that its brackets and strings close.
        private mutating func skipNested() throws(SyntaxError) {
            var closers: [UInt8] = []
            repeat {
                guard let byte = current else { throw SyntaxError(offset: index) }
                switch byte {
                case UInt8(ascii: "{"): closers.append(UInt8(ascii: "}")); index += 1
                case UInt8(ascii: "["): closers.append(UInt8(ascii: "]")); index += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    guard closers.popLast() == byte else { throw SyntaxError(offset: index) }
                    index += 1
                case UInt8(ascii: "\""): _ = try string()
                default: index += 1
                }
            } while !closers.isEmpty
        }

        /// A string token: its text, or why its text is unusable (the token itself is well formed).
        mutating func string() throws(SyntaxError) -> Result<String, ReasonError> {
            try expect(UInt8(ascii: "\""))
            // Most strings hold no escape: their bytes, checked as UTF-8, at once.
            if let text = plainString() { return .success(text) }
            return try escapedString()
        }

        /// The text up to the closing quote, past which it moves, when that holds no escape or
        /// control byte and is valid UTF-8; otherwise `nil`, still at the text's start.
        private mutating func plainString() -> String? {
            var end = index
            var ascii = true
            while end < bytes.count {
                let byte = bytes[end]
                if byte == UInt8(ascii: "\"") {
                    // ASCII needs no validation, which costs more than the decoding (a generic
                    // metadata lookup per call): most keys and values are ASCII.
                    let text = ascii
                        ? String(decoding: bytes[index..<end], as: UTF8.self)
                        : String(validating: bytes[index..<end], as: UTF8.self)
                    guard let text else { return nil }
                    index = end + 1
                    return text
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                ascii = ascii && byte < 0x80
                end += 1
            }
            return nil
        }

        /// The string's text from its start to the closing quote, byte by byte: escapes decoded to
        /// UTF-8 beside the other bytes, the whole checked as UTF-8 at the end (a problem there
        /// is the reason before a lone surrogate).
        private mutating func escapedString() throws(SyntaxError) -> Result<String, ReasonError> {
            var decoded: [UInt8] = []
            var highSurrogate: UInt16?
            var loneSurrogate = false
            while true {
                guard let byte = current else { throw SyntaxError(offset: index) }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: decoded, as: UTF8.self) else {
                        return .failure(ReasonError(reason: "a string is not valid UTF-8"))
                    }
                    if loneSurrogate || highSurrogate != nil {
                        return .failure(ReasonError(reason: "a string holds a lone surrogate"))
                    }
                    return .success(text)
                case UInt8(ascii: "\\"):
                    let unit = try escapedUnit()
                    switch unit {
                    case 0xD800...0xDBFF:
                        if highSurrogate != nil { loneSurrogate = true }
                        highSurrogate = unit
                    case 0xDC00...0xDFFF:
                        if let high = highSurrogate {
                            let value = 0x10000 + (UInt32(high - 0xD800) << 10) + UInt32(unit - 0xDC00)
                            Self.appendUTF8(of: value, to: &decoded)
                            highSurrogate = nil
                        } else {
                            loneSurrogate = true
                        }
                    default:
                        if highSurrogate != nil { loneSurrogate = true; highSurrogate = nil }
                        Self.appendUTF8(of: UInt32(unit), to: &decoded)
                    }
                case 0x00..<0x20:
                    throw SyntaxError(offset: index - 1)
                default:
                    if highSurrogate != nil { loneSurrogate = true; highSurrogate = nil }
                    decoded.append(byte)
                }
            }
        }

        /// Appends the UTF-8 of the scalar `value` (not a surrogate) to `bytes`.
        private static func appendUTF8(of value: UInt32, to bytes: inout [UInt8]) {
            guard let scalar = Unicode.Scalar(value) else { return }
            UTF8.encode(scalar) { bytes.append($0) }
        }

        /// The UTF-16 unit of the escape after a backslash.
        private mutating func escapedUnit() throws(SyntaxError) -> UInt16 {
            guard let escaped = current else { throw SyntaxError(offset: index) }
            index += 1
            switch escaped {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return UInt16(escaped)
            case UInt8(ascii: "b"): return 0x08
            case UInt8(ascii: "f"): return 0x0C
            case UInt8(ascii: "n"): return 0x0A
            case UInt8(ascii: "r"): return 0x0D
            case UInt8(ascii: "t"): return 0x09
            case UInt8(ascii: "u"):
                // Four hex digits exactly: no sign, as `UInt16(_:radix:)` would take.
                guard index + 4 <= bytes.count else { throw SyntaxError(offset: index) }
                var unit: UInt16 = 0
                for byte in bytes[index..<index + 4] {
                    let digit: UInt8
                    switch byte {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                    default: throw SyntaxError(offset: index)
                    }
                    unit = unit << 4 | UInt16(digit)
                }
                index += 4
                return unit
            default: throw SyntaxError(offset: index - 1)
            }
        }

        private mutating func number() throws(SyntaxError) -> FSJSONValue {
            let start = index
            if current == UInt8(ascii: "-") { index += 1 }
            func digits() -> Int {
                let from = index
                while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
                return index - from
            }
            let integerDigits = digits()
            guard integerDigits > 0 else { throw SyntaxError(offset: start) }
            if integerDigits > 1, bytes[index - integerDigits] == UInt8(ascii: "0") { throw SyntaxError(offset: start) }
            var isInteger = true
            if current == UInt8(ascii: ".") {
                index += 1
                isInteger = false
                guard digits() > 0 else { throw SyntaxError(offset: index) }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                isInteger = false
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw SyntaxError(offset: index) }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, let exact = Int64(text) { return .int(exact) }
            guard let double = Double(text), double.isFinite else {
                return mark("the number \(text.prefix(40)) is beyond the range of a double", at: start)
            }
            return .double(double)
        }
    }

    struct ReasonError: Error {
        let reason: String
    }
}

extension FSJSONValue {
    /// Takes out the value at `path` (an object's key, an array's element); nothing when there is none.
    package mutating func remove(at path: ArraySlice<TolerantJSON.Step>) {
        guard let first = path.first else { return }
        switch (self, first) {
        case (.object(var object), .key(let key)):
            if path.count == 1 {
                object[key] = nil
            } else if var child = object[key] {
                child.remove(at: path.dropFirst())
                object[key] = child
            }
            self = .object(object)
        case (.array(var array), .index(let index)) where array.indices.contains(index):
            if path.count == 1 {
                array.remove(at: index)
            } else {
                array[index].remove(at: path.dropFirst())
            }
            self = .array(array)
        default:
            return
        }
    }
}
