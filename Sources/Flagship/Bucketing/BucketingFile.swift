import Foundation

/// A bucketing file (BUCKETING.md) read once into the form decisions are made from: operators as
/// enums, strings lower-cased, numbers as `Double`, each group's hash begun with its id, each
/// variation's assignment built in advance. Deciding then allocates nothing per rule.
///
/// Only a document that cannot be a bucketing file is refused, with ``BucketingFileError``: not
/// JSON (or truncated), not an object, `campaigns` not a list, no `campaigns` outside panic.
/// Inside a usable file, what is wrong is made harmless and told in ``warnings``, one sentence each:
/// - a campaign or variation group without a usable `id` (missing, empty, not a string) is
///   skipped: it could be neither hashed nor remembered in the assignment history;
/// - a variation without one keeps its share of the allocation, so the others keep their visitors,
///   but a visitor it would take gets nothing from that campaign; so does a variation whose id
///   repeats an earlier one's in its group (the assignment history could not tell them apart);
/// - an `allocation` that is negative or not a number counts as 0, like a missing one; allocations
///   summing over 100 leave the later variations what remains (maybe nothing);
/// - a targeting rule without `key` or `operator`, or with an operator this SDK does not know,
///   never matches (each unknown operator is named once);
/// - a variation whose `modifications` lack `type` or `value` gives no flags.
package struct BucketingFile: Sendable {
    package let panic: Bool
    package let accountSettings: AccountSettings
    /// What was wrong inside the file and how it was read, one sentence each, for the caller to log.
    package let warnings: [String]
    let contextKeys: ContextKeys
    /// Whether some rule reads the visitor id (`fs_users`).
    let readsVisitorId: Bool
    /// The sha256 of the bytes the file was read from (64 hex digits): the version decisions
    /// record, under which the store keeps the file.
    package private(set) var version = ""
    private let source: Source

    /// Where the campaigns are: read from the JSON into the engine's structures, or in the
    /// store's compiled form, decided there and read into those structures when first needed.
    private enum Source: Sendable {
        case read([Campaign])
        case compiled(CompiledCampaigns)
    }

    package var campaigns: [Campaign] {
        switch source {
        case .read(let campaigns): campaigns
        case .compiled(let compiled): compiled.campaigns
        }
    }

    package var campaignCount: Int {
        switch source {
        case .read(let campaigns): campaigns.count
        case .compiled(let compiled): compiled.count
        }
    }

    /// The campaigns in the store's compiled form, if the file was read from it.
    var compiled: CompiledCampaigns? {
        if case .compiled(let compiled) = source { return compiled }
        return nil
    }

    init(panic: Bool, accountSettings: AccountSettings, warnings: [String], campaigns: [Campaign],
         contextKeys: ContextKeys, readsVisitorId: Bool, version: String = "") {
        self.version = version
        self.panic = panic
        self.accountSettings = accountSettings
        self.warnings = warnings
        self.contextKeys = contextKeys
        self.readsVisitorId = readsVisitorId
        source = .read(campaigns)
    }

    // Classes, not structs: a decision walks them by reference. As structs, each step of the walk
    // copied one, retaining each of its strings and arrays: a fifth of a decision's time.
    package final class Campaign: Sendable {
        package let id: String
        package let variationGroups: [VariationGroup]

        init(id: String, variationGroups: [VariationGroup]) {
            self.id = id
            self.variationGroups = variationGroups
        }
    }

    package final class VariationGroup: Sendable {
        package let id: String
        let targeting: Targeting
        /// The hash after this group's id: a decision appends the visitor id and finishes it.
        let hashPrefix: MurmurHash3.State
        package let variations: [Variation]

        init(id: String, targeting: Targeting, hashPrefix: MurmurHash3.State, variations: [Variation]) {
            self.id = id
            self.targeting = targeting
            self.hashPrefix = hashPrefix
            self.variations = variations
        }
    }

    package final class Variation: Sendable {
        /// `nil`: the file gave no usable id; the variation only holds its share of the allocation.
        package let id: String?
        /// 0 or more; 0 takes no visitor by hash.
        package let allocation: Double
        private let made: Made

        /// A variation read from the file's JSON has its flags at once; one read from the
        /// store's compiled form reads them when a visitor is first assigned to it.
        private enum Made: Sendable {
            case ready(BucketedCampaign?)
            case lazy(LazyAssignment)
        }

        init(id: String?, allocation: Double, assignment: BucketedCampaign?) {
            self.id = id
            self.allocation = allocation
            made = .ready(assignment)
        }

        init(id: String, allocation: Double, lazy: LazyAssignment) {
            self.id = id
            self.allocation = allocation
            made = .lazy(lazy)
        }

        /// What a visitor assigned to it gets; `nil` when it has no id.
        package var assignment: BucketedCampaign? {
            switch made {
            case .ready(let assignment): assignment
            case .lazy(let lazy): lazy.assignment
            }
        }

        /// The keys of its flags, without reading their values.
        var flagKeys: [String] {
            switch made {
            case .ready(let assignment): assignment.map { Array($0.flags.keys) } ?? []
            case .lazy(let lazy): lazy.flagKeys
            }
        }
    }
}

