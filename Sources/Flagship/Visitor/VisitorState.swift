/// A visitor's mutable state, guarded by its `FSVisitor`'s lock.
struct VisitorState: Sendable {
    var visitorId: String
    /// Set while the visitor is authenticated: the id it had before (experience continuity).
    var anonymousId: String?
    var context: [String: FSJSONValue]
    var hasConsented: Bool
    var campaigns: [AssignedCampaign] = []
    var flags: [String: FlagEntry] = [:]
    /// By `FlagEntry.slot`: the flag's exposure is reported for the current visitor id.
    var exposureReported: [Bool] = []
    /// Variation group id → variation id, kept across fetches.
    var assignmentsHistory: [String: String] = [:]
    var fetchStatus: FSFetchStatus = .FETCH_REQUIRED
    var fetchReason: FSFetchReasons = .VISITOR_CREATE
    /// Where the flags held now were decided: `nil` before any decision or cache read.
    var decidedBy: FSFlagSource?
    /// The bucketing file version and the time of the fetch that decided the flags held now
    /// (decision provenance, recorded with each activate); `nil` for flags read from the cache.
    var decidedWith: Provenance?
    /// The visitor cache held a document for this visitor that could not be read (`build()`).
    var cachedDecisionUnreadable = false
    /// The SDK's own store could not be read in time when the visitor was built: whether it has
    /// an assignment history is unknown, so the next fetch reads it first (`CacheService.VisitorLookup.unavailable`).
    var storedHistoryUnread = false
    /// The visitor's document as the store holds it (read at build, or written by this visitor
    /// since): a fetch that leaves it as it is does not write it again.
    var storedDocument: VisitorCacheDocument?
    /// Incremented by each fetch: an answer to an older fetch than the latest is dropped.
    var fetchGeneration = 0
    /// (visitor id, variation group, variation) already exposed by this visitor instance.
    var exposures: Set<Exposure> = []
    /// What the platform was told about the visitor, as the store recorded it when the visitor was
    /// built, and since by this instance: written with the document (`FSDeduplication`).
    var reported = ReportedFacts()

    struct Provenance: Sendable, Equatable {
        /// The sha256 of the bucketing file; `nil` for the Decision API.
        var fileVersion: String?
        /// Unix milliseconds.
        var decidedAt: Int64
    }

    struct Exposure: Hashable, Sendable {
        let visitorId: String
        let variationGroupId: String
        let variationId: String
    }

    /// Records that `entry`'s variation is exposed for the current visitor id; returns whether
    /// it was not yet. Either way the flag read no longer needs to ask.
    mutating func recordExposure(of entry: FlagEntry) -> Bool {
        let exposure = Exposure(visitorId: visitorId, variationGroupId: entry.metadata.variationGroupId,
                                variationId: entry.metadata.variationId)
        let inserted = exposures.insert(exposure).inserted
        if flags[entry.key] === entry, exposureReported.indices.contains(entry.slot) {
            exposureReported[entry.slot] = true
        }
        return inserted
    }

    /// Whether `entry`'s exposure was already reported for the current visitor id: a read that
    /// finds it so needs no exposure work at all.
    func isExposureReported(_ entry: FlagEntry) -> Bool {
        exposureReported.indices.contains(entry.slot) && exposureReported[entry.slot]
    }

    /// The visitor id changed (authenticate, unauthenticate): exposures are per id.
    mutating func forgetReportedExposures() {
        exposureReported = Array(repeating: false, count: exposureReported.count)
    }

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
        exposureReported = Array(repeating: false, count: FlagEntry.slotCount(newCampaigns))
        assignmentsHistory.merge(history) { _, new in new }
        for campaign in newCampaigns {
            assignmentsHistory[campaign.variationGroupId] = campaign.variationId
        }
    }

    /// Flags from a decision: as `assign(_:)`, but a decision that gives the campaigns held now
    /// (a returning visitor decided as its cached document says; only `activated` may differ,
    /// which the document derives from `reported`) keeps the flags already built. Either way no
    /// flag's exposure counts as reported for the new decision.
    mutating func assignDecision(_ newCampaigns: [AssignedCampaign]) {
        guard Self.sameAssignments(campaigns, newCampaigns) else {
            assign(newCampaigns)
            return
        }
        campaigns = newCampaigns
        forgetReportedExposures()
    }

    /// Whether two lists of campaigns assign the same variations with the same flags and metadata,
    /// in the same order, whatever their `activated`.
    static func sameAssignments(_ left: [AssignedCampaign], _ right: [AssignedCampaign]) -> Bool {
        guard left.count == right.count else { return false }
        for (old, new) in zip(left, right) {
            guard old.variationGroupId == new.variationGroupId, old.variationId == new.variationId,
                  old.campaignId == new.campaignId, old.campaignName == new.campaignName,
                  old.variationGroupName == new.variationGroupName, old.variationName == new.variationName,
                  old.isReference == new.isReference, old.type == new.type, old.slug == new.slug,
                  old.flags == new.flags else { return false }
        }
        return true
    }

    /// Who this visitor's hits and activates are about.
    var identity: OutgoingHit.Identity {
        OutgoingHit.Identity(visitorId: visitorId, anonymousId: anonymousId)
    }

    /// The visitor cache document of this state.
    /// Each campaign's `activated` says whether the platform received its activate (recorded in
    /// `reported`; always `false` when nothing is recorded, as the reference writes it).
    var cacheDocument: VisitorCacheDocument {
        var listed = campaigns
        if !reported.exposures.isEmpty {
            for index in listed.indices {
                listed[index].activated = reported.exposures[listed[index].variationGroupId]?.variationId == listed[index].variationId
            }
        }
        var document = VisitorCacheDocument(visitorId: visitorId, anonymousId: anonymousId, consent: hasConsented, context: context,
                                            campaigns: listed, assignmentsHistory: assignmentsHistory)
        document.reported = reported
        return document
    }
}
