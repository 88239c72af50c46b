/// Every row a store holds for one visitor: its document, its decisions and its waiting hits,
/// read in one transaction (`Connection.visitorData(visitorId:)`), for an access request.
package struct VisitorDataRecords: Sendable, Equatable {
    package var visitorId: String
    /// The visitor's row with when it was last seen (unix ms), if the store keeps one.
    package var visitor: VisitorRecord?
    package var lastSeenAt: Int64?
    /// Oldest first.
    package var decisions: [DecisionRecord]
    /// Oldest first, dead letters included.
    package var hits: [HitRecord]
    /// Rows of the visitor that could not be read (a damaged page, a hand edit): skipped, counted.
    package var unreadableRows: Int

    package init(visitorId: String, visitor: VisitorRecord?, lastSeenAt: Int64?, decisions: [DecisionRecord], hits: [HitRecord],
                 unreadableRows: Int) {
        self.visitorId = visitorId
        self.visitor = visitor
        self.lastSeenAt = lastSeenAt
        self.decisions = decisions
        self.hits = hits
        self.unreadableRows = unreadableRows
    }

    /// The answer of a store that holds nothing for `visitorId`.
    package static func nothing(for visitorId: String) -> VisitorDataRecords {
        VisitorDataRecords(visitorId: visitorId, visitor: nil, lastSeenAt: nil, decisions: [], hits: [], unreadableRows: 0)
    }
}

extension VisitorDataRecords {
    /// Adds what another store holds for the same visitor (a fleet's shared store beside this
    /// instance's file): the newer document wins, decisions and hits are listed from both, once.
    package mutating func merge(_ other: VisitorDataRecords) {
        if let theirs = other.visitor, visitor.map({ $0.updatedAt < theirs.updatedAt }) ?? true {
            visitor = theirs
            lastSeenAt = other.lastSeenAt
        }
        decisions = (decisions + other.decisions.filter { !decisions.contains($0) }).sorted { $0.decidedAt < $1.decidedAt }
        let ids = Set(hits.map(\.id))
        hits = (hits + other.hits.filter { !ids.contains($0.id) }).sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        unreadableRows += other.unreadableRows
    }
}

extension Connection {
    /// Everything this store holds for `visitorId`, read in the caller's transaction (one
    /// snapshot). A visitor's row that cannot be read is counted in `unreadableRows`, as are its
    /// decisions and hits that cannot be.
    package func visitorData(visitorId: String) throws -> VisitorDataRecords {
        var unreadableRows = 0
        var visitor: VisitorRecord?
        var lastSeenAt: Int64?
        do {
            if let found = try visitors.visitorAndLastSeen(id: visitorId) {
                visitor = found.record
                lastSeenAt = found.lastSeenAt
            }
        } catch StoreError.unexpectedValue {
            unreadableRows += 1
        }
        var unreadableDecisions: [UnreadableDecision] = []
        let decisions = try self.decisions.decisions(visitorId: visitorId, unreadable: &unreadableDecisions)
        unreadableRows += unreadableDecisions.count
        let hits = try self.hits.hits(visitorId: visitorId, unreadable: &unreadableRows)
        return VisitorDataRecords(visitorId: visitorId, visitor: visitor, lastSeenAt: lastSeenAt, decisions: decisions, hits: hits,
                                  unreadableRows: unreadableRows)
    }
}