/// Why a document is not a usable bucketing file.
package struct BucketingFileError: Error, Equatable, CustomStringConvertible {
    package let reason: String

    package init(reason: String) {
        self.reason = reason
    }

    package var description: String { "The bucketing file is unusable: \(reason)." }
}

extension BucketingFile {
    /// Reads a bucketing file; see the type's documentation for what is refused and what is only warned.
    /// `maximumBytes`: the largest document read (`FSConfigBuilder.withBucketingFileMaximumBytes`).
    /// `parts`: read in that many parts side by side (`readInParts`), 1 in order; by default in
    /// parts from `readInPartsBytes` on a machine of several cores.
    package init(json data: Data, maximumBytes: Int = BucketingFile.maximumBytes, parts: Int? = nil) throws(BucketingFileError) {
        try Self.checkSize(of: data, maximumBytes: maximumBytes)
        if let parts = Self.parts(reading: data, parts), let read = Self.readInParts(data, parts: parts, keepingTree: false) {
            self = read.file
            return
        }
        try self.init(parsed: Self.parse(json: data, maximumBytes: maximumBytes))
    }

    /// Reads the campaigns of a file parsed by `parse(json:maximumBytes:)`.
    init(parsed: ParsedBucketingFile) throws(BucketingFileError) {
        var reader = BucketingFileReader()
        for warning in parsed.parseWarnings { reader.warn(warning) }
        try self.init(root: parsed.root, version: parsed.version, reader: reader)
    }

    /// Parses the document once: the tree the campaigns are read from (a flag value that cannot
    /// be read taken out, with its warning), and the version of its bytes.
    static func parse(json data: Data, maximumBytes: Int = BucketingFile.maximumBytes) throws(BucketingFileError) -> ParsedBucketingFile {
        try checkSize(of: data, maximumBytes: maximumBytes)
        let (read, version) = parseAndHash(data)
        guard case .success(let parsed) = read else {
            throw BucketingFileError(reason: "the document (\(data.count) bytes) is not valid JSON, or is truncated")
        }
        var warnings: [String] = []
        var root = parsed.value
        for unusable in parsed.unusable {
            guard let dropped = droppedFlag(unusable) else { throw BucketingFileError(reason: unusable.sentence) }
            root.remove(at: dropped.path)
            warnings.append(dropped.warning)
        }
        return ParsedBucketingFile(root: root, parseWarnings: warnings, version: version)
    }

    /// An unusable value inside one flag's value of a variation costs that flag only: the path of
    /// the flag to take out, and the warning. `nil` for one anywhere else, which costs the file.
    static func droppedFlag(_ unusable: TolerantJSON.Unusable) -> (path: ArraySlice<TolerantJSON.Step>, warning: String)? {
        let path = unusable.path
        guard path.count >= 9, path[0] == .key("campaigns"), case .index(let campaign) = path[1],
              path[2] == .key("variationGroups"), case .index(let group) = path[3],
              path[4] == .key("variations"), case .index(let variation) = path[5],
              Array(path[6...7]) == [.key("modifications"), .key("value")], case .key(let flag) = path[8] else {
            return nil
        }
        return (path[...8], "campaign #\(campaign + 1), variation group #\(group + 1), variation #\(variation + 1): "
            + "flag \"\(flag)\" was dropped: \(unusable.reason)")
    }

