/// Visitors looked up and not yet recorded as seen (`visitors.last_seen_at`).
///
/// A returning visitor whose flags come from the cache is read, not written: without this, its
/// row would keep the time of its last write and be pruned as if it had gone. Recording each
/// lookup with a write of its own would cost a transaction per request, so lookups are noted
/// here, at most one per visitor per `resolutionMilliseconds` (the row says when it was last
/// seen), and written in batches: by the SDK's retention task between prunes, and by each
/// prune's batches before they choose what to delete. Owned by the store, whose visitor cache
/// notes lookups and whose prune writes them.
package final class VisitorSightings: Sendable {
    private struct State {
        var seen: [String: Int64] = [:]
        var resolution: Int64 = VisitorSightings.defaultResolutionMilliseconds
        var recording = true
    }

    /// A visitor seen within the last hour is not noted again: last-seen times are exact to the
    /// hour, plenty for a retention counted in days.
    package static let defaultResolutionMilliseconds: Int64 = 3_600_000

    /// Visitors noted at most between two writes (about 10 MB): a store whose sightings nobody
    /// writes (a default visitor cache the app made itself, with no retention task) stops
    /// noting there, and with a retention task, written every minute, no server reaches it.
    package static let capacity = 100_000

    private let state = Locked(State())

    package init() {}

    /// How old a row's last-seen time must be for a lookup to be noted (a retention shorter than
    /// a few hours asks for a finer one).
    package var resolutionMilliseconds: Int64 {
        get { state.withLock { $0.resolution } }
        set { state.withLock { $0.resolution = max(0, newValue) } }
    }

    /// Whether lookups are noted: not where nothing will ever write them (an SDK without a
    /// retention, which runs no task). Their last-seen time is then the last write's.
    package var isRecording: Bool {
        get { state.withLock { $0.recording } }
        set { state.withLock { $0.recording = newValue } }
    }

    /// A lookup at `now` found the visitor, last seen at `lastSeenAt` (unix ms): noted when that
    /// is older than the resolution. Returns whether it was noted.
    @discardableResult
    package func noteLookup(of visitorId: String, lastSeenAt: Int64, now: Int64) -> Bool {
        state.withLock { state in
            guard state.recording, now - lastSeenAt >= state.resolution,
                  state.seen[visitorId] != nil || state.seen.count < Self.capacity else { return false }
            state.seen[visitorId] = max(state.seen[visitorId] ?? now, now)
            return true
        }
    }

    /// What was noted, for one write; noted again (`putBack`) if that write fails.
    package func take() -> [String: Int64] {
        state.withLock { state in
            defer { state.seen = [:] }
            return state.seen
        }
    }

    /// Sightings whose write failed wait for the next one (a later sighting of a visitor wins).
    package func putBack(_ sightings: [String: Int64]) {
        state.withLock { state in
            state.seen.merge(sightings) { max($0, $1) }
        }
    }

    /// How many visitors wait to be recorded as seen.
    package var count: Int {
        state.withLock { $0.seen.count }
    }
}
