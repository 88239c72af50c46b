/// A version as the `SEMVER_*` targeting operators read it, compared by semver 2.0.0 precedence.
///
/// Accepted: an optional `v`, then one to three dot-separated numbers (`1`, `1.2`, `1.2.3`; missing
/// parts are 0), then optionally `-` and a pre-release (dot-separated identifiers of letters,
/// digits and `-`), then optionally `+` and build metadata (same alphabet, ignored by precedence).
/// Anything else (empty parts, a fourth number, spaces, other characters) is no version, and a
/// rule that meets one is false. Both sides are lower-cased first, like every string rule.
///
/// The parts are kept as positions in the text they were read from, so reading a context value
/// allocates nothing: compare with ``compare(_:in:_:in:)``, giving each version its own bytes.
struct SemanticVersion: Sendable, Equatable {
    var major: UInt64
    var minor: UInt64
    var patch: UInt64
    /// Where the pre-release identifiers are in the text; empty for a release.
    var preRelease: Range<Int>

    /// Reads `text` (UTF-8, already lower-cased); `nil` when it is not a version.
    init?(_ text: UnsafeBufferPointer<UInt8>) {
        var index = 0
        if index < text.count, text[index] == UInt8(ascii: "v") { index += 1 }
        var numbers = (UInt64(0), UInt64(0), UInt64(0))
        var partCount = 0
        parts: while true {
            guard partCount < 3, let number = Self.number(in: text, from: &index) else { return nil }
            switch partCount {
            case 0: numbers.0 = number
            case 1: numbers.1 = number
            default: numbers.2 = number
            }
            partCount += 1
            guard index < text.count, text[index] == UInt8(ascii: ".") else { break parts }
            index += 1
        }
        var preRelease = index..<index
        if index < text.count, text[index] == UInt8(ascii: "-") {
            index += 1
            let start = index
            guard Self.skipIdentifiers(in: text, from: &index) else { return nil }
            preRelease = start..<index
        }
        if index < text.count, text[index] == UInt8(ascii: "+") {
            index += 1
            guard Self.skipIdentifiers(in: text, from: &index) else { return nil }
        }
        guard index == text.count else { return nil }
        (major, minor, patch) = numbers
        self.preRelease = preRelease
    }

    /// Precedence: the numbers, then a release above any of its pre-releases, then the
    /// pre-release identifiers one by one (numbers numerically and below words, words by bytes,
    /// a shorter list below a longer one it begins).
    static func compare(
        _ left: SemanticVersion, in leftText: UnsafeBufferPointer<UInt8>,
        _ right: SemanticVersion, in rightText: UnsafeBufferPointer<UInt8>
    ) -> Int {
        if left.major != right.major { return left.major < right.major ? -1 : 1 }
        if left.minor != right.minor { return left.minor < right.minor ? -1 : 1 }
        if left.patch != right.patch { return left.patch < right.patch ? -1 : 1 }
        switch (left.preRelease.isEmpty, right.preRelease.isEmpty) {
        case (true, true): return 0
        case (true, false): return 1
        case (false, true): return -1
        case (false, false): break
        }
        var leftIdentifiers = Identifiers(text: leftText, range: left.preRelease)
        var rightIdentifiers = Identifiers(text: rightText, range: right.preRelease)
        while true {
            switch (leftIdentifiers.next(), rightIdentifiers.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case let (l?, r?):
                let order = compareIdentifier(UnsafeBufferPointer(rebasing: leftText[l]),
                                              UnsafeBufferPointer(rebasing: rightText[r]))
                if order != 0 { return order }
            }
        }
    }

    private static func compareIdentifier(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Int {
        let leftIsNumber = left.allSatisfy(isDigit)
        let rightIsNumber = right.allSatisfy(isDigit)
        switch (leftIsNumber, rightIsNumber) {
        case (true, false): return -1
        case (false, true): return 1
        case (true, true):
            // Without leading zeros, a longer number is the larger one; long ones never overflow.
            let l = UnsafeBufferPointer(rebasing: left[(left.firstIndex { $0 != UInt8(ascii: "0") } ?? left.endIndex)...])
            let r = UnsafeBufferPointer(rebasing: right[(right.firstIndex { $0 != UInt8(ascii: "0") } ?? right.endIndex)...])
            if l.count != r.count { return l.count < r.count ? -1 : 1 }
            return UTF8Bytes.compare(l, r)
        case (false, false):
            return UTF8Bytes.compare(left, right)
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || byte == UInt8(ascii: "-")
    }

    /// A run of digits from `index`; `nil` when there is none or it is too long to be a version part.
    private static func number(in text: UnsafeBufferPointer<UInt8>, from index: inout Int) -> UInt64? {
        let start = index
        var value: UInt64 = 0
        while index < text.count, isDigit(text[index]) {
            guard index - start < 18 else { return nil }
            value = value * 10 + UInt64(text[index] - UInt8(ascii: "0"))
            index += 1
        }
        return index > start ? value : nil
    }

    /// Moves past dot-separated, non-empty identifiers; false when one is empty or holds another byte.
    private static func skipIdentifiers(in text: UnsafeBufferPointer<UInt8>, from index: inout Int) -> Bool {
        var identifierLength = 0
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: ".") {
                guard identifierLength > 0 else { return false }
                identifierLength = 0
            } else if isIdentifierByte(byte) {
                identifierLength += 1
            } else {
                break
            }
            index += 1
        }
        return identifierLength > 0
    }

    /// The dot-separated identifiers of a pre-release, as ranges of the text.
    private struct Identifiers {
        let text: UnsafeBufferPointer<UInt8>
        var range: Range<Int>

        mutating func next() -> Range<Int>? {
            guard !range.isEmpty else { return nil }
            let end = text[range].firstIndex(of: UInt8(ascii: ".")) ?? range.upperBound
            defer { range = min(end + 1, range.upperBound)..<range.upperBound }
            return range.lowerBound..<end
        }
    }
}
