/// A JSON value in a tagged binary layout, for what the SDK keeps for itself and reads back often
/// (the compiled bucketing file): no text to tokenize, numbers kept exactly as they were read
/// (an integer stays an integer, a double keeps its 64 bits), lengths up front.
///
/// Layout: one tag byte, then the payload. `null`, `false`, `true`: nothing. An integer or a
/// double: 8 bytes, little-endian. A string: its UTF-8 length as a LEB128 varint, then the bytes.
/// An array: its count, then each value. An object: its count, then each member as a string key
/// and a value, keys sorted (the same value always gives the same bytes).
enum BinaryJSON {
    enum Tag: UInt8 {
        case null = 0, `false`, `true`, int, double, string, array, object
    }

    /// Why bytes are not a value of this layout: a truncated or damaged blob.
    struct Malformed: Error, Equatable, CustomStringConvertible {
        let reason: String
        let offset: Int
        var description: String { "\(reason) at byte \(offset)" }
    }

    /// Nesting deeper than this is refused when read: a damaged blob must not exhaust the stack.
    static let maximumDepth = 512

    // MARK: Writing

    static func append(_ value: FSJSONValue, to bytes: inout [UInt8]) {
        switch value {
        case .null: bytes.append(Tag.null.rawValue)
        case .bool(let flag): bytes.append(flag ? Tag.true.rawValue : Tag.false.rawValue)
        case .int(let number):
            bytes.append(Tag.int.rawValue)
            appendFixed(UInt64(bitPattern: number), to: &bytes)
        case .double(let number):
            bytes.append(Tag.double.rawValue)
            appendFixed(number.bitPattern, to: &bytes)
        case .string(let text):
            bytes.append(Tag.string.rawValue)
            appendString(text, to: &bytes)
        case .array(let values):
            bytes.append(Tag.array.rawValue)
            appendVarint(UInt64(values.count), to: &bytes)
            for element in values { append(element, to: &bytes) }
        case .object(let members):
            bytes.append(Tag.object.rawValue)
            appendVarint(UInt64(members.count), to: &bytes)
            for key in members.keys.sorted() {
                appendString(key, to: &bytes)
                append(members[key]!, to: &bytes)
            }
        }
    }

