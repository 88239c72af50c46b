import FlagshipStore
import Foundation
import Logging

/// The writer's state: what waits, where the group commit is, and what was logged.
extension HitWriter {
    /// The group commit's phase. Work that arrives while the writer is idle queues a commit at
    /// once; work that arrives while one writes is queued by it when it ends (`commitEnded`).
    enum GroupCommit: Equatable {
        /// Nothing queued, nothing writing.
        case idle
        /// A group commit is queued on the store queue (at once, or after the spacing) and has
        /// not taken its batch yet: what is accepted meanwhile goes with it.
        case queued
        /// A group commit is writing. `queued`: another is queued already (a barrier or an
        /// interval drained while one was queued); `workArrived`: hits or visitor documents came
        /// since it took its batch, or were left beyond it.
        case writing(queued: Bool, workArrived: Bool)

        /// Work arrived: returns whether a group commit must be queued for it now.
        mutating func workArrives() -> Bool {
            switch self {
            case .idle:
                self = .queued
                return true
            case .queued:
                return false
            case .writing(let queued, _):
                self = .writing(queued: queued, workArrived: true)
                return false
            }
        }

        /// The queued commit runs: it is no longer queued.
        mutating func dequeued() {
            switch self {
            case .idle, .queued: self = .idle
            case .writing(_, let workArrived): self = .writing(queued: false, workArrived: workArrived)
            }
        }

        /// A commit took its batch; `workLeft`: hits are left beyond it.
        mutating func writes(workLeft: Bool) {
            switch self {
            case .idle: self = .writing(queued: false, workArrived: workLeft)
            case .queued: self = .writing(queued: true, workArrived: workLeft)
            case .writing(let queued, _): self = .writing(queued: queued, workArrived: workLeft)
            }
        }

        /// The commit's transaction is over: returns whether the next must be queued now (work
        /// arrived meanwhile, and none is queued).
        mutating func ended() -> Bool {
            guard case .writing(let queued, let workArrived) = self else { return false }
            self = queued || workArrived ? .queued : .idle
            return workArrived && !queued
        }

        var isWriting: Bool {
            if case .writing = self { return true }
            return false
        }
    }

    /// What the writer logs once when it starts, and (for most) once when it ends.
    enum Condition: Hashable {
        /// The cache refuses writes: hits wait in memory.
        case cacheWriteFailing
        /// Deleting expired hits fails.
        case expiryFailing
        /// The wall clock is stepped ahead of the measured time.
        case clockSteppedAhead
        /// Writing visitor documents fails.
        case visitorWritesFailing
        /// Visitor documents go to a file deleted or replaced while open (logged once, never ended).
        case visitorFileGone
    }

    struct State {
        /// Accepted, waiting for the next group commit.
        var ingress = ChunkedQueue<Accepted>()
        /// Hits the group commit under way is writing: neither in the ingress nor yet in the cache.
        var writing = 0
        /// Hits refused since the ingress reached its cap (logged when it starts, told when it ends).
        var refusedAtCap = 0
        /// Where the group commit is: idle, queued, or writing.
        var commit = GroupCommit.idle
        /// A group commit for visitor documents is queued (`scheduleDocumentDrain`), apart from
        /// `commit`: hits arriving meanwhile are not held for it.
        var documentDrainQueued = false
        /// Accepted but not in the cache: the periodic pool, or hits the cache failed to take.
        var unwritten: [OutgoingHit] = []
        /// Ids of unwritten hits being sent, or being written to the cache: taken by one, left by the other.
        var unwrittenInFlight: Set<String> = []
        /// The conditions in force, each logged when it starts and when it ends (or once).
        var conditions: Set<Condition> = []
        /// Hits dropped from memory since the cache began refusing writes, told when it recovers.
        var droppedWhileFailing = 0
        /// Consent withdrawals whose deletion has not run yet, by visitor: how many, and the ids of
        /// the visitor's hits accepted since, which the deletion must spare.
        var purging: [String: (pending: Int, acceptedSince: Set<String>)] = [:]
        /// Erasures that failed (the file locked by another connection, say), to be tried again at
        /// each interval: by visitor, when first recorded (monotonic seconds). Their `purging`
        /// entries stay, so that hits accepted since are spared.
        var erasuresWaiting: [String: TimeInterval] = [:]
        var closed = false
        var counts = Counts()

        /// Records whether `condition` holds now; returns whether that changed.
        mutating func set(_ condition: Condition, _ holds: Bool) -> Bool {
            holds ? conditions.insert(condition).inserted : conditions.remove(condition) != nil
        }
    }
}
