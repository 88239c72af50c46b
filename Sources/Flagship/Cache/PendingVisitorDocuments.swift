import FlagshipStore
import Foundation

/// Visitor documents accepted for the default visitor cache and not yet committed: one per
/// visitor, the newest. The tracking manager's writer takes them into its next group commit,
/// beside the hits; a lookup reads them meanwhile, so a visitor built again at once finds what
/// its last `fetchFlags` decided.
///
/// A document taken by the writer stays readable until its commit says so (`committed`), and a
/// newer document of the same visitor accepted meanwhile is not lost to that commit.
final class PendingVisitorDocuments: Sendable {
    private struct Entry {
        var document: VisitorCacheDocument
        /// Unix ms: the row's `updated_at`.
        var updatedAt: Int64
        /// Its campaigns come from a bucketing file: the row may share them (`compactParts()`).
        var fromFile: Bool
        /// The assignments decided since the visitor's last committed document: this one's, and
        /// those of the documents it replaced before a commit took them.
        var decisions: [DecisionRecord]
        /// Bumped by each new document of the visitor: a commit removes only what it wrote.
        var version: Int
        /// Taken by a commit under way (then still read by lookups).
        var taken = false
        /// When the visitor's first document not yet taken was accepted: a newer one replacing it
        /// keeps this time, so a visitor whose document keeps changing is written all the same.
        var acceptedAt: ContinuousClock.Instant

        /// The row to write: the document is written out (JSON, compact parts) here, once, when a
        /// commit takes it, however many times it was replaced before.
        var record: VisitorRecord {
            VisitorRecord(visitorId: document.visitorId, anonymousId: document.anonymousId, consent: document.consent,
                          document: document.jsonText(), updatedAt: updatedAt, decisions: decisions,
                          compact: fromFile ? document.compactParts() : nil)
        }
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var nextVersion = 0
    }

    private let state = Locked(State())

    /// Accepts the newest document of a visitor; returns whether a write must be scheduled
    /// (none was waiting for this visitor). The decisions of a document it replaces before any
    /// commit took it are kept: they go with this one. It is written out as JSON only when a
    /// commit takes it, and a lookup meanwhile gets it without parsing anything.
    @discardableResult
    func put(document: VisitorCacheDocument, updatedAt: Int64, decisions: [DecisionRecord], fromFile: Bool) -> Bool {
        state.withLock { state in
            state.nextVersion += 1
            var decisions = decisions
            let replaced = state.entries[document.visitorId]
            let waiting = replaced.map { !$0.taken } ?? false
            if let replaced, waiting, !replaced.decisions.isEmpty {
                decisions = replaced.decisions + decisions
            }
            let acceptedAt = waiting ? replaced?.acceptedAt ?? .now : .now
            state.entries[document.visitorId] = Entry(document: document, updatedAt: updatedAt, fromFile: fromFile, decisions: decisions,
                                                      version: state.nextVersion, acceptedAt: acceptedAt)
            return !waiting
        }
    }

    /// What is waiting and not taken, for one commit: (records, versions to confirm). With
    /// `cutoff`, only what was accepted at or before it, and the documents of `visitorIds`
    /// whatever their age; `youngerLeft` says whether any was left.
    func take(acceptedBy cutoff: ContinuousClock.Instant? = nil, whateverTheAgeOf visitorIds: Set<String> = [])
        -> (taken: [(record: VisitorRecord, version: Int)], youngerLeft: Bool) {
        let chosen = state.withLock { state -> (taken: [(entry: Entry, version: Int)], youngerLeft: Bool) in
            var taken: [(entry: Entry, version: Int)] = []
            var youngerLeft = false
            for (id, entry) in state.entries where !entry.taken {
                if let cutoff, entry.acceptedAt > cutoff, !visitorIds.contains(id) {
                    youngerLeft = true
                    continue
                }
                state.entries[id]?.taken = true
                taken.append((entry, entry.version))
            }
            return (taken, youngerLeft)
        }
        // Written out of the lock: a lookup or a `put` meanwhile does not wait for the JSON.
        let records = chosen.taken.map { (record: $0.entry.record, version: $0.version) }
        return (records.sorted { $0.record.visitorId < $1.record.visitorId }, chosen.youngerLeft)
    }

    /// Everything waiting and not taken, whatever its age.
    func take() -> [(record: VisitorRecord, version: Int)] {
        take(acceptedBy: nil).taken
    }

    /// The commit of `taken` succeeded: each goes, unless a newer document replaced it meanwhile.
    func committed(_ taken: [(record: VisitorRecord, version: Int)]) {
        state.withLock { state in
            for (record, version) in taken where state.entries[record.visitorId]?.version == version {
                state.entries[record.visitorId] = nil
            }
        }
    }

    /// The commit of `taken` failed: they wait again (a newer document of a visitor wins, and
    /// carries the failed one's decisions).
    func putBack(_ taken: [(record: VisitorRecord, version: Int)]) {
        state.withLock { state in
            for (record, version) in taken {
                guard let entry = state.entries[record.visitorId] else { continue }
                if entry.version == version {
                    state.entries[record.visitorId]?.taken = false
                } else if !record.decisions.isEmpty {
                    state.entries[record.visitorId]?.decisions = record.decisions + entry.decisions
                }
            }
        }
    }

    /// The waiting document of `visitorId`, taken or not.
    func document(for visitorId: String) -> VisitorCacheDocument? {
        state.withLock { $0.entries[visitorId]?.document }
    }

    /// Consent withdrawn: the visitor's waiting document is dropped. One a commit under way
    /// already took is written by it, and deleted by the erasure that runs after it.
    func remove(_ visitorId: String) {
        state.withLock { state in
            state.entries[visitorId] = nil
        }
    }

    var isEmpty: Bool {
        state.withLock { $0.entries.values.allSatisfy(\.taken) }
    }

    var count: Int {
        state.withLock { $0.entries.count }
    }
}
