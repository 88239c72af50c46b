import FlagshipStore

/// The campaigns of a compiled blob (`CompiledBucketingFile`), checked whole when the blob was
/// read, then decided where they lie: a decision walks the blob once, evaluates each group's
/// rules in place (`CompiledTargeting`), skips what it does not need by the blocks' lengths, and
/// makes only the campaigns it assigns. So a start on a large file builds nothing per campaign,
/// and its first decision comes at once.
///
/// The engine's structures (`BucketingFile.Campaign`) are read only when something needs them:
/// an explanation, a change event's flag keys, compiling the file again. The digests of the
/// change events are read when a new file is compared with this one.
final class CompiledCampaigns: Sendable {
    let flags: CompiledFlags
    let keys: ContextKeys
    let readsVisitorId: Bool
    let count: Int
    /// Where the first campaign's block is, and the digests' block.
    let campaignsAt: Int
    private let digestsAt: Int
    private let read = Locked<[BucketingFile.Campaign]?>(nil)
    private let readDigests = Locked<[String: String]?>(nil)
    /// What a decision made at a variation's first visitor, by where the variation is: its
    /// assignment (with its flags) and its group's id, so that a decision after makes nothing.
    /// Bounded by the file: one entry per variation and per group at most, gone with the file
    /// when a new one replaces it.
    private let assignments = StripedCache<Assignment>()
    private let groupIds = StripedCache<String>()

    init(flags: CompiledFlags, keys: ContextKeys, readsVisitorId: Bool, count: Int, at campaignsAt: Int, digestsAt: Int) {
        self.flags = flags
        self.keys = keys
        self.readsVisitorId = readsVisitorId
        self.count = count
        self.campaignsAt = campaignsAt
        self.digestsAt = digestsAt
    }

    private var bytes: [UInt8] { flags.bytes }

    /// A variation's assignment as its first visitor read it, kept by reference (a campaign is a
    /// large value, copied once more into each decision).
    private final class Assignment: Sendable {
        let read: Result<BucketedCampaign?, BinaryJSON.Malformed>

        init(_ read: Result<BucketedCampaign?, BinaryJSON.Malformed>) {
            self.read = read
        }
    }

    // MARK: Deciding in place

    /// What `BucketingFile.decide` gives (outside panic), decided in the blob; `nil` if the blob
    /// cannot be read there, which its check at the start rules out.
    func decide(visitorId: String, context: [String: FSJSONValue], history: [String: String]) -> [BucketedCampaign]? {
        let visitor = PreparedContext(visitorId: visitorId, context: context, keys: keys, readsVisitorId: readsVisitorId)
        return bytes.withUnsafeBytes { raw -> [BucketedCampaign]? in
            var input = BinaryJSON.Reader(raw, at: campaignsAt)
            var assigned: [BucketedCampaign] = []
            assigned.reserveCapacity(count)
            do throws(BinaryJSON.Malformed) {
                for _ in 0..<count {
                    let end = try input.blockEnd()
                    if let campaign = try decideCampaign(&input, visitor, visitorId: visitorId, history: history) {
                        assigned.append(campaign)
                    }
                    try input.seek(to: end)
                }
                return assigned
            } catch {
                return nil
            }
        }
    }

    /// The campaign at the reader for the visitor: its first group whose rules match decides.
    private func decideCampaign(_ input: inout BinaryJSON.Reader, _ visitor: PreparedContext, visitorId: String,
                                history: [String: String]) throws(BinaryJSON.Malformed) -> BucketedCampaign? {
        let campaignAt = input.offset
        try input.skipString()
        try input.skipString()
        if try input.bool() { try input.skipString() }
        try input.skipString()
        for _ in 0..<(try input.count()) {
            let groupAt = input.offset
            let groupId = try input.checkedUTF8()
            try input.skipString()
            try input.seek(to: try input.blockEnd())
            let matched = try CompiledTargeting.matches(&input, visitor, keyCount: keys.count)
            let variationsEnd = try input.blockEnd()
            guard matched else {
                try input.seek(to: variationsEnd)
                continue
            }
            guard let variationAt = try variation(&input, groupId: groupId, at: groupAt, visitorId: visitorId, history: history) else {
                return nil
            }
            let raw = input.bytes
            return try assignments.value(at: variationAt) {
                var campaign = BinaryJSON.Reader(raw, at: campaignAt)
                do throws(BinaryJSON.Malformed) {
                    return Assignment(.success(try assignment(&campaign, groupAt: groupAt, variationAt: variationAt)))
                } catch {
                    return Assignment(.failure(error))
                }
            }.read.get()
        }
        return nil
    }

