import FlagshipStore

/// A bucketing file's JSON parsed once, with a flag value that could not be read taken out (and
/// its warning): what the engine (`BucketingFile`), the change events (`BucketingFileCampaigns`)
/// and the store's compiled form are all made from.
struct ParsedBucketingFile: Sendable {
    let root: JSONValue
    let parseWarnings: [String]
    /// The sha256 of the bytes it was parsed from.
    let version: String
}

/// The form of a bucketing file the store keeps beside its JSON (`bucketing.compiled`), made
/// once when the file arrives, so that a start decides without parsing the JSON again:
/// - everything a decision reads (campaigns, groups, targeting, allocations, names) in a tagged
///   binary layout (`BinaryJSON`): no text to tokenize, lengths up front;
/// - each variation's flags apart, read only when a visitor is first assigned to it (most of a
///   large file's bytes are flag values, and most variations are not needed by a given process);
/// - the version (the sha256 of the JSON's bytes, not computed again), the warnings the JSON gave,
///   and a digest of each campaign for the change events.
///
/// Layout: `FSBK`, the format (1 byte), the FNV-1a checksum of every byte after it (8 bytes),
/// where the envelope starts (8 bytes), the flags of every variation (each a `BinaryJSON` object),
/// then the envelope: a `BinaryJSON` object of `version`, `parseWarnings`, `digests` and `root` (the
/// file's tree, each variation's `modifications.value` replaced by `[start, end, [flag keys]]`
/// when it is an object, by `null` when it is not).
///
/// A blob of another format, damaged or cut is refused whole (`Unusable`): the caller reads the
/// JSON instead and writes the blob again.
enum CompiledBucketingFile {
    static let format: UInt8 = 1
    static let magic: [UInt8] = Array("FSBK".utf8)
    /// Magic, format, checksum, envelope offset.
    static let headerSize = 4 + 1 + 8 + 8

    struct Unusable: Error, Equatable, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// The compiled form of `parsed`, with each campaign's digest (`BucketingFileCampaigns`).
    static func encode(_ parsed: ParsedBucketingFile, digests: [String: String]) -> [UInt8] {
        var bytes = magic + [format] + [UInt8](repeating: 0, count: 16)
        var root = parsed.root
        if case .object(var body) = root, case .array(var campaigns)? = body["campaigns"] {
            body["campaigns"] = nil
            for index in campaigns.indices {
                campaigns[index] = compileCampaign(campaigns[index], flagsInto: &bytes)
            }
            body["campaigns"] = .array(campaigns)
            root = .object(body)
        }
        let envelopeStart = bytes.count
        let envelope: JSONValue = .object([
            "version": .string(parsed.version),
            "parseWarnings": .array(parsed.parseWarnings.map(JSONValue.string)),
            "digests": .object(digests.mapValues(JSONValue.string)),
            "root": root,
        ])
        BinaryJSON.append(envelope, to: &bytes)
        for (index, shift) in stride(from: 0, to: 64, by: 8).enumerated() {
            bytes[13 + index] = UInt8(truncatingIfNeeded: UInt64(envelopeStart) >> UInt64(shift))
        }
        let checksum = bytes.withUnsafeBytes { FNV1a.hash(UnsafeRawBufferPointer(rebasing: $0[13...])) }
        for (index, shift) in stride(from: 0, to: 64, by: 8).enumerated() {
            bytes[5 + index] = UInt8(truncatingIfNeeded: checksum >> UInt64(shift))
        }
        return bytes
    }

    /// Every variation's flags moved to `bytes`, as the reader walks them (a part of another
    /// shape is left as it is: the reader skips it too).
    private static func compileCampaign(_ campaign: JSONValue, flagsInto bytes: inout [UInt8]) -> JSONValue {
        guard case .object(var campaign) = campaign, case .array(var groups)? = campaign["variationGroups"] else { return campaign }
        campaign["variationGroups"] = nil
        for groupIndex in groups.indices {
            guard case .object(var group) = groups[groupIndex], case .array(var variations)? = group["variations"] else { continue }
            group["variations"] = nil
            for index in variations.indices {
                guard case .object(var variation) = variations[index],
                      case .object(var modifications)? = variation["modifications"],
                      let value = modifications["value"] else { continue }
                variation["modifications"] = nil
                if case .object(let flags) = value {
                    let start = bytes.count
                    BinaryJSON.append(value, to: &bytes)
                    modifications["value"] = .array([.int(Int64(start)), .int(Int64(bytes.count)),
                                                     .array(flags.keys.sorted().map(JSONValue.string))])
                } else {
                    modifications["value"] = .null
                }
                variation["modifications"] = .object(modifications)
                variations[index] = .object(variation)
            }
            group["variations"] = .array(variations)
            groups[groupIndex] = .object(group)
        }
        campaign["variationGroups"] = .array(groups)
        return .object(campaign)
    }