    static func appendString(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { utf8 in
            appendVarint(UInt64(utf8.count), to: &bytes)
            bytes.append(contentsOf: utf8)
        }
    }

    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    static func appendFixed(_ value: UInt64, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: repeatElement(0, count: 8))
        writeFixed(value, into: &bytes, at: bytes.count - 8)
    }

    /// Writes `value` over the 8 bytes at `offset`, little-endian (a header filled in afterwards).
    static func writeFixed(_ value: UInt64, into bytes: inout [UInt8], at offset: Int) {
        for index in 0..<8 {
            bytes[offset + index] = UInt8(truncatingIfNeeded: value >> UInt64(index * 8))
        }
    }

    /// The 8 bytes at `offset`, little-endian; the caller has checked they are there.
    static func fixed(in bytes: [UInt8], at offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << UInt64($1 * 8) }
    }

    // MARK: Reading

    /// Reads values from `bytes`, every length checked against what is left.
    struct Reader: ~Copyable {
        let bytes: UnsafeRawBufferPointer
        private(set) var offset: Int

        init(_ bytes: UnsafeRawBufferPointer, at offset: Int = 0) {
            self.bytes = bytes
            self.offset = offset
        }

        var isAtEnd: Bool { offset == bytes.count }

        mutating func value(depth: Int = 0) throws(Malformed) -> FSJSONValue {
            guard depth < BinaryJSON.maximumDepth else { throw Malformed(reason: "nesting deeper than \(BinaryJSON.maximumDepth)", offset: offset) }
            let at = offset
            guard let tag = Tag(rawValue: try byte()) else { throw Malformed(reason: "an unknown tag", offset: at) }
            switch tag {
            case .null: return .null
            case .false: return .bool(false)
            case .true: return .bool(true)
            case .int: return .int(Int64(bitPattern: try fixed()))
            case .double: return .double(Double(bitPattern: try fixed()))
            case .string: return .string(try string())
            case .array:
                let count = try count()
                var values: [FSJSONValue] = []
                values.reserveCapacity(count)
                for _ in 0..<count { values.append(try value(depth: depth + 1)) }
                return .array(values)
            case .object:
                let count = try count()
                var members: [String: FSJSONValue] = [:]
                for _ in 0..<count {
                    let key = try string()
                    members[key] = try value(depth: depth + 1)
                }
                return .object(members)
            }
        }

        @inline(__always)
        mutating func byte() throws(Malformed) -> UInt8 {
            guard offset < bytes.count else { throw Malformed(reason: "the end of the bytes", offset: offset) }
            defer { offset += 1 }
            return bytes[offset]
        }

        @inline(__always)
        mutating func varint() throws(Malformed) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let at = offset
                let next = try byte()
                guard shift < 64 else { throw Malformed(reason: "a length past 64 bits", offset: at) }
                value |= UInt64(next & 0x7F) << shift
                if next & 0x80 == 0 { return value }
                shift += 7
            }
        }

        /// A count or a length: never more than the bytes left (each element takes one at least).
        @inline(__always)
        mutating func count() throws(Malformed) -> Int {
            let at = offset
            let value = try varint()
            guard value <= UInt64(bytes.count - offset) else { throw Malformed(reason: "a length past the end", offset: at) }
            return Int(value)
        }

        /// Passes over a list of strings (a count, then each one's length and bytes) unread.
        mutating func skipStrings() throws(Malformed) {
            for _ in 0..<(try count()) {
                offset += try count()
            }
        }

        /// Where the block whose length is at the reader ends (the reader is left at its start).
        @inline(__always)
        mutating func blockEnd() throws(Malformed) -> Int {
            let length = try count()
            return offset + length
        }

        /// Moves to `target`, inside the bytes.
        @inline(__always)
        mutating func seek(to target: Int) throws(Malformed) {
            guard target >= 0, target <= bytes.count else { throw Malformed(reason: "a place out of the bytes", offset: offset) }
            offset = target
        }

        /// Checks that a block read whole ended where its length said.
        func expect(end: Int) throws(Malformed) {
            guard offset == end else { throw Malformed(reason: "a block that does not end where its length says", offset: offset) }
        }

        /// A string's bytes where they lie, checked to be UTF-8.
        @inline(__always)
        mutating func utf8() throws(Malformed) -> UnsafeBufferPointer<UInt8> {
            let at = offset
            let length = try count()
            let raw = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
            let utf8 = raw.assumingMemoryBound(to: UInt8.self)
            guard Self.isASCII(raw) || String(validating: utf8, as: UTF8.self) != nil else {
                throw Malformed(reason: "a string that is not UTF-8", offset: at)
            }
            offset += length
            return utf8
        }

        /// Whether every byte is below 0x80, read 8 bytes at a time (ids, keys and most names:
        /// UTF-8 as they are, without the general check).
        @inline(__always)
        static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
            var seen: UInt64 = 0
            var index = 0
            while index + 8 <= bytes.count {
                seen |= bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                index += 8
            }
            while index < bytes.count {
                seen |= UInt64(bytes[index])
                index += 1
            }
            return seen & 0x8080_8080_8080_8080 == 0
        }

        @inline(__always)
        mutating func fixed() throws(Malformed) -> UInt64 {
            guard bytes.count - offset >= 8 else { throw Malformed(reason: "the end of the bytes", offset: offset) }
            var value: UInt64 = 0
            for index in 0..<8 { value |= UInt64(bytes[offset + index]) << UInt64(index * 8) }
            offset += 8
            return value
        }

        mutating func string() throws(Malformed) -> String {
            // ASCII (ids, keys, most names) is UTF-8 as it is: decoded without the generic check.
            String(decoding: try utf8(), as: UTF8.self)
        }

        /// A string's bytes where they lie, not checked: for a blob whose strings were all checked
        /// when it was read (the compiled bucketing file at its start).
        @inline(__always)
        mutating func checkedUTF8() throws(Malformed) -> UnsafeBufferPointer<UInt8> {
            let length = try count()
            defer { offset += length }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]).assumingMemoryBound(to: UInt8.self)
        }

        /// Passes over a string unread.
        @inline(__always)
        mutating func skipString() throws(Malformed) {
            let length = try count()
            offset += length
        }

        /// Passes over a value, checking it as `value` reads it, building nothing.
        mutating func skipValue(depth: Int = 0) throws(Malformed) {
            guard depth < BinaryJSON.maximumDepth else { throw Malformed(reason: "nesting deeper than \(BinaryJSON.maximumDepth)", offset: offset) }
            let at = offset
            guard let tag = Tag(rawValue: try byte()) else { throw Malformed(reason: "an unknown tag", offset: at) }
            switch tag {
            case .null, .false, .true: return
            case .int, .double: _ = try fixed()
            case .string: _ = try utf8()
            case .array:
                for _ in 0..<(try count()) { try skipValue(depth: depth + 1) }
            case .object:
                for _ in 0..<(try count()) {
                    _ = try utf8()
                    try skipValue(depth: depth + 1)
                }
            }
        }
    }

    /// The value `bytes` hold, all of them.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(Malformed) -> FSJSONValue {
        var reader = Reader(bytes)
        let value = try reader.value()
        guard reader.isAtEnd else { throw Malformed(reason: "bytes after the value", offset: reader.offset) }
        return value
    }
}

/// A checksum that finds damage to a compiled bucketing file (a flipped bit, a cut, a page of
/// another file), not an attacker: four lanes of 8-byte words, each multiplied by FNV's prime and
/// rotated (so a change in a word's high bits reaches the low bits of what follows), then the
/// bytes past the last whole word and the length. Four independent lanes keep the multiplier busy:
/// about a tenth of the time of FNV-1a one byte at a time.
enum WordChecksum {
    private static let prime: UInt64 = 0x0000_0100_0000_01b3

    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var lanes: (UInt64, UInt64, UInt64, UInt64) = (0xcbf2_9ce4_8422_2325, 0x9e37_79b9_7f4a_7c15, 0xc2b2_ae3d_27d4_eb4f, 0x1656_67b1_9e37_79f9)
        func mix(_ lane: UInt64, _ word: UInt64) -> UInt64 {
            let product = (lane ^ word) &* prime
            return product << 29 | product >> 35
        }
        let blocks = bytes.count / 32
        for block in 0..<blocks {
            let at = block * 32
            lanes.0 = mix(lanes.0, UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)))
            lanes.1 = mix(lanes.1, UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self)))
            lanes.2 = mix(lanes.2, UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at + 16, as: UInt64.self)))
            lanes.3 = mix(lanes.3, UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at + 24, as: UInt64.self)))
        }
        var hash = mix(mix(mix(lanes.0, lanes.1), lanes.2), lanes.3)
        for index in (blocks * 32)..<bytes.count {
            hash = mix(hash, UInt64(bytes[index]))
        }
        return mix(hash, UInt64(bytes.count))
    }
}
