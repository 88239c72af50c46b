import Foundation
import Flagship

// MARK: - Bucketing

extension FuzzEntry {
    static func bucketing(_ input: Data) throws(Violation) -> Outcome {
        let parts = input.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
        guard let file = try readInPartsAsInOrder(Data(parts[0])) else { return .refused }
        let visitor = parts.count > 1 ? (try? FSJSONValue(parsing: Data(parts[1]))) : nil
        let visitorId = visitor?["visitorId"]?.stringValue ?? "visitor-1"
        let context = visitor?["context"]?.objectValue ?? [:]
        let history = (visitor?["history"]?.objectValue ?? [:]).compactMapValues(\.stringValue)

        let decision = file.decide(visitorId: visitorId, context: context, history: history)
        try check(decision == file.decide(visitorId: visitorId, context: context, history: history),
                  "two decisions for the same visitor differ")
        try check(!decision.panic || decision.campaigns.isEmpty, "a file in panic assigned campaigns")
        try check(decision.campaigns.count <= file.campaignCount, "more campaigns assigned than the file has")
        for assigned in decision.campaigns {
            try checkExplained(assigned, by: file, visitorId: visitorId, history: history)
        }
        if history.isEmpty {
            try checkRememberedKept(decision, by: file, visitorId: visitorId, context: context)
        }
        _ = decision.flags

        // The store's compiled form of the file, read back as a start reads it, decides the same
        // and keeps the same warnings.
        let compiled = try recompiled(file)
        try check(compiled.decide(visitorId: visitorId, context: context, history: history) == decision,
                  "the compiled form decides otherwise than the JSON")
        try check(compiled.warnings == file.warnings && compiled.version == file.version && compiled.panic == file.panic,
                  "the compiled form lost the file's warnings, version or panic")
        return .accepted
    }

    /// The file read in order and in parts side by side (as a large file is read): refused for
    /// the same reason, or read alike (the same compiled form, so the same campaigns, rules,
    /// context slots, warnings, keys and version).
    private static func readInPartsAsInOrder(_ json: Data) throws(Violation) -> BucketingFile? {
        let inOrder = Result { () throws(BucketingFileError) in try BucketingFile(json: json, parts: 1) }
        let inParts = Result { () throws(BucketingFileError) in try BucketingFile(json: json, parts: 3) }
        switch (inOrder, inParts) {
        case (.failure(let one), .failure(let other)):
            try check(one == other, "refused in order (\(one)) and in parts (\(other)) for different reasons")
            return nil
        case (.success(let one), .success(let other)):
            try check(CompiledBucketingFile.encode(one) == CompiledBucketingFile.encode(other) && one.warnings == other.warnings,
                      "read in parts otherwise than in order")
            return one
        default:
            throw Violation(description: "read in order: \(inOrder); in parts: \(inParts)")
        }
    }

    /// A group of `file` with `assigned`'s ids explains the assignment and, when `history` does not
    /// name the group, the hash placed the visitor inside the chosen variation's share.
    private static func checkExplained(_ assigned: BucketedCampaign, by file: BucketingFile, visitorId: String,
                                       history: [String: String]) throws(Violation) {
        // Ids may repeat in a file: one of the groups with the assigned ids must explain the choice.
        let groups = file.campaigns.filter { $0.id == assigned.campaignId }.flatMap(\.variationGroups).filter {
            $0.id == assigned.variationGroupId && $0.variations.contains { $0.id == assigned.variationId }
        }
        try check(!groups.isEmpty, "assigned variation \(assigned.variationId) is in no group \(assigned.variationGroupId)")
        guard history[assigned.variationGroupId] == nil else { return }
        // Without history, the hash chose: the one-shot hash of the concatenated ids must agree
        // with the group's prepared one, and place the visitor inside the chosen variation's share.
        let bucket = MurmurHash3.x86_32(Array((assigned.variationGroupId + visitorId).utf8)) % 100
        try check(bucket == MurmurHash3.x86_32(utf8Of: assigned.variationGroupId, followedBy: visitorId) % 100,
                  "the hash fed in pieces differs from the hash of the whole")
        try check(groups.contains { group in
            var below = 0.0
            for variation in group.variations where variation.allocation > 0 {
                if variation.id == assigned.variationId { return Double(bucket) >= below && Double(bucket) < below + variation.allocation }
                below += variation.allocation
            }
            return false
        }, "bucket \(bucket) is outside the share of variation \(assigned.variationId)")
    }

