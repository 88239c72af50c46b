import FlagshipStore

/// The flags section of a compiled blob: each variation's flags, read when first needed, then
/// kept (under one of a few locks, so that variations need no lock of their own: a start on a
/// large file makes hundreds of thousands of them).
final class CompiledFlags: Sendable {
    /// The whole blob.
    let bytes: [UInt8]
    private let section: Range<Int>
    /// The flags read so far, by where they start, in `stripes` parts by that offset.
    private let read: [Locked<[Int: [String: FSJSONValue]]>]
    private static let stripes = 16

    /// Where one variation's flags are, and where the list of their keys is.
    struct Place: Sendable {
        let range: Range<Int>
        let keysAt: Int
    }

    init(_ bytes: [UInt8], section: Range<Int>) {
        self.bytes = bytes
        self.section = section
        read = (0..<Self.stripes).map { _ in Locked([:]) }
    }

    /// The place of flags from `start` to `end`; `nil` when it is not inside the flags section.
    func place(start: UInt64, end: UInt64, keysAt: Int) -> Place? {
        guard start >= UInt64(section.lowerBound), start <= end, end <= UInt64(section.upperBound),
              keysAt >= section.upperBound, keysAt < bytes.count else { return nil }
        return Place(range: Int(start)..<Int(end), keysAt: keysAt)
    }

    /// The flags at `range`. The blob's checksum passed when it was read, so these bytes are the
    /// ones written; a value that still cannot be read gives no flags.
    func flags(at range: Range<Int>) -> [String: FSJSONValue] {
        let stripe = read[range.lowerBound % Self.stripes]
        if let kept = stripe.withLock({ $0[range.lowerBound] }) { return kept }
        let value = bytes.withUnsafeBytes { raw in try? BinaryJSON.decode(UnsafeRawBufferPointer(rebasing: raw[range])) }
        let flags = value?.objectValue ?? [:]
        return stripe.withLock { read in
            if let kept = read[range.lowerBound] { return kept }
            read[range.lowerBound] = flags
            return flags
        }
    }

    /// The list of keys at `offset`, as written (empty if it cannot be read, as for `flags`).
    func keys(at offset: Int) -> [String] {
        bytes.withUnsafeBytes { raw in
            var reader = BinaryJSON.Reader(raw, at: offset)
            return (try? reader.strings()) ?? []
        }
    }
}

/// A variation of a compiled file: what a visitor assigned to it gets, its flags read from the
/// blob at the first assignment (then kept by the blob's `CompiledFlags`).
struct LazyAssignment: Sendable {
    private let base: BucketedCampaign
    private let source: CompiledFlags
    private let place: CompiledFlags.Place

    init(_ base: BucketedCampaign, flags source: CompiledFlags, at place: CompiledFlags.Place) {
        self.base = base
        self.source = source
        self.place = place
    }

    var assignment: BucketedCampaign {
        var assignment = base
        assignment.flags = source.flags(at: place.range)
        return assignment
    }

    var flagKeys: [String] { source.keys(at: place.keysAt) }
}
