/// A visitor's mutable state, guarded by its `FSVisitor`'s lock.
struct VisitorState: Sendable {
    var visitorId: String
    /// Set while the visitor is authenticated: the id it had before (experience continuity).
    var anonymousId: String?
    var context: [String: JSONValue]
    var hasConsented: Bool
    var campaigns: [AssignedCampaign] = []
    var flags: [String: FlagEntry] = [:]
    /// Variation group id → variation id, kept across fetches.
    var assignmentsHistory: [String: String] = [:]
    var fetchStatus: FSFetchStatus = .FETCH_REQUIRED
    var fetchReason: FSFetchReasons = .VISITOR_CREATE
    /// Incremented by each fetch: an answer to an older fetch than the latest is dropped.
    var fetchGeneration = 0
    /// Variation groups and variations already exposed by this visitor instance.
    var exposures: Set<String> = []

    /// Sets the fetch status; returns whether (status, reason) changed.
    mutating func setFetch(_ status: FSFetchStatus, _ reason: FSFetchReasons) -> Bool {
        guard status != fetchStatus || reason != fetchReason else { return false }
        fetchStatus = status
        fetchReason = reason
        return true
    }

    /// Flags from campaigns (a decision or the cache), later campaigns winning.
    mutating func assign(_ newCampaigns: [AssignedCampaign], history: [String: String] = [:]) {
        campaigns = newCampaigns
        flags = FlagEntry.merge(newCampaigns)
        assignmentsHistory.merge(history) { _, new in new }
        for campaign in newCampaigns {
            assignmentsHistory[campaign.variationGroupId] = campaign.variationId
        }
    }

    /// The visitor cache document of this state.
    var cacheDocument: VisitorCacheDocument {
        VisitorCacheDocument(visitorId: visitorId, anonymousId: anonymousId, consent: hasConsented, context: context,
                             campaigns: campaigns, assignmentsHistory: assignmentsHistory)
    }
}