    /// A file read back from the store's compiled form (`CompiledBucketingFile`): its campaigns
    /// where they lie, and the warnings its JSON gave.
    init(compiled campaigns: CompiledCampaigns, panic: Bool, warnings: [String], version: String, accountSettings: AccountSettings) {
        self.panic = panic
        self.accountSettings = accountSettings
        self.warnings = warnings
        contextKeys = campaigns.keys
        readsVisitorId = campaigns.readsVisitorId
        self.version = version
        source = .compiled(campaigns)
    }

    /// Reads the campaigns from the file's parsed JSON.
    init(root: FSJSONValue, version: String, reader: BucketingFileReader) throws(BucketingFileError) {
        var reader = reader
        guard case .object(let body) = root else {
            throw BucketingFileError(reason: "the document is JSON but not an object")
        }

        let panic = Self.panic(of: body, with: &reader)
        var campaigns: [Campaign] = []
        switch body["campaigns"] {
        case nil, .null?:
            guard panic else { throw BucketingFileError(reason: "it has no \"campaigns\" and is not in panic") }
        case .array(let entries)?:
            campaigns = Self.campaigns(reading: entries, from: 0, with: &reader)
        case .some:
            throw BucketingFileError(reason: "\"campaigns\" is not a list")
        }
        self.init(panic: panic, accountSettings: Self.accountSettings(of: body), warnings: reader.warnings, campaigns: campaigns,
                  contextKeys: reader.contextKeys, readsVisitorId: reader.readsVisitorId)
        self.version = version
    }

    /// The root's `panic`: anything but a boolean is false, with a warning.
    static func panic(of body: [String: FSJSONValue], with reader: inout BucketingFileReader) -> Bool {
        switch body["panic"] {
        case nil, .null?:
            return false
        case .bool(let value)?:
            return value
        case .some:
            reader.warn("\"panic\" is not a boolean; read as false")
            return false
        }
    }

    static func accountSettings(of body: [String: FSJSONValue]) -> AccountSettings {
        let settings = body["accountSettings"]
        return AccountSettings(enabledXPC: settings?["enabledXPC"]?.boolValue ?? false,
                               enabled1V1T: settings?["enabled1V1T"]?.boolValue ?? false)
    }

    /// The campaigns of `entries`, the first being the file's campaign number `first` + 1; those
    /// without a usable id skipped.
    static func campaigns(reading entries: [FSJSONValue], from first: Int, with reader: inout BucketingFileReader) -> [Campaign] {
        var campaigns: [Campaign] = []
        campaigns.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            if let campaign = Campaign(reading: entry, number: first + index + 1, with: &reader) {
                campaigns.append(campaign)
            }
        }
        return campaigns
    }

    /// A non-empty string `id`, or `nil` after a warning naming `location`.
    fileprivate static func id(of entry: FSJSONValue, at location: String, _ consequence: String,
                               with reader: inout BucketingFileReader) -> String? {
        guard case .object = entry else {
            reader.warn("\(location) is not an object; \(consequence)")
            return nil
        }
        guard let id = entry["id"]?.stringValue, !id.isEmpty else {
            reader.warn("\(location) has no \"id\" (missing, empty or not a string); \(consequence)")
            return nil
        }
        return id
    }

    /// The list at `key` of `entry`: a missing one is empty; another value is empty too, with a warning.
    fileprivate static func list(_ key: String, of entry: FSJSONValue, at location: String,
                                 with reader: inout BucketingFileReader) -> [FSJSONValue] {
        switch entry[key] {
        case .array(let list)?: return list
        case nil, .null?: return []
        case .some:
            reader.warn("\(location): \"\(key)\" is not a list; read as empty")
            return []
        }
    }
}