    /// Where the group's variation for the visitor is (as `VariationGroup.variation`): the one the
    /// history remembers, else the one the hash of the group id and visitor id falls in.
    private func variation(_ input: inout BinaryJSON.Reader, groupId: UnsafeBufferPointer<UInt8>, at groupAt: Int, visitorId: String,
                           history: [String: String]) throws(BinaryJSON.Malformed) -> Int? {
        let count = try input.count()
        if !history.isEmpty, let remembered = history[groupIds.value(at: groupAt) { String(decoding: groupId, as: UTF8.self) }] {
            for _ in 0..<count {
                let at = input.offset
                _ = try input.fixed()
                guard try input.bool() else { continue }
                if remembered.utf8.elementsEqual(try input.checkedUTF8()) { return at }
                try skipAssignment(&input)
            }
            return nil
        }
        var hash = MurmurHash3.State()
        hash.append(UnsafeRawBufferPointer(groupId))
        hash.append(utf8Of: visitorId)
        let bucket = Double(hash.finalized() % 100)
        var total = 0.0
        for _ in 0..<count {
            let at = input.offset
            let allocation = Double(bitPattern: try input.fixed())
            if allocation > 0 {
                total += allocation
                if bucket < total { return at }
            }
            if try input.bool() {
                try input.skipString()
                try skipAssignment(&input)
            }
        }
        return nil
    }

    /// Passes over what a variation gives after its id.
    private func skipAssignment(_ input: inout BinaryJSON.Reader) throws(BinaryJSON.Malformed) {
        try input.skipString()
        _ = try input.byte()
        if try input.bool() { try input.skipString() }
        if try input.bool() {
            _ = try input.varint()
            _ = try input.varint()
            try input.skipStrings()
        }
    }

    /// The campaign at the reader as a visitor assigned to its variation at `variationAt`, in
    /// its group at `groupAt`, gets it; `nil` for a variation without an id.
    private func assignment(_ input: inout BinaryJSON.Reader, groupAt: Int, variationAt: Int) throws(BinaryJSON.Malformed) -> BucketedCampaign? {
        let base = try Self.campaignBase(&input)
        try input.seek(to: groupAt)
        let group = try Self.groupBase(&input, of: base)
        try input.seek(to: variationAt)
        return try readVariation(&input, in: group).assignment
    }

    // MARK: Reading into the engine's structures

    /// The campaigns as the engine's structures, read at the first call, then kept.
    var campaigns: [BucketingFile.Campaign] {
        read.withLock { read in
            if let read { return read }
            // Checked when the blob was read: this reading cannot fail.
            let campaigns = (try? readCampaigns().get()) ?? []
            read = campaigns
            return campaigns
        }
    }

    /// Whether `campaigns` was read (a start reads none).
    var hasReadCampaigns: Bool { read.withLock { $0 != nil } }

    private func readCampaigns() -> Result<[BucketingFile.Campaign], BinaryJSON.Malformed> {
        bytes.withUnsafeBytes { raw in
            var input = BinaryJSON.Reader(raw, at: campaignsAt)
            var campaigns: [BucketingFile.Campaign] = []
            campaigns.reserveCapacity(count)
            do throws(BinaryJSON.Malformed) {
                for _ in 0..<count {
                    let end = try input.blockEnd()
                    campaigns.append(try readCampaign(&input))
                    try input.seek(to: end)
                }
                return .success(campaigns)
            } catch {
                return .failure(error)
            }
        }
    }

    /// What every assignment of a campaign shares: its id, names, slug and type.
    private static func campaignBase(_ input: inout BinaryJSON.Reader) throws(BinaryJSON.Malformed) -> BucketedCampaign {
        BucketedCampaign(campaignId: try input.string(), campaignName: try input.string(), slug: try input.optionalString(),
                         type: try input.string(), variationGroupId: "", variationId: "")
    }

    /// `campaign` with the group's id and name at the reader.
    private static func groupBase(_ input: inout BinaryJSON.Reader, of campaign: BucketedCampaign) throws(BinaryJSON.Malformed) -> BucketedCampaign {
        var group = campaign
        group.variationGroupId = try input.string()
        group.variationGroupName = try input.string()
        return group
    }

    private func readCampaign(_ input: inout BinaryJSON.Reader) throws(BinaryJSON.Malformed) -> BucketingFile.Campaign {
        let base = try Self.campaignBase(&input)
        var groups: [BucketingFile.VariationGroup] = []
        for _ in 0..<(try input.count()) {
            let group = try Self.groupBase(&input, of: base)
            let written = try Self.writtenRules(&input)
            let rules = try CompiledTargeting.rules(&input, keyCount: keys.count)
            var variations: [BucketingFile.Variation] = []
            let variationsEnd = try input.blockEnd()
            for _ in 0..<(try input.count()) { variations.append(try readVariation(&input, in: group)) }
            try input.seek(to: variationsEnd)
            var hashPrefix = MurmurHash3.State()
            hashPrefix.append(utf8Of: group.variationGroupId)
            groups.append(BucketingFile.VariationGroup(id: group.variationGroupId, targeting: Targeting(groups: rules, written: written),
                                                       hashPrefix: hashPrefix, variations: variations))
        }
        return BucketingFile.Campaign(id: base.campaignId, variationGroups: groups)
    }