    /// A visitor whose history remembers its variations keeps them. History is by variation
    /// group id: a file that repeats a group id in another campaign, where the hash placed the
    /// visitor in no variation, assigns that campaign too from the history (the remembered
    /// variation exists there); any campaign added so must be one the history names.
    private static func checkRememberedKept(_ decision: BucketingDecision, by file: BucketingFile, visitorId: String,
                                            context: [String: FSJSONValue]) throws(Violation) {
        let remembered = Dictionary(decision.campaigns.map { ($0.variationGroupId, $0.variationId) }) { first, _ in first }
        guard remembered.count == decision.campaigns.count else { return }
        let again = file.decide(visitorId: visitorId, context: context, history: remembered)
        for assigned in decision.campaigns {
            try check(again.campaigns.contains(assigned), "the visitor's remembered variations lost \(assigned.campaignId)")
        }
        for added in again.campaigns where !decision.campaigns.contains(added) {
            try check(remembered[added.variationGroupId] == added.variationId,
                      "the visitor's remembered variations gave \(added.campaignId) a variation no history names")
        }
    }

    /// `file` compiled as the store keeps it, then read back as a start reads it.
    private static func recompiled(_ file: BucketingFile) throws(Violation) -> BucketingFile {
        do {
            return try CompiledBucketingFile.file(from: CompiledBucketingFile.encode(file))
        } catch {
            throw Violation(description: "a file read cannot be compiled and read back: \(error)")
        }
    }

    /// Whatever a damaged or hostile compiled blob holds, it is refused or read whole: then its
    /// decisions are deterministic, made in the blob as on the structures read from it, every
    /// campaign can be read, every assigned variation's flags too, and compiling it again gives a
    /// blob that decides the same.
    static func compiledBucketing(_ input: Data) throws(Violation) -> Outcome {
        let signed = CompiledBucketingFile.withChecksum(Array(input))
        // Checked in order, and in parts side by side as a start on a large file checks it: the
        // same answer, and the same reason for a refusal.
        let inOrder = Result { () throws(CompiledBucketingFile.Unusable) in try CompiledBucketingFile.file(from: signed, parts: 1) }
        let inParts = Result { () throws(CompiledBucketingFile.Unusable) in try CompiledBucketingFile.file(from: signed, parts: 3) }
        switch (inOrder, inParts) {
        case (.failure(let one), .failure(let other)):
            try check(one == other, "refused in order (\(one)) and in parts (\(other)) for different reasons")
            return .refused
        case (.success, .success): break
        default: throw Violation(description: "checked in order: \(inOrder); in parts: \(inParts)")
        }
        guard case .success(let file) = inOrder else { return .refused }
        let context: [String: FSJSONValue] = ["plan": .string("pro"), "age": .int(30)]
        let decision = file.decide(visitorId: "visitor-1", context: context, history: [:])
        try check(decision == file.decide(visitorId: "visitor-1", context: context, history: [:]),
                  "two decisions for the same visitor differ")
        try check(file.campaigns.count == file.campaignCount, "a blob read whole whose campaigns cannot all be read")
        try check(decision == file.decideFromCampaigns(visitorId: "visitor-1", context: context, history: [:]),
                  "decided in the blob otherwise than on its structures")
        let remembered = file.campaigns.first?.variationGroups.first.map { [$0.id: $0.variations.last?.id ?? "gone"] } ?? [:]
        try check(file.decide(visitorId: "visitor-2", context: context, history: remembered)
                    == file.decideFromCampaigns(visitorId: "visitor-2", context: context, history: remembered),
                  "decided in the blob otherwise than on its structures, with a history")
        try check(decision.campaigns.count <= file.campaignCount, "more campaigns assigned than the file has")
        _ = decision.flags
        let again = try recompiled(file)
        try check(again.decide(visitorId: "visitor-1", context: ["plan": .string("pro"), "age": .int(30)], history: [:]) == decision,
                  "compiled again, the file decides otherwise")
        return .accepted
    }
}