extension BucketingFile.Campaign {
    fileprivate convenience init?(reading entry: FSJSONValue, number: Int, with reader: inout BucketingFileReader) {
        guard let id = BucketingFile.id(of: entry, at: "campaign #\(number)", "the campaign is skipped", with: &reader) else {
            return nil
        }
        let location = "campaign \"\(id)\""
        let base = BucketedCampaign(
            campaignId: id, campaignName: entry["name"]?.stringValue ?? "", slug: entry["slug"]?.stringValue,
            type: entry["type"]?.stringValue ?? "", variationGroupId: "", variationGroupName: "",
            variationId: "", variationName: "", isReference: false, modificationsType: nil, flags: [:])
        var groups: [BucketingFile.VariationGroup] = []
        for (index, group) in BucketingFile.list("variationGroups", of: entry, at: location, with: &reader).enumerated() {
            let groupLocation = "\(location), variation group #\(index + 1)"
            guard let groupId = BucketingFile.id(of: group, at: groupLocation, "the group is skipped", with: &reader) else {
                continue
            }
            groups.append(BucketingFile.VariationGroup(
                reading: group, id: groupId, campaign: base, at: "\(location), variation group \"\(groupId)\"", with: &reader))
        }
        self.init(id: id, variationGroups: groups)
    }
}

extension BucketingFile.VariationGroup {
    fileprivate convenience init(reading entry: FSJSONValue, id: String, campaign: BucketedCampaign, at location: String,
                                 with reader: inout BucketingFileReader) {
        var group = campaign
        group.variationGroupId = id
        group.variationGroupName = entry["name"]?.stringValue ?? ""
        var seen = Set<String>()
        let variations = BucketingFile.list("variations", of: entry, at: location, with: &reader).enumerated().map {
            let variation = BucketingFile.Variation(reading: $1, group: group, at: "\(location), variation #\($0 + 1)", with: &reader)
            guard let id = variation.id, !seen.insert(id).inserted else { return variation }
            // The history names a variation by id: a second one with the same id could be chosen
            // by the hash but never remembered, so it only holds its share, like one without an id.
            reader.warn("\(location), variation #\($0 + 1): its id \"\(id)\" repeats an earlier variation's; a visitor in its share gets nothing from the campaign")
            return BucketingFile.Variation(id: nil, allocation: variation.allocation, assignment: nil)
        }
        let total = variations.reduce(0) { $0 + $1.allocation }
        if total > 100 {
            reader.warn("\(location): allocations sum to \(total.shortText), over 100; the later variations get what remains of 100")
        }
        var hashPrefix = MurmurHash3.State()
        hashPrefix.append(utf8Of: id)
        self.init(id: id, targeting: Targeting(reading: entry["targeting"], at: location, with: &reader),
                  hashPrefix: hashPrefix, variations: variations)
    }
}

extension BucketingFile.Variation {
    fileprivate convenience init(reading entry: FSJSONValue, group: BucketedCampaign, at location: String,
                                 with reader: inout BucketingFileReader) {
        let allocation = Self.allocation(of: entry["allocation"], at: location, with: &reader)
        let share = allocation > 0 ? "a visitor in its \(allocation.shortText)% gets nothing from the campaign" : "it is ignored"
        let id = BucketingFile.id(of: entry, at: location, share, with: &reader)
        guard let id else {
            self.init(id: nil, allocation: allocation, assignment: nil)
            return
        }
        var assignment = group
        assignment.variationId = id
        assignment.variationName = entry["name"]?.stringValue ?? ""
        assignment.isReference = entry["reference"]?.boolValue ?? false
        let modifications = entry["modifications"]
        assignment.modificationsType = modifications?["type"]?.stringValue
        if assignment.modificationsType != nil, let flags = modifications?["value"]?.objectValue {
            assignment.flags = flags
        }
        self.init(id: id, allocation: allocation, assignment: assignment)
    }

    /// A number of 0 or more; anything else is 0 (a missing allocation silently, the rest with a warning).
    private static func allocation(of json: FSJSONValue?, at location: String, with reader: inout BucketingFileReader) -> Double {
        let value: Double
        switch json {
        case nil, .null?: return 0
        case .int(let number)?: value = Double(number)
        case .double(let number)?: value = number
        case .some:
            reader.warn("\(location): \"allocation\" is not a number; counted as 0")
            return 0
        }
        guard value >= 0 else {
            reader.warn("\(location): \"allocation\" is negative (\(value.shortText)); counted as 0")
            return 0
        }
        return value
    }
}

extension Double {
    /// `50` rather than `50.0` in a warning.
    fileprivate var shortText: String {
        rounded() == self && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
