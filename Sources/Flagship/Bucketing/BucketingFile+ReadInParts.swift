import Foundation
import FlagshipStore

/// A large file's JSON read in parts side by side. One pass finds where each campaign lies
/// (`TolerantJSON.split`); then each part of the campaigns is parsed and read into the engine's
/// structures on its own, with a reader of its own, its tree freed there unless kept; the version
/// (the SHA-256 of the bytes) is one more job beside them. The parts' readers are then taken in
/// order (`BucketingFileReader.append`): the warnings and the context keys come out as a reading
/// in order gives them, each part's rules moved to the keys' slots in the whole file. So the file
/// read in parts is the file read in order: the same campaigns, warnings, keys and version.
///
/// A document that does not read in parts (not JSON, a root that is not an object, `campaigns`
/// missing, repeated or not a list, an unusable value anywhere but in a flag's value) is read in
/// order, which refuses it or reads it with the same words as before.
extension BucketingFile {
    /// The size from which a file is read in parts on a machine of several cores.
    static let readInPartsBytes = 1 << 20

    /// Reads a file's JSON into the engine's structures, and keeps the tree they were read from
    /// (what the change events read): in parts as `init(json:maximumBytes:parts:)` does.
    static func readKeepingTree(json data: Data, maximumBytes: Int = BucketingFile.maximumBytes,
                     parts: Int? = nil) throws(BucketingFileError) -> (parsed: ParsedBucketingFile, file: BucketingFile) {
        try checkSize(of: data, maximumBytes: maximumBytes)
        if let parts = Self.parts(reading: data, parts), let read = readInParts(data, parts: parts, keepingTree: true),
           let parsed = read.parsed {
            return (parsed, read.file)
        }
        let parsed = try parse(json: data, maximumBytes: maximumBytes)
        return (parsed, try BucketingFile(parsed: parsed))
    }

    /// Refuses an empty document, or one over `maximumBytes`.
    static func checkSize(of data: Data, maximumBytes: Int) throws(BucketingFileError) {
        guard !data.isEmpty else { throw BucketingFileError(reason: "the document is empty") }
        guard data.count <= maximumBytes else {
            throw BucketingFileError(reason: Self.tooLarge("the document", size: "\(data.count) bytes", limit: maximumBytes))
        }
    }

    /// How many parts to read `data` in: `requested`, else two per core (at most 8) from
    /// `readInPartsBytes` on a machine of several cores; `nil` for a reading in order.
    static func parts(reading data: Data, _ requested: Int?) -> Int? {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let parts = requested ?? (cores > 1 && data.count >= readInPartsBytes ? min(8, 2 * cores) : 1)
        return parts > 1 ? parts : nil
    }

    /// One part's campaigns, read apart.
    private struct Part: Sendable {
        let campaigns: [Campaign]
        let reader: BucketingFileReader
        /// The warnings of the flags taken out of its campaigns (their values unusable).
        let dropped: [String]
        /// Its campaigns' JSON, when the tree is kept.
        let elements: [FSJSONValue]?
    }

    /// The file read in `parts` parts side by side, and its tree when `keepingTree`; `nil` when
    /// it does not read in parts.
    static func readInParts(_ data: Data, parts: Int, keepingTree: Bool) -> (file: BucketingFile, parsed: ParsedBucketingFile?)? {
        let split = data.withUnsafeBytes { raw in TolerantJSON.split(raw.bindMemory(to: UInt8.self), arrayAt: "campaigns") }
        guard let split, split.unusable.isEmpty else { return nil }
        let runs = split.parts(parts)
        let read = Locked<[Part?]>(Array(repeating: nil, count: runs.count)), version = Locked<String?>(nil)
        // The digest first: the jobs are taken in order, and the longest one taken last ran alone
        // at the end (a fifth of `flagship eval` on 10,000 campaigns, on two cores).
        DispatchQueue.concurrentPerform(iterations: runs.count + 1) { job in
            guard job > 0 else {
                let digest = SHA256.hex(of: data)
                return version.withLock { $0 = digest }
            }
            let part = data.withUnsafeBytes { raw in
                readPart(raw.bindMemory(to: UInt8.self), of: split, in: runs[job - 1], keepingTree: keepingTree)
            }
            read.withLock { $0[job - 1] = part }
        }
        let partsRead = read.withLock { $0 }.compactMap { $0 }
        guard partsRead.count == runs.count else { return nil }
        return assemble(partsRead, of: split, version: version.withLock { $0 } ?? SHA256.hex(of: data), keepingTree: keepingTree)
    }

