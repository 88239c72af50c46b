import Foundation
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
/// once when the file arrives, so that a start decides at once, whatever the file's size, without
/// parsing the JSON again or building the engine's structures:
/// - each variation group's rules as the engine holds them (`CompiledTargeting`), which a decision
///   evaluates where they lie in the blob (`CompiledCampaigns`): a start builds no campaign, and
///   a decision makes only the campaigns it assigns;
/// - each variation's flags apart, read only when a visitor is first assigned to it (most of a
///   large file's bytes are flag values, and most variations are not needed by a given process);
/// - each rule as written, for an explanation; the version (the sha256 of the JSON's bytes, not
///   computed again) and a digest of each campaign for the change events: read when first needed.
///
/// Layout: `FSBK`, the format (1 byte), the checksum of every byte after it (8 bytes, `WordChecksum`),
/// where the file starts (8 bytes), the flags of every variation (each a `BinaryJSON` object),
/// then the file: version, panic, account settings, warnings, the context keys the rules read and
/// whether one reads the visitor id, the digests (a block), then each campaign (a block): its id,
/// names, slug and type, then its groups, each with its id and name, its rules as written (a
/// block), its rules compiled (a block), and its variations (a block: allocation, then what a
/// visitor assigned to it gets and where its flags are). Strings are a varint length and UTF-8; an
/// optional value is a byte 0 (absent) or 1 and the value; a block is its length, then its bytes.
///
/// A blob of another format, damaged or cut is refused whole (`Unusable`), its every block
/// checked at the start that reads it, without building anything: the caller reads the JSON
/// instead and writes the blob again. Format 3 had a checksum read 8 bytes at a time (format 2's,
/// FNV-1a one byte at a time, was 7 % of a start on 30,000 campaigns); format 4 laid the campaigns
/// out to be decided in place (the engine's structures were most of that start).
package enum CompiledBucketingFile {
    static let format: UInt8 = 4
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
        appendStrings(file.contextKeys.names, to: &bytes)
        bytes.append(file.readsVisitorId ? 1 : 0)
        var digestBlock: [UInt8] = []
        BinaryJSON.appendVarint(UInt64(digests.count), to: &digestBlock)
        for id in digests.keys.sorted() {
            BinaryJSON.appendString(id, to: &digestBlock)
            BinaryJSON.appendString(digests[id]!, to: &digestBlock)
        }
        CompiledTargeting.appendBlock(digestBlock, to: &bytes)
        BinaryJSON.appendVarint(UInt64(file.campaigns.count), to: &bytes)
        for campaign in file.campaigns {
            var campaignBlock: [UInt8] = []
            appendCampaign(campaign, places: places, to: &campaignBlock)
            CompiledTargeting.appendBlock(campaignBlock, to: &bytes)
        }
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
            var written: [UInt8] = []
            appendRules(group.targeting.written, to: &written)
            CompiledTargeting.appendBlock(written, to: &bytes)
            CompiledTargeting.append(group.targeting, to: &bytes)
            var variations: [UInt8] = []
            BinaryJSON.appendVarint(UInt64(group.variations.count), to: &variations)
            for variation in group.variations { appendVariation(variation, places: places, to: &variations) }
            CompiledTargeting.appendBlock(variations, to: &bytes)
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

    /// The file a compiled blob holds (`decode` without the change events' part), its campaigns
    /// checked in `parts` parts side by side (by default, as many as its size and the machine call for).
    package static func file(from bytes: [UInt8], parts: Int? = nil) throws(Unusable) -> BucketingFile {
        try decode(bytes, parts: parts).file
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

    /// The engine's file and the change events' campaigns from a compiled blob, each block
    /// checked first: its campaigns are decided where they lie (`CompiledCampaigns`). `parts`: how
    /// many parts the campaigns are checked in side by side (`CampaignsToCheck`), by default as
    /// many as the file's size and the machine's cores call for.
    static func decode(_ bytes: [UInt8], parts: Int? = nil) throws(Unusable) -> (file: BucketingFile, campaigns: BucketingFileCampaigns) {
        guard bytes.count >= headerSize, Array(bytes[0..<4]) == magic else {
            throw Unusable(reason: "not a compiled bucketing file")
        }
        guard bytes[4] == format else {
            throw Unusable(reason: "compiled in format \(bytes[4]), this SDK reads format \(format)", olderFormat: bytes[4] < format)
        }
        let expected = BinaryJSON.fixed(in: bytes, at: checksumOffset)
        let fileStart = BinaryJSON.fixed(in: bytes, at: fileStartOffset)
        // The checksum is taken beside the check of the campaigns; whatever the check found, a
        // blob whose checksum does not match is told as damaged.
        let matches = Locked<Bool?>(nil)
        let takeChecksum: @Sendable () -> Void = {
            let sum = checksum(of: bytes)
            matches.withLock { $0 = sum == expected }
        }
        var read = Result<BucketingFile, Unusable>.failure(Unusable(reason: "its file is out of its bytes"))
        if fileStart >= UInt64(headerSize), fileStart < UInt64(bytes.count) {
            let flags = CompiledFlags(bytes, section: headerSize..<Int(fileStart))
            read = bytes.withUnsafeBytes { raw in
                var reader = BinaryJSON.Reader(raw, at: Int(fileStart))
                do throws(BinaryJSON.Malformed) {
                    return .success(try readFile(&reader, of: bytes, flags: flags, parts: parts, alongside: takeChecksum))
                } catch {
                    return .failure(Unusable(reason: "it cannot be read: \(error)"))
                }
            }
        }
        if matches.withLock({ $0 }) == nil { takeChecksum() }
        guard matches.withLock({ $0 }) == true else { throw Unusable(reason: "its checksum does not match: damaged or cut") }
        let file = try read.get()
        return (file, BucketingFileCampaigns(file: file))
    }

    /// The file after the flags section: its version, panic, settings, warnings, context keys,
    /// then its digests and campaigns, checked and left where they lie.
    private static func readFile(_ input: inout BinaryJSON.Reader, of bytes: [UInt8], flags: CompiledFlags, parts: Int?,
                                 alongside: @escaping @Sendable () -> Void) throws(BinaryJSON.Malformed) -> BucketingFile {
        let version = try input.string()
        let panic = try input.bool(), enabledXPC = try input.bool(), enabled1V1T = try input.bool()
        let warnings = try input.strings()
        let keysAt = input.offset
        guard let keys = ContextKeys(names: try input.strings()) else {
            throw BinaryJSON.Malformed(reason: "a context key named twice", offset: keysAt)
        }
        let readsVisitorId = try input.bool()
        let digestsAt = input.offset
        try checkDigests(&input)
        let count = try input.count()
        let campaignsAt = input.offset
        let toCheck = CampaignsToCheck(bytes: bytes, start: campaignsAt, count: count, keyCount: keys.count, flags: flags)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let parts = parts ?? (cores > 1 && count >= campaignsCheckedInParts ? min(8, 2 * cores) : 1)
        // A fault found in parts is found again in order: the first in the file's order is told.
        if parts <= 1 || !toCheck.passInParts(parts, alongside: alongside) { try toCheck.check() }
        let campaigns = CompiledCampaigns(flags: flags, keys: keys, readsVisitorId: readsVisitorId, count: count,
                                          at: campaignsAt, digestsAt: digestsAt)
        return BucketingFile(compiled: campaigns, panic: panic, warnings: warnings, version: version,
                             accountSettings: AccountSettings(enabledXPC: enabledXPC, enabled1V1T: enabled1V1T))
    }
}
