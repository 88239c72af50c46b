import FlagshipStore

/// A bucketing file's JSON parsed once, with a flag value that could not be read taken out (and
/// its warning): what the engine (`BucketingFile`) and the change events (`BucketingFileCampaigns`)
/// are both read from, so that a download is parsed once.
struct ParsedBucketingFile: Sendable {
    let root: FSJSONValue
    let parseWarnings: [String]
    /// The sha256 of the bytes it was parsed from.
    let version: String
}

/// The form of a bucketing file the store keeps beside its JSON (`bucketing.compiled`), made
/// once when the file arrives, so that a start decides without parsing the JSON again:
/// - the engine's own structures as the JSON was read into them (campaigns, groups, each rule as
///   written, allocations, names, the warnings), in a binary layout read straight back into them:
///   no text to tokenize, no tree of JSON values in between, lengths up front;
/// - each variation's flags apart, read only when a visitor is first assigned to it (most of a
///   large file's bytes are flag values, and most variations are not needed by a given process);
/// - the version (the sha256 of the JSON's bytes, not computed again) and a digest of each
///   campaign for the change events.
///
/// Layout: `FSBK`, the format (1 byte), the checksum of every byte after it (8 bytes, `WordChecksum`),
/// where the file starts (8 bytes), the flags of every variation (each a `BinaryJSON` object),
/// then the file: version, panic, account settings, warnings, digests, then each campaign with its
/// groups (targeting rules as written) and variations (with where their flags are). Strings are
/// a varint length and UTF-8; an optional value is a byte 0 (absent) or 1 and the value.
///
/// A blob of another format, damaged or cut is refused whole (`Unusable`): the caller reads the
/// JSON instead and writes the blob again. Format 3 has a checksum read 8 bytes at a time (format
/// 2's, FNV-1a one byte at a time, was 7 % of a start on 30,000 campaigns).
package enum CompiledBucketingFile {
    static let format: UInt8 = 3
    static let magic: [UInt8] = Array("FSBK".utf8)
    /// Magic, format, checksum, where the file starts.
    package static let headerSize = 4 + 1 + 8 + 8
    private static let checksumOffset = 5, fileStartOffset = 13

    package struct Unusable: Error, Equatable, CustomStringConvertible {
        let reason: String
        /// Written by an older SDK in a format of its own: expected once after an upgrade.
        var olderFormat = false
        package var description: String { reason }
    }

    /// The compiled form of `file` (read from its JSON), with each campaign's digest (`BucketingFileCampaigns`).
    package static func encode(_ file: BucketingFile, digests: [String: String] = [:]) -> [UInt8] {
        var bytes = magic + [format] + [UInt8](repeating: 0, count: 16)
        // The flags first: the file then names where each variation's are.
        let places = appendFlags(of: file, to: &bytes)
        let fileStart = bytes.count
        BinaryJSON.appendString(file.version, to: &bytes)
        for flag in [file.panic, file.accountSettings.enabledXPC, file.accountSettings.enabled1V1T] { bytes.append(flag ? 1 : 0) }
        appendStrings(file.warnings, to: &bytes)
        BinaryJSON.appendVarint(UInt64(digests.count), to: &bytes)
        for id in digests.keys.sorted() {
            BinaryJSON.appendString(id, to: &bytes)
            BinaryJSON.appendString(digests[id]!, to: &bytes)
        }
        BinaryJSON.appendVarint(UInt64(file.campaigns.count), to: &bytes)
        for campaign in file.campaigns { appendCampaign(campaign, places: places, to: &bytes) }
        BinaryJSON.writeFixed(UInt64(fileStart), into: &bytes, at: fileStartOffset)
        return withChecksum(bytes)
    }

    /// Where each variation's flags were written in the flags section, and their keys.
    private typealias FlagPlaces = [ObjectIdentifier: (start: Int, end: Int, keys: [String])]

    /// Writes the flags section: each variation's flags that it has, in the file's order.
    private static func appendFlags(of file: BucketingFile, to bytes: inout [UInt8]) -> FlagPlaces {
        var places: FlagPlaces = [:]
        for campaign in file.campaigns {
            for group in campaign.variationGroups {
                for variation in group.variations {
                    guard let flags = variation.assignment?.flags, !flags.isEmpty else { continue }
                    let start = bytes.count
                    BinaryJSON.append(.object(flags), to: &bytes)
                    places[ObjectIdentifier(variation)] = (start, bytes.count, flags.keys.sorted())
                }
            }
        }
        return places
    }

    /// Writes a campaign: its id, names, slug and type, then its groups.
    private static func appendCampaign(_ campaign: BucketingFile.Campaign, places: FlagPlaces, to bytes: inout [UInt8]) {
        BinaryJSON.appendString(campaign.id, to: &bytes)
        // Names, slug and type are the campaign's: the first variation with an assignment gives them.
        let any = campaign.variationGroups.lazy.flatMap(\.variations).compactMap(\.assignment).first
        BinaryJSON.appendString(any?.campaignName ?? "", to: &bytes)
        appendOptional(any?.slug, to: &bytes)
        BinaryJSON.appendString(any?.type ?? "", to: &bytes)
        BinaryJSON.appendVarint(UInt64(campaign.variationGroups.count), to: &bytes)
        for group in campaign.variationGroups {
            BinaryJSON.appendString(group.id, to: &bytes)
            BinaryJSON.appendString(group.variations.lazy.compactMap(\.assignment).first?.variationGroupName ?? "", to: &bytes)
            appendRules(group.targeting.written, to: &bytes)
            BinaryJSON.appendVarint(UInt64(group.variations.count), to: &bytes)
            for variation in group.variations { appendVariation(variation, places: places, to: &bytes) }
        }
    }

    /// Writes a group's targeting rules as written: each rule's key, operator and value, by rule group.
    private static func appendRules(_ written: [[Targeting.WrittenRule]], to bytes: inout [UInt8]) {
        BinaryJSON.appendVarint(UInt64(written.count), to: &bytes)
        for rules in written {
            BinaryJSON.appendVarint(UInt64(rules.count), to: &bytes)
            for rule in rules {
                appendOptional(rule.key, to: &bytes)
                appendOptional(rule.operatorName, to: &bytes)
                if let value = rule.value {
                    bytes.append(1)
                    BinaryJSON.append(value, to: &bytes)
                } else {
                    bytes.append(0)
                }
            }
        }
    }

    /// Writes a variation: its allocation, then (when it has an id and an assignment) what a visitor
    /// assigned to it gets and where its flags are.
    private static func appendVariation(_ variation: BucketingFile.Variation, places: FlagPlaces, to bytes: inout [UInt8]) {
        BinaryJSON.appendFixed(variation.allocation.bitPattern, to: &bytes)
        guard let id = variation.id, let assignment = variation.assignment else { return bytes.append(0) }
        bytes.append(1)
        BinaryJSON.appendString(id, to: &bytes)
        BinaryJSON.appendString(assignment.variationName, to: &bytes)
        bytes.append(assignment.isReference ? 1 : 0)
        appendOptional(assignment.modificationsType, to: &bytes)
        if let place = places[ObjectIdentifier(variation)] {
            bytes.append(1)
            BinaryJSON.appendVarint(UInt64(place.start), to: &bytes)
            BinaryJSON.appendVarint(UInt64(place.end), to: &bytes)
            appendStrings(place.keys, to: &bytes)
        } else {
            bytes.append(0)
        }
    }

    /// The file a compiled blob holds (`decode` without the change events' part).
    package static func file(from bytes: [UInt8]) throws(Unusable) -> BucketingFile {
        try decode(bytes).file
    }

    /// `bytes` with the checksum a blob of them needs written in its header (for the fuzzer, which
    /// reaches the reading past the checksum so; a blob shorter than the header is left as it is).
    package static func withChecksum(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= headerSize else { return bytes }
        var bytes = bytes
        BinaryJSON.writeFixed(checksum(of: bytes), into: &bytes, at: checksumOffset)
        return bytes
    }

    /// The checksum of every byte after the checksum itself.
    private static func checksum(of bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { WordChecksum.of(UnsafeRawBufferPointer(rebasing: $0[fileStartOffset...])) }
    }

    private static func appendOptional(_ text: String?, to bytes: inout [UInt8]) {
        guard let text else { return bytes.append(0) }
        bytes.append(1)
        BinaryJSON.appendString(text, to: &bytes)
    }

    private static func appendStrings(_ texts: [String], to bytes: inout [UInt8]) {
        BinaryJSON.appendVarint(UInt64(texts.count), to: &bytes)
        for text in texts { BinaryJSON.appendString(text, to: &bytes) }
    }

    /// The engine's file and the change events' campaigns from a compiled blob; the flags of a
    /// variation are read from `bytes` when first needed.
    static func decode(_ bytes: [UInt8]) throws(Unusable) -> (file: BucketingFile, campaigns: BucketingFileCampaigns) {
        guard bytes.count >= headerSize, Array(bytes[0..<4]) == magic else {
            throw Unusable(reason: "not a compiled bucketing file")
        }
        guard bytes[4] == format else {
            throw Unusable(reason: "compiled in format \(bytes[4]), this SDK reads format \(format)", olderFormat: bytes[4] < format)
        }
        guard checksum(of: bytes) == BinaryJSON.fixed(in: bytes, at: checksumOffset) else {
            throw Unusable(reason: "its checksum does not match: damaged or cut")
        }
        let fileStart = BinaryJSON.fixed(in: bytes, at: fileStartOffset)
        guard fileStart >= UInt64(headerSize), fileStart < UInt64(bytes.count) else {
            throw Unusable(reason: "its file is out of its bytes")
        }
        let flags = CompiledFlags(bytes, section: headerSize..<Int(fileStart))
        let read: Result<Read, BinaryJSON.Malformed> = bytes.withUnsafeBytes { raw in
            var reader = BinaryJSON.Reader(raw, at: Int(fileStart))
            do throws(BinaryJSON.Malformed) {
                let read = try readFile(&reader, flags: flags)
                guard reader.isAtEnd else { throw BinaryJSON.Malformed(reason: "bytes after the file", offset: reader.offset) }
                return .success(read)
            } catch {
                return .failure(error)
            }
        }
        switch read {
        case .success(let read): return (read.file, read.campaigns)
        case .failure(let error): throw Unusable(reason: "it cannot be read: \(error)")
        }
    }

    private struct Read {
        let file: BucketingFile
        let campaigns: BucketingFileCampaigns
    }

    /// The file after the flags section: its version, panic, settings, warnings, digests and campaigns.
    private static func readFile(_ input: inout BinaryJSON.Reader, flags: CompiledFlags) throws(BinaryJSON.Malformed) -> Read {
        let version = try input.string()
        let panic = try input.bool(), enabledXPC = try input.bool(), enabled1V1T = try input.bool()
        let warnings = try input.strings()
        var digests: [String: String] = [:]
        for _ in 0..<(try input.count()) {
            let id = try input.string()
            digests[id] = try input.string()
        }
        // The rules are read again as the JSON's were, in the same order: the same context slots.
        // Their warnings are the ones kept.
        var reader = BucketingFileReader()
        var campaigns: [BucketingFile.Campaign] = []
        for _ in 0..<(try input.count()) {
            campaigns.append(try readCampaign(&input, flags: flags, with: &reader))
        }
        let file = BucketingFile(compiled: campaigns, panic: panic,
                                 accountSettings: AccountSettings(enabledXPC: enabledXPC, enabled1V1T: enabled1V1T),
                                 warnings: warnings, reader: reader, version: version)
        return Read(file: file, campaigns: BucketingFileCampaigns(digests: digests, file: file))
    }

    /// A campaign: its id, names, slug and type, then its groups.
    private static func readCampaign(_ input: inout BinaryJSON.Reader, flags: CompiledFlags,
                                     with reader: inout BucketingFileReader) throws(BinaryJSON.Malformed) -> BucketingFile.Campaign {
        let id = try input.string()
        let base = BucketedCampaign(campaignId: id, campaignName: try input.string(), slug: try input.optionalString(),
                                    type: try input.string(), variationGroupId: "", variationId: "")
        var groups: [BucketingFile.VariationGroup] = []
        for _ in 0..<(try input.count()) {
            groups.append(try readGroup(&input, of: base, flags: flags, with: &reader))
        }
        return BucketingFile.Campaign(id: id, variationGroups: groups)
    }

    /// A variation group of the campaign `base` names: its id and name, its targeting, then its variations.
    private static func readGroup(_ input: inout BinaryJSON.Reader, of base: BucketedCampaign, flags: CompiledFlags,
                                  with reader: inout BucketingFileReader) throws(BinaryJSON.Malformed) -> BucketingFile.VariationGroup {
        var group = base
        group.variationGroupId = try input.string()
        group.variationGroupName = try input.string()
        let targeting = try readTargeting(&input, with: &reader)
        var variations: [BucketingFile.Variation] = []
        for _ in 0..<(try input.count()) {
            variations.append(try readVariation(&input, in: group, flags: flags))
        }
        var hashPrefix = MurmurHash3.State()
        hashPrefix.append(utf8Of: group.variationGroupId)
        return BucketingFile.VariationGroup(id: group.variationGroupId, targeting: targeting,
                                            hashPrefix: hashPrefix, variations: variations)
    }

    /// A group's targeting: each rule as written, and read again into the engine's rule with `reader`.
    private static func readTargeting(_ input: inout BinaryJSON.Reader,
                                      with reader: inout BucketingFileReader) throws(BinaryJSON.Malformed) -> Targeting {
        var rules: [[TargetingRule]] = [], written: [[Targeting.WrittenRule]] = []
        for _ in 0..<(try input.count()) {
            var groupRules: [TargetingRule] = [], groupWritten: [Targeting.WrittenRule] = []
            for _ in 0..<(try input.count()) {
                let rule = Targeting.WrittenRule(key: try input.optionalString(), operatorName: try input.optionalString(),
                                                 value: try input.bool() ? try input.value() : nil)
                groupRules.append(TargetingRule(key: rule.key, operatorName: rule.operatorName, value: rule.value, at: "", with: &reader))
                groupWritten.append(rule)
            }
            rules.append(groupRules)
            written.append(groupWritten)
        }
        return Targeting(groups: rules, written: written)
    }

    /// A variation of `group`: its allocation, then what a visitor assigned to it gets, its flags
    /// left in the blob until first needed.
    private static func readVariation(_ input: inout BinaryJSON.Reader, in group: BucketedCampaign,
                                      flags: CompiledFlags) throws(BinaryJSON.Malformed) -> BucketingFile.Variation {
        let at = input.offset
        let allocation = Double(bitPattern: try input.fixed())
        // As the JSON's reading leaves it: a number of 0 or more.
        guard allocation.isFinite, allocation >= 0 else {
            throw BinaryJSON.Malformed(reason: "an allocation that is not a number of 0 or more", offset: at)
        }
        guard try input.bool() else {
            return BucketingFile.Variation(id: nil, allocation: allocation, assignment: nil)
        }
        var assignment = group
        let variationId = try input.string()
        assignment.variationId = variationId
        assignment.variationName = try input.string()
        assignment.isReference = try input.bool()
        assignment.modificationsType = try input.optionalString()
        if try input.bool() {
            let at = input.offset
            let start = try input.varint(), end = try input.varint()
            // The keys are read when a change names the campaign (`BucketingFileCampaigns`).
            let keysAt = input.offset
            try input.skipStrings()
            guard let place = flags.place(start: start, end: end, keysAt: keysAt) else {
                throw BinaryJSON.Malformed(reason: "flags out of their section", offset: at)
            }
            return BucketingFile.Variation(id: variationId, allocation: allocation,
                                           lazy: LazyAssignment(assignment, flags: flags, at: place))
        } else {
            return BucketingFile.Variation(id: variationId, allocation: allocation, assignment: assignment)
        }
    }
}

extension BinaryJSON.Reader {
    mutating func bool() throws(BinaryJSON.Malformed) -> Bool {
        let at = offset
        switch try byte() {
        case 0: return false
        case 1: return true
        default: throw BinaryJSON.Malformed(reason: "a flag that is neither 0 nor 1", offset: at)
        }
    }

    mutating func optionalString() throws(BinaryJSON.Malformed) -> String? {
        try bool() ? try string() : nil
    }

    mutating func strings() throws(BinaryJSON.Malformed) -> [String] {
        var texts: [String] = []
        for _ in 0..<(try count()) { texts.append(try string()) }
        return texts
    }
}