    private static func readPart(_ bytes: UnsafeBufferPointer<UInt8>, of split: TolerantJSON.Split, in run: Range<Int>,
                                 keepingTree: Bool) -> Part? {
        guard case (var elements, let unusable)? = TolerantJSON.elements(bytes, of: split, in: run) else { return nil }
        var dropped: [String] = []
        for value in unusable {
            guard let drop = droppedFlag(value), case .index(let campaign) = drop.path[1] else { return nil }
            elements[campaign - run.lowerBound].remove(at: drop.path.dropFirst(2))
            dropped.append(drop.warning)
        }
        var reader = BucketingFileReader()
        let campaigns = campaigns(reading: elements, from: run.lowerBound, with: &reader)
        return Part(campaigns: campaigns, reader: reader, dropped: dropped, elements: keepingTree ? elements : nil)
    }

    /// The parts taken in order, as `init(parsed:)` reads a file in order: the flags taken out
    /// first, then the root's `panic`, then the campaigns.
    private static func assemble(_ parts: [Part], of split: TolerantJSON.Split, version: String,
                                 keepingTree: Bool) -> (file: BucketingFile, parsed: ParsedBucketingFile?) {
        var reader = BucketingFileReader()
        for part in parts { for warning in part.dropped { reader.warn(warning) } }
        let panic = Self.panic(of: split.members, with: &reader)
        var campaigns: [Campaign] = []
        campaigns.reserveCapacity(parts.reduce(0) { $0 + $1.campaigns.count })
        for part in parts {
            let slots = reader.append(part.reader)
            let same = slots.indices.allSatisfy { slots[$0] == $0 }
            campaigns += same ? part.campaigns : part.campaigns.map { $0.renumbered(slots) }
        }
        let file = BucketingFile(panic: panic, accountSettings: accountSettings(of: split.members), warnings: reader.warnings,
                                 campaigns: campaigns, contextKeys: reader.contextKeys, readsVisitorId: reader.readsVisitorId,
                                 version: version)
        guard keepingTree else { return (file, nil) }
        var root = split.members
        root[split.key] = .array(parts.flatMap { $0.elements ?? [] })
        return (file, ParsedBucketingFile(root: .object(root), parseWarnings: parts.flatMap(\.dropped), version: version))
    }
}

extension BucketingFile.Campaign {
    /// The campaign with each context slot its rules read moved to `slots[slot]`.
    fileprivate func renumbered(_ slots: [Int]) -> BucketingFile.Campaign {
        BucketingFile.Campaign(id: id, variationGroups: variationGroups.map { group in
            BucketingFile.VariationGroup(id: group.id, targeting: group.targeting.renumbered(slots),
                                         hashPrefix: group.hashPrefix, variations: group.variations)
        })
    }
}

extension Targeting {
    fileprivate func renumbered(_ slots: [Int]) -> Targeting {
        Targeting(groups: groups.map { rules in rules.map { $0.renumbered(slots) } }, written: written)
    }
}

extension TargetingRule {
    fileprivate func renumbered(_ slots: [Int]) -> TargetingRule {
        switch self {
        case .always, .never: self
        case .presence(let subject, let present): .presence(subject.renumbered(slots), present: present)
        case .comparison(let subject, let op, let operand): .comparison(subject.renumbered(slots), op, operand)
        }
    }
}

extension TargetingSubject {
    fileprivate func renumbered(_ slots: [Int]) -> TargetingSubject {
        guard case .context(let slot) = self else { return self }
        return .context(slot: slots[slot])
    }
}
