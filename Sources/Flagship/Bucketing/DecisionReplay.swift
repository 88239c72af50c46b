import FlagshipStore
import Foundation

/// Decides recorded decisions again (`flagship why --replay`): each on the bucketing file version
/// that made it, with the context it was made on, by today's engine. An assignment is recorded
/// when the visitor's history had none for its variation group, so it is replayed without history.
package struct DecisionReplay {
    package enum Outcome: Equatable, Sendable {
        /// Today's engine gives the same variation group and variation.
        case agrees
        /// Today's engine gives another variation, or nothing (`nil`) from that campaign.
        case disagrees(variationGroupId: String?, variationId: String?)
        /// Nothing to replay on: why.
        case notReplayable(NotReplayable)
    }

    package enum NotReplayable: String, Error, Equatable, Sendable, CaseIterable {
        case decisionAPI = "decided by the Decision API"
        case unknownVersion = "file version not recorded"
        case versionNotKept = "file version no longer kept"
        case unusableFile = "file version unusable"
        /// The kept bytes no longer hash to the version they are kept as: edited after the fact.
        /// Nothing is replayed on them; `flagship why --replay` exits 2.
        case tampered = "file version tampered with (its kept bytes do not hash to it)"
        case noContext = "context not recorded"
    }

    /// The document kept under exactly that version (`nil`: not kept).
    private let document: (String) throws -> String?
    private var files: [String: Result<BucketingFile, NotReplayable>] = [:]
    private var lastContext: (text: String, parsed: [String: FSJSONValue])?

    package init(document: @escaping (String) throws -> String?) {
        self.document = document
    }

    package mutating func replay(_ record: DecisionRecord) -> Outcome {
        switch prepare(record) {
        case .failure(let reason):
            return .notReplayable(reason)
        case .success(let (file, context)):
            let decision = file.decide(visitorId: record.visitorId, context: context, history: [:])
            let today = decision.campaigns.first { campaign in
                record.campaignId.map { $0 == campaign.campaignId } ?? (campaign.variationGroupId == record.variationGroupId)
            }
            if today?.variationGroupId == record.variationGroupId, today?.variationId == record.variationId { return .agrees }
            return .disagrees(variationGroupId: today?.variationGroupId, variationId: today?.variationId)
        }
    }

    /// How the recorded file decides the recorded context today, step by step: the decision's
    /// campaign only.
    package mutating func explain(_ record: DecisionRecord) -> Result<FSDecisionExplanation, NotReplayable> {
        prepare(record).map { file, context in
            let whole = file.explain(visitorId: record.visitorId, context: context, history: [:])
            let campaigns = whole.campaigns.filter { campaign in
                record.campaignId.map { $0 == campaign.campaignId }
                    ?? campaign.variationGroups.contains { $0.variationGroupId == record.variationGroupId }
            }
            return FSDecisionExplanation(visitorId: whole.visitorId, fileVersion: whole.fileVersion, panic: whole.panic,
                                         campaigns: campaigns)
        }
    }

    private mutating func prepare(_ record: DecisionRecord) -> Result<(BucketingFile, [String: FSJSONValue]), NotReplayable> {
        switch record.source {
        case .decisionAPI: return .failure(.decisionAPI)
        case .unknown: return .failure(.unknownVersion)
        case .bucketingFile, .bootstrap: break
        }
        guard let version = record.fileVersion, !version.isEmpty else { return .failure(.unknownVersion) }
        guard let contextText = record.context else { return .failure(.noContext) }
        // A fetch's assignments share their context: parsed once for all of them.
        let context: [String: FSJSONValue]
        if let last = lastContext, last.text == contextText {
            context = last.parsed
        } else {
            guard case .object(let parsed)? = try? FSJSONValue(parsing: Data(contextText.utf8)) else { return .failure(.noContext) }
            context = parsed
            lastContext = (contextText, parsed)
        }
        let file: Result<BucketingFile, NotReplayable>
        if let cached = files[version] {
            file = cached
        } else {
            // The version is the sha256 of the file's bytes: kept bytes that hash otherwise are not
            // the file that decided, and replaying on them would blame or clear the engine wrongly.
            guard let text = try? document(version) else { return .failure(.versionNotKept) }
            let bytes = Data(text.utf8)
            if SHA256.hex(of: bytes) != version.lowercased() {
                file = .failure(.tampered)
            } else {
                file = (try? BucketingFile(json: bytes, maximumBytes: .max)).map { .success($0) } ?? .failure(.unusableFile)
            }
            files[version] = file
        }
        return file.map { ($0, context) }
    }
}

/// What replaying many decisions gave: agreements, disagreements (each kept), and the decisions
/// that could not be replayed, by reason.
package struct DecisionReplaySummary: Sendable {
    package private(set) var agree = 0
    package private(set) var notReplayable: [DecisionReplay.NotReplayable: Int] = [:]
    package private(set) var disagreements: [(decision: DecisionRecord, outcome: DecisionReplay.Outcome)] = []
    /// Rows that could not be read, so not replayed (`skip`).
    package private(set) var unreadable: [UnreadableDecision] = []

    package init() {}

    package var disagree: Int { disagreements.count }
    package var replayed: Int { agree + disagree }

    package mutating func count(_ decision: DecisionRecord, _ outcome: DecisionReplay.Outcome) {
        switch outcome {
        case .agrees: agree += 1
        case .disagrees: disagreements.append((decision, outcome))
        case .notReplayable(let reason): notReplayable[reason, default: 0] += 1
        }
    }

    package mutating func skip(_ rows: [UnreadableDecision]) {
        unreadable += rows
    }
}

extension DecisionReplay {
    /// Replays every decision of the store file at `url` (opened read-only), a page of rows at a time.
    package static func replayStore(at url: URL) throws -> DecisionReplaySummary {
        let store = try FlagshipDatabase.openForInspection(at: url)
        defer { store.close() }
        func document(_ version: String) throws -> String? {
            try store.read { try $0.bucketingFiles.file(exactVersion: version)?.document }
        }
        var replay = DecisionReplay(document: document)
        var summary = DecisionReplaySummary()
        var after: Int64 = 0
        while true {
            let page = try store.read { try $0.decisions.page(after: after, limit: 10_000) }
            guard let last = page.lastRowId else { return summary }
            for (_, decision) in page.decisions { summary.count(decision, replay.replay(decision)) }
            summary.skip(page.unreadable)
            after = last
        }
    }
}

extension DecisionReplay {
    /// Reads every decision of the store file at `url` as `replayStore(at:)` does, without
    /// replaying: the floor of a replay's cost, for the benchmarks. Returns how many there are.
    package static func readStore(at url: URL) throws -> Int {
        let store = try FlagshipDatabase.openForInspection(at: url)
        defer { store.close() }
        var count = 0
        var after: Int64 = 0
        while true {
            let page = try store.read { try $0.decisions.page(after: after, limit: 10_000) }
            guard let last = page.lastRowId else { return count }
            count += page.decisions.count
            after = last
        }
    }
}
