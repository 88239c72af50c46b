import Foundation

/// A document read in parts on several cores: a root object whose bulk is one long array (a
/// bucketing file's `campaigns`). One pass finds where each of the array's elements lies,
/// following only strings and brackets; the root's other members are read on the way. Each part
/// of the elements is then read on its own (`elements(_:of:in:)`), with the same paths, depths
/// and offsets as a reading of the whole document gives them.
///
/// The pass checks little: each element read must end exactly where the pass said, so a
/// document that reads in parts reads the same in order. Whatever does not read (bad syntax, a
/// value the pass took differently, a repeated array key) is for the caller to read in order,
/// which says what is wrong exactly as before.
extension TolerantJSON {
    struct Split: Sendable {
        /// The array's key.
        let key: String
        /// The root's other members, read.
        let members: [String: FSJSONValue]
        /// Unusable values among `members`.
        let unusable: [Unusable]
        /// Where each element of the array lies, in order.
        let spans: [Range<Int>]

        /// The elements in `parts` runs of about as many bytes each (fewer when there are fewer
        /// elements): the range of element indices of each.
        func parts(_ parts: Int) -> [Range<Int>] {
            guard let first = spans.first, let last = spans.last else { return [] }
            let bytes = last.upperBound - first.lowerBound
            var runs: [Range<Int>] = []
            var start = 0
            for part in 1...max(1, parts) where start < spans.count {
                // The run ends at the first element that starts past its share of the bytes.
                let boundary = first.lowerBound + bytes * part / max(1, parts)
                var end = start + 1
                while end < spans.count, spans[end].lowerBound < boundary { end += 1 }
                if part == parts { end = spans.count }
                runs.append(start..<end)
                start = end
            }
            return runs
        }
    }

    /// The root object of `bytes` with the elements of its array at `key` found but not read;
    /// `nil` when the document is not such an object (or not JSON): the caller reads it in order.
    static func split(_ bytes: UnsafeBufferPointer<UInt8>, arrayAt key: String) -> Split? {
        var reader = Reader(bytes: bytes)
        return try? reader.splitRoot(arrayAt: key)
    }

    /// The elements `range` of `split`'s array, read, with the values found unusable among them;
    /// `nil` when one does not read, or does not end where the pass said.
    static func elements(_ bytes: UnsafeBufferPointer<UInt8>, of split: Split,
                         in range: Range<Int>) -> (values: [FSJSONValue], unusable: [Unusable])? {
        var reader = Reader(bytes: bytes)
        reader.path = [.key(split.key)]
        var values: [FSJSONValue] = []
        values.reserveCapacity(range.count)
        for element in range {
            let span = split.spans[element]
            reader.index = span.lowerBound
            reader.path.append(.index(element))
            // The root is at depth 0, its array at 1, the array's elements at 2.
            guard let value = try? reader.value(depth: 2), reader.index == span.upperBound else { return nil }
            reader.path.removeLast()
            values.append(value)
        }
        return (values, reader.unusable)
    }
}

extension TolerantJSON.Reader {
    fileprivate mutating func splitRoot(arrayAt key: String) throws(TolerantJSON.SyntaxError) -> TolerantJSON.Split? {
        skipWhitespace()
        try expect(UInt8(ascii: "{"))
        var members: [String: FSJSONValue] = [:]
        var spans: [Range<Int>]?
        skipWhitespace()
        guard current != UInt8(ascii: "}") else { return nil }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\""), case .success(let name) = try string() else { return nil }
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            if name == key {
                // A second array would replace the first: read in order.
                guard spans == nil, current == UInt8(ascii: "[") else { return nil }
                spans = passElements()
                guard spans != nil else { return nil }
            } else {
                path.append(.key(name))
                members[name] = try value(depth: 1)
                path.removeLast()
            }
            skipWhitespace()
            if current == UInt8(ascii: ",") { index += 1; continue }
            try expect(UInt8(ascii: "}"))
            break
        }
        skipWhitespace()
        guard index == bytes.count, let spans else { return nil }
        return TolerantJSON.Split(key: key, members: members, unusable: unusable, spans: spans)
    }

    /// Passes over an array from its `[`: where each element lies.
    private mutating func passElements() -> [Range<Int>]? {
        index += 1
        var spans: [Range<Int>] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") { index += 1; return spans }
        while true {
            skipWhitespace()
            let start = index
            guard passValue() else { return nil }
            spans.append(start..<index)
            skipWhitespace()
            guard let byte = current else { return nil }
            index += 1
            if byte == UInt8(ascii: ",") { continue }
            return byte == UInt8(ascii: "]") ? spans : nil
        }
    }

    /// Passes over one value: a string to its closing quote, an object or array to the bracket
    /// that closes it (counting brackets only), anything else to the next delimiter.
    private mutating func passValue() -> Bool {
        guard let first = current else { return false }
        if first == UInt8(ascii: "\"") { return passString() }
        guard first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else {
            while let byte = current, !Self.delimits(byte) { index += 1 }
            return true
        }
        var depth = 0
        while let byte = current {
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                index += 1
                if depth == 0 { return true }
            case UInt8(ascii: "\""):
                guard passString() else { return false }
            default:
                index += 1
            }
        }
        return false
    }

    /// Passes over a string from its opening quote to its closing one: the next quote that an
    /// even run of backslashes (or none) precedes, found with `memchr` (most of a file's bytes
    /// are in strings).
    private mutating func passString() -> Bool {
        guard let base = bytes.baseAddress else { return false }
        var from = index + 1
        while from < bytes.count, let found = memchr(base + from, Int32(UInt8(ascii: "\"")), bytes.count - from) {
            let quote = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            var backslashes = 0
            while quote - backslashes - 1 > index, bytes[quote - backslashes - 1] == UInt8(ascii: "\\") { backslashes += 1 }
            if backslashes % 2 == 0 {
                index = quote + 1
                return true
            }
            from = quote + 1
        }
        return false
    }

    private static func delimits(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"), 0x20, 0x09, 0x0A, 0x0D: true
        default: false
        }
    }
}
