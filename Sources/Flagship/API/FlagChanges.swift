import FlagshipStore
import Foundation

/// A new bucketing file, compared with the one it replaced (bucketing mode): the campaigns added,
/// removed and changed (targeting, allocations, flags, anything in their JSON), by id, and the
/// flag keys those campaigns give before or after.
public struct FSBucketingFileChange: Sendable, Equatable {
    /// The ids of the campaigns only in the new file; sorted.
    public let campaignsAdded: [String]
    /// The ids of the campaigns only in the old file; sorted.
    public let campaignsRemoved: [String]
    /// The ids of the campaigns in both files whose JSON differs; sorted.
    public let campaignsChanged: [String]
    /// The keys the added, removed and changed campaigns give, in either file; sorted.
    public let flagKeys: [String]
    /// Whether the new file is a panic file (every flag gives its default).
    public let panic: Bool
}

/// The flags of a watched visitor whose values changed with a new decision.
public struct FSFlagValueChange: Sendable {
    /// The flag's key.
    public let key: String
    let oldRawValue: FSJSONValue?
    let newRawValue: FSJSONValue?

    /// The value before; `nil` when the visitor did not have the flag.
    public var oldValue: Any? { oldRawValue?.foundationValue }
    /// The value now; `nil` when the visitor no longer has the flag.
    public var newValue: Any? { newRawValue?.foundationValue }
}

/// Hands each value to every listening `AsyncStream`, never waiting for one: each stream keeps
/// the newest `limit` values (a slow consumer loses the oldest, the producer never blocks).
final class ChangeBroadcaster<Value: Sendable>: Sendable {
    private struct State {
        var next = 0
        var continuations: [Int: AsyncStream<Value>.Continuation] = [:]
        var finished = false
    }

    private let state = Locked(State())
    private let limit: Int

    init(limit: Int = 16) {
        self.limit = limit
    }

    var hasListeners: Bool {
        state.withLock { !$0.continuations.isEmpty }
    }

