import FlagshipStore

/// Values made from a compiled blob at first need, kept by where in the blob they were read, in
/// `stripes` parts each under its own lock: threads deciding at once rarely wait on each other,
/// and no value needs a lock of its own (a start on a large file would make hundreds of
/// thousands of them).
final class StripedCache<Value: Sendable>: Sendable {
    private let stripes: [Locked<[Int: Value]>]

    init(stripes: Int = 16) {
        self.stripes = (0..<stripes).map { _ in Locked([:]) }
    }

    /// The value kept for `offset`, else `make()`'s, kept (the first one made, if two threads
    /// made one at once).
    func value(at offset: Int, _ make: () -> Value) -> Value {
        let stripe = stripes[offset % stripes.count]
        if let kept = stripe.withLock({ $0[offset] }) { return kept }
        let made = make()
        return stripe.withLock { kept in
            if let value = kept[offset] { return value }
            kept[offset] = made
            return made
        }
    }
}

/// The flags section of a compiled blob: each variation's flags, read when first needed, then kept.
final class CompiledFlags: Sendable {
    /// The whole blob.
    let bytes: [UInt8]
    private let section: Range<Int>
    private let read = StripedCache<[String: FSJSONValue]>()

    /// Where one variation's flags are, and where the list of their keys is.
    struct Place: Sendable {
        let range: Range<Int>
        let keysAt: Int
    }

    init(_ bytes: [UInt8], section: Range<Int>) {
        self.bytes = bytes
        self.section = section
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
        read.value(at: range.lowerBound) {
            let value = bytes.withUnsafeBytes { raw in try? BinaryJSON.decode(UnsafeRawBufferPointer(rebasing: raw[range])) }
            return value?.objectValue ?? [:]
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