    /// A group's rules as the file wrote them (for an explanation).
    private static func writtenRules(_ input: inout BinaryJSON.Reader) throws(BinaryJSON.Malformed) -> [[Targeting.WrittenRule]] {
        let end = try input.blockEnd()
        var written: [[Targeting.WrittenRule]] = []
        for _ in 0..<(try input.count()) {
            var rules: [Targeting.WrittenRule] = []
            for _ in 0..<(try input.count()) {
                let key = try input.optionalString(), operatorName = try input.optionalString()
                // Not `bool() ? value() : nil`: `FSJSONValue` takes `nil` as `.null`, which is not an absent value.
                let value: FSJSONValue? = try input.bool() ? try input.value() : Optional<FSJSONValue>.none
                rules.append(Targeting.WrittenRule(key: key, operatorName: operatorName, value: value))
            }
            written.append(rules)
        }
        try input.seek(to: end)
        return written
    }

    /// A variation of `group`: its allocation (checked at the start), then what a visitor assigned
    /// to it gets, its flags left in the blob until first needed.
    private func readVariation(_ input: inout BinaryJSON.Reader, in group: BucketedCampaign) throws(BinaryJSON.Malformed) -> BucketingFile.Variation {
        let allocation = Double(bitPattern: try input.fixed())
        guard try input.bool() else {
            return BucketingFile.Variation(id: nil, allocation: allocation, assignment: nil)
        }
        var assignment = group
        let variationId = try input.string()
        assignment.variationId = variationId
        assignment.variationName = try input.string()
        assignment.isReference = try input.bool()
        assignment.modificationsType = try input.optionalString()
        guard try input.bool() else {
            return BucketingFile.Variation(id: variationId, allocation: allocation, assignment: assignment)
        }
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
    }

    // MARK: The change events

    /// The keys of the flags the variations (with an id) of the campaigns `ids` give, read from
    /// the blob without building any campaign or reading any flag's value (as
    /// `BucketingFileCampaigns.flagKeys` reads them from the structures); `nil` if the blob cannot
    /// be read there, which its check at the start rules out.
    func flagKeys(ofCampaigns ids: Set<String>) -> Set<String>? {
        bytes.withUnsafeBytes { raw -> Set<String>? in
            var input = BinaryJSON.Reader(raw, at: campaignsAt)
            var keys = Set<String>()
            do throws(BinaryJSON.Malformed) {
                for _ in 0..<count {
                    let end = try input.blockEnd()
                    if ids.contains(String(decoding: try input.checkedUTF8(), as: UTF8.self)) {
                        try flagKeys(&input, into: &keys)
                    }
                    try input.seek(to: end)
                }
                return keys
            } catch {
                return nil
            }
        }
    }

    /// The flag keys of the campaign at the reader, past its id.
    private func flagKeys(_ input: inout BinaryJSON.Reader, into keys: inout Set<String>) throws(BinaryJSON.Malformed) {
        try input.skipString()
        if try input.bool() { try input.skipString() }
        try input.skipString()
        for _ in 0..<(try input.count()) {
            try input.skipString()
            try input.skipString()
            try input.seek(to: try input.blockEnd())
            try input.seek(to: try input.blockEnd())
            let variationsEnd = try input.blockEnd()
            for _ in 0..<(try input.count()) {
                _ = try input.fixed()
                guard try input.bool() else { continue }
                try input.skipString()
                try input.skipString()
                _ = try input.byte()
                if try input.bool() { try input.skipString() }
                guard try input.bool() else { continue }
                _ = try input.varint()
                _ = try input.varint()
                keys.formUnion(try input.strings())
            }
            try input.seek(to: variationsEnd)
        }
    }

    // MARK: The change events' digests

    /// Each campaign id's digest, read at the first call, then kept.
    var digests: [String: String] {
        readDigests.withLock { read in
            if let read { return read }
            let digests: [String: String] = bytes.withUnsafeBytes { raw in
                var input = BinaryJSON.Reader(raw, at: digestsAt)
                var digests: [String: String] = [:]
                // Checked when the blob was read.
                do throws(BinaryJSON.Malformed) {
                    _ = try input.blockEnd()
                    for _ in 0..<(try input.count()) {
                        let id = try input.string()
                        digests[id] = try input.string()
                    }
                } catch {}
                return digests
            }
            read = digests
            return digests
        }
    }
}

extension BinaryJSON.Reader {
    @inline(__always)
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