    /// The engine's file and the change events' campaigns from a compiled blob; the flags of a
    /// variation are read from `bytes` when first needed.
    static func decode(_ bytes: [UInt8]) throws(Unusable) -> (file: BucketingFile, campaigns: BucketingFileCampaigns) {
        guard bytes.count >= headerSize, Array(bytes[0..<4]) == magic else {
            throw Unusable(reason: "not a compiled bucketing file")
        }
        guard bytes[4] == format else {
            throw Unusable(reason: "compiled in format \(bytes[4]), this SDK reads format \(format)")
        }
        func fixed(at offset: Int) -> UInt64 {
            (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << UInt64($1 * 8) }
        }
        let checksum = bytes.withUnsafeBytes { FNV1a.hash(UnsafeRawBufferPointer(rebasing: $0[13...])) }
        guard checksum == fixed(at: 5) else { throw Unusable(reason: "its checksum does not match: damaged or cut") }
        let envelopeStart = fixed(at: 13)
        guard envelopeStart >= UInt64(headerSize), envelopeStart < UInt64(bytes.count) else {
            throw Unusable(reason: "its envelope is out of its bytes")
        }
        let envelope: JSONValue
        do {
            envelope = try bytes.withUnsafeBytes { raw throws(BinaryJSON.Malformed) in
                var reader = BinaryJSON.Reader(raw, at: Int(envelopeStart))
                let value = try reader.value()
                guard reader.isAtEnd else { throw BinaryJSON.Malformed(reason: "bytes after the envelope", offset: reader.offset) }
                return value
            }
        } catch {
            throw Unusable(reason: "its envelope cannot be read: \(error)")
        }
        guard let version = envelope["version"]?.stringValue, let root = envelope["root"],
              case .array(let warnings)? = envelope["parseWarnings"], case .object(let digests)? = envelope["digests"] else {
            throw Unusable(reason: "its envelope lacks a part")
        }
        var reader = BucketingFileReader()
        for warning in warnings { reader.warn(warning.stringValue ?? "") }
        reader.compiledFlags = CompiledFlags(bytes, section: headerSize..<Int(envelopeStart))
        let file: BucketingFile
        do {
            file = try BucketingFile(root: root, version: version, reader: reader)
        } catch {
            throw Unusable(reason: "\(error)")
        }
        return (file, BucketingFileCampaigns(digests: digests.compactMapValues(\.stringValue), file: file))
    }
}

/// The flags section of a compiled blob: each variation's flags, read when first needed.
final class CompiledFlags: Sendable {
    private let bytes: [UInt8]
    private let section: Range<Int>

    /// Where one variation's flags are, and their keys.
    struct Place: Sendable {
        let range: Range<Int>
        let keys: [String]
    }

    init(_ bytes: [UInt8], section: Range<Int>) {
        self.bytes = bytes
        self.section = section
    }

    /// The place a compiled `modifications.value` names; `nil` for `null` (flags that were not an object).
    func place(of marker: JSONValue?) -> Place? {
        guard case .array(let parts)? = marker, parts.count == 3,
              case .int(let start) = parts[0], case .int(let end) = parts[1], case .array(let keys) = parts[2],
              start >= Int64(section.lowerBound), start <= end, end <= Int64(section.upperBound) else { return nil }
        return Place(range: Int(start)..<Int(end), keys: keys.compactMap(\.stringValue))
    }

    /// The flags at `range`. The blob's checksum passed when it was read, so these bytes are the
    /// ones written; a value that still cannot be read gives no flags.
    func flags(at range: Range<Int>) -> [String: JSONValue] {
        let value = bytes.withUnsafeBytes { raw in try? BinaryJSON.decode(UnsafeRawBufferPointer(rebasing: raw[range])) }
        return value?.objectValue ?? [:]
    }
}

/// A variation of a compiled file: what a visitor assigned to it gets, its flags read from the
/// blob at the first assignment, then kept.
final class LazyAssignment: Sendable {
    private let base: BucketedCampaign
    private let source: CompiledFlags
    private let place: CompiledFlags.Place
    private let made = Locked<BucketedCampaign?>(nil)

    init(_ base: BucketedCampaign, flags source: CompiledFlags, at place: CompiledFlags.Place) {
        self.base = base
        self.source = source
        self.place = place
    }

    var assignment: BucketedCampaign {
        made.withLock { made in
            if let made { return made }
            var assignment = base
            assignment.flags = source.flags(at: place.range)
            made = assignment
            return assignment
        }
    }

    var flagKeys: [String] { place.keys }
}