    func stream() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(limit))
        let id = state.withLock { state -> Int? in
            guard !state.finished else { return nil }
            defer { state.next += 1 }
            state.continuations[state.next] = continuation
            return state.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    func yield(_ value: Value) {
        for continuation in state.withLock({ Array($0.continuations.values) }) { continuation.yield(value) }
    }

    /// Ends every stream; later ones end at once.
    func finish() {
        let continuations = state.withLock { state -> [AsyncStream<Value>.Continuation] in
            state.finished = true
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}

extension FSBucketingFileChange {
    /// What changed from `old` to `new` (campaign JSON by id); `nil` when nothing did.
    static func between(old: BucketingFileCampaigns, new: BucketingFileCampaigns, panic: Bool) -> FSBucketingFileChange? {
        let added = new.digests.keys.filter { old.digests[$0] == nil }.sorted()
        let removed = old.digests.keys.filter { new.digests[$0] == nil }.sorted()
        let changed = new.digests.keys.filter { id in old.digests[id].map { $0 != new.digests[id] } ?? false }.sorted()
        guard !added.isEmpty || !removed.isEmpty || !changed.isEmpty || panic != old.panic else { return nil }
        let keys = new.flagKeys(ofCampaigns: Set(added + changed)).union(old.flagKeys(ofCampaigns: Set(removed + changed)))
        return FSBucketingFileChange(campaignsAdded: added, campaignsRemoved: removed, campaignsChanged: changed,
                                     flagKeys: keys.sorted(), panic: panic)
    }
}

/// A bucketing file's campaigns by id, each as the digest of its JSON (keys sorted), and the flag
/// keys each gives: what a change is computed from, without keeping the file's tree.
struct BucketingFileCampaigns: Sendable {
    /// Each campaign id's digest: from the file's tree, or read from the store's compiled form
    /// when first compared.
    var digests: [String: String] {
        switch kept {
        case .some(let digests): digests
        case nil: file.compiled?.digests ?? [:]
        }
    }
    /// `nil`: the compiled form's (`file.compiled`).
    private let kept: [String: String]?
    let panic: Bool
    /// The file the digests are of (the one in use, kept anyway): the flag keys of the campaigns
    /// a change names are read from it then, not at each start for every campaign.
    private let file: BucketingFile

    /// From the file's tree: each campaign with a string id, the later of two with the same id.
    init(parsed: ParsedBucketingFile, file: BucketingFile) {
        var digests: [String: String] = [:]
        if case .array(let campaigns)? = parsed.root["campaigns"] {
            for campaign in campaigns {
                if case .string(let id)? = campaign["id"] { digests[id] = SHA256.hex(of: campaign.jsonString().utf8) }
            }
        }
        self.init(digests: digests, file: file)
    }

    private init(digests: [String: String], file: BucketingFile) {
        kept = digests
        self.file = file
        panic = file.panic
    }

    /// From the store's compiled form of `file`, its digests read when first compared.
    init(file: BucketingFile) {
        kept = nil
        self.file = file
        panic = file.panic
    }

    /// The keys the variations (with an id) of the campaigns `ids` give, without reading any
    /// flag's value: of every campaign with one of those ids.
    func flagKeys(ofCampaigns ids: Set<String>) -> Set<String> {
        guard !ids.isEmpty else { return [] }
        // A file read from the store's compiled form: from the blob, building no campaign.
        if let keys = file.compiled?.flagKeys(ofCampaigns: ids) { return keys }
        var keys = Set<String>()
        for campaign in file.campaigns where ids.contains(campaign.id) {
            for group in campaign.variationGroups {
                for variation in group.variations where variation.id != nil {
                    keys.formUnion(variation.flagKeys)
                }
            }
        }
        return keys
    }
}

extension Flagship {
    /// Each new bucketing file (bucketing mode), compared with the one it replaced: downloaded,
    /// or another instance's with a shared store. No change, no event; a file that only repeats
    /// the one in use gives none. The stream ends with `close()` (or at once, not started). It
    /// keeps the newest 16 changes: a slow consumer loses the oldest, polling never waits.
    public func bucketingFileChanges() -> AsyncStream<FSBucketingFileChange> {
        guard let runtime = currentRuntime else { return AsyncStream { $0.finish() } }
        return runtime.flagWatch.fileChanges.stream()
    }
}

extension FSVisitor {
    /// This visitor's flags whose values change, with the old and new values, after each
    /// decision: each `fetchFlags()`, and in bucketing mode each new bucketing file (the visitor
    /// is decided again on it while it is watched). No change, no event. The stream keeps the
    /// newest 16 changes; it ends with the SDK's `close()`.
    public func flagChanges() -> AsyncStream<[FSFlagValueChange]> {
        let stream = flagWatchers.stream()
        runtime?.flagWatch.watch(self)
        return stream
    }
}

/// The change listeners of one start of the SDK: the bucketing file's, and the visitors watched
/// with `flagChanges()`, decided again on each new file (held weakly: a visitor the app drops
/// is no longer watched).
final class FlagWatch: Sendable {
    let fileChanges = ChangeBroadcaster<FSBucketingFileChange>()
    private let visitors = Locked<[ObjectIdentifier: WeakVisitor]>([:])

    private struct WeakVisitor: Sendable {
        weak var visitor: FSVisitor?
    }

    func watch(_ visitor: FSVisitor) {
        visitors.withLock { $0[ObjectIdentifier(visitor)] = WeakVisitor(visitor: visitor) }
    }

    /// A new file: told to the listeners, and every watched visitor decided again on it (each
    /// fetch tells that visitor's listeners what changed).
    func fileChanged(_ change: FSBucketingFileChange) {
        fileChanges.yield(change)
        let watched = visitors.withLock { visitors -> [FSVisitor] in
            visitors = visitors.filter { $0.value.visitor != nil }
            return visitors.values.compactMap(\.visitor)
        }
        for visitor in watched {
            Task { try? await visitor.fetchFlags() }
        }
    }

    /// The SDK closed: every stream ends.
    func finish() {
        fileChanges.finish()
        let watched = visitors.withLock { visitors -> [FSVisitor] in
            defer { visitors = [:] }
            return visitors.values.compactMap(\.visitor)
        }
        for visitor in watched { visitor.flagWatchers.finish() }
    }
}
