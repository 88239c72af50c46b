import Foundation

/// Byte-wise operations on UTF-8 text, the way the Decision API compares its strings: equality,
/// containment and order on the bytes (for UTF-8, the order of code points). Nothing allocates.
enum UTF8Bytes {
    /// Calls `body` with the UTF-8 bytes of `string`; copies only a string not stored as UTF-8.
    static func with<Result>(_ string: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        var string = string
        return string.withUTF8(body)
    }

    /// `string` lower-cased, stored contiguously; the same string (no copy) when it has no
    /// upper-case ASCII letter and no byte beyond ASCII, the common case.
    static func lowercased(_ string: String) -> String {
        let needsLowering = with(string) { bytes in
            bytes.contains { $0 >= 0x80 || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) }
        }
        guard needsLowering else { return string }
        var lowered = string.lowercased()
        lowered.makeContiguousUTF8()
        return lowered
    }

    static func equal(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool {
        left.count == right.count && (left.isEmpty || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
    }

    /// Negative, zero or positive as `left` sorts before, with or after `right`.
    static func compare(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(left.count, right.count)
        if common > 0 {
            let order = memcmp(left.baseAddress!, right.baseAddress!, common)
            if order != 0 { return Int(order) }
        }
        return left.count - right.count
    }

    static func hasPrefix(_ text: UnsafeBufferPointer<UInt8>, _ prefix: UnsafeBufferPointer<UInt8>) -> Bool {
        prefix.count <= text.count && equal(UnsafeBufferPointer(rebasing: text[..<prefix.count]), prefix)
    }

    static func hasSuffix(_ text: UnsafeBufferPointer<UInt8>, _ suffix: UnsafeBufferPointer<UInt8>) -> Bool {
        suffix.count <= text.count && equal(UnsafeBufferPointer(rebasing: text[(text.count - suffix.count)...]), suffix)
    }

    static func contains(_ text: UnsafeBufferPointer<UInt8>, _ part: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !part.isEmpty else { return true }
        guard part.count <= text.count else { return false }
        let first = part[0]
        for start in 0...(text.count - part.count) where text[start] == first {
            if equal(UnsafeBufferPointer(rebasing: text[start..<(start + part.count)]), part) { return true }
        }
        return false
    }
}
