import FlagshipStore
import Foundation
import Logging

/// A fetch of the visitor's flags, in steps: the request, the decision (and its failure), the
/// decision applied to the visitor's state, and what follows it (a SEGMENT hit, the document
/// for the visitor cache).
extension FSVisitor {
    /// Fetches the visitor's flags: from the Decision API, or in bucketing mode decided on this
    /// machine from the bucketing file (then reported with a SEGMENT hit).
    ///
    /// `FETCHING`, then `FETCHED` (flags replaced, visitor cache written), `PANIC`, or, on a
    /// failure or timeout, `FETCH_REQUIRED` + `FETCH_ERROR` with the previous flags kept and
    /// `FlagshipError.fetchFailed` thrown.
    ///
    /// A failure is logged too, whoever catches it (`try?` swallows it): one warning when fetches
    /// start failing, one for each other kind of failure while they fail (a refused key after a
    /// timeout), and one when a fetch succeeds again; each failure between is a debug line.
    public func fetchFlags() async throws {
        guard let runtime, runtime.status != .SDK_NOT_INITIALIZED else {
            throw FlagshipError.sdkNotInitialized
        }
        try await readStoredHistoryIfUnread(runtime)
        let (generation, request) = withState { state -> (Int, DecisionRequest) in
            state.fetchGeneration += 1
            return (state.fetchGeneration, DecisionRequest(
                visitorId: state.visitorId, anonymousId: state.anonymousId,
                context: state.context.merging(Self.clientContext) { _, sdk in sdk },
                hasConsented: state.hasConsented, assignmentsHistory: state.assignmentsHistory))
        }
        setFetch(.FETCHING, .NONE, ifGeneration: generation)
        let response = try await decide(request, generation: generation, runtime: runtime)
        if response.panic {
            logger.warning("The Decision API says panic: flags give their defaults, nothing is sent")
            runtime.setStatus(.SDK_PANIC)
            setFetch(.PANIC, .NONE, ifGeneration: generation)
            return
        }
        if runtime.status == .SDK_PANIC { runtime.setStatus(.SDK_INITIALIZED) }
        let fetched = Fetched(request: request, response: response, watched: flagWatchers.hasListeners, runtime: runtime)
        // An answer to an older fetch than the latest is dropped: the latest one decides.
        guard let outcome = apply(fetched, generation: generation, runtime: runtime) else { return }
        if !outcome.changes.isEmpty { flagWatchers.yield(outcome.changes) }
        if fetched.segmentDigest != nil, !outcome.segment { runtime.config.instrumentation?.hitsDeduplicated(kind: .segment, count: 1) }
        setFetch(.FETCHED, .NONE, ifGeneration: generation)
        logger.debug("Flags of visitor '\(request.visitorId)' fetched: \(response.campaigns.count) campaign(s)")
        if outcome.segment { sendSegment(context: request.context, runtime: runtime) }
        // Written by the next group commit, with the hits: the flags are in memory already.
        if let document = outcome.document {
            // Encoded here, out of the visitor's lock.
            let decisions = Self.decisionRecords(outcome.decided, visitorId: document.visitorId, context: request.context,
                                                 at: fetched.decidedAt, by: fetched.decidedBy, fileVersion: response.fileVersion)
            runtime.cacheVisitor(document, decisions: decisions,
                                 fromFile: fetched.decidedBy == .bucketingFile || fetched.decidedBy == .bootstrap)
        }
    }

    /// The decision for `request` (traced as `flagship.fetchFlags`), its failure logged,
    /// measured, and thrown as `FlagshipError.fetchFailed` with the visitor's fetch status set.
    private func decide(_ request: DecisionRequest, generation: Int, runtime: SDKRuntime) async throws -> DecisionResponse {
        let started = ContinuousClock.now
        let source: FSDecisionSource = runtime.config.mode == .BUCKETING ? .bucketing : .decisionAPI
        let response: DecisionResponse
        do {
            response = try await traced(runtime.config.tracer, "flagship.fetchFlags",
                                        attributes: ["flagship.env_id": runtime.envId, "flagship.decision_source": source.rawValue]) { span in
                let response = try await runtime.decider.decide(request)
                span?.setAttribute("flagship.outcome", response.panic ? FSFetchOutcome.panic.rawValue : FSFetchOutcome.success.rawValue)
                span?.setAttribute("flagship.campaigns", String(response.campaigns.count))
                return response
            }
        } catch {
            runtime.config.instrumentation?.fetchEnded(.failure, source: source, duration: ContinuousClock.now - started)
            let failure = (error as? DecisionError).map(FSFetchFailure.init) ?? error as? FSFetchFailure
                ?? .transport(String(describing: error))
            // Thrown and logged: `try? await fetchFlags()` must not make a wrong key or URL look
            // like success. Bounded: a storm of failing fetches says it once per kind of failure.
            let reason = failure.description
            runtime.fetchOutage.failed(
                cause: failure.causeKey,
                started: { _ in "Flags cannot be fetched (\(reason)): visitors keep their previous flags; said again once a fetch succeeds" },
                retrying: { failures in "A visitor's flags were not fetched (\(reason)) (failure \(failures) in a row)" },
                metadata: logger.visitorMetadata(request.visitorId))
            setFetch(.FETCH_REQUIRED, .FETCH_ERROR, ifGeneration: generation)
            throw FlagshipError.fetchFailed(failure)
        }
        runtime.fetchOutage.succeeded { failures, seconds in
            "Flags are fetched again, after \(failures) failed fetch(es) over \(seconds) s"
        }
        for skipped in response.skippedCampaigns + response.droppedFlags {
            logger.warning("Decision for a visitor: \(skipped)", metadata: logger.visitorMetadata(request.visitorId))
        }
        runtime.config.instrumentation?.fetchEnded(response.panic ? .panic : .success, source: source,
                                                    duration: ContinuousClock.now - started)
        return response
    }

    /// A decision made, and what applying it needs to know beside it.
    private struct Fetched {
        let request: DecisionRequest
        let response: DecisionResponse
        let decidedBy: FSFlagSource
        let decidedAt: Int64
        /// Flag changes are computed only for a visitor someone watches (`flagChanges()`).
        let watched: Bool
        let recordsDecisions: Bool
        /// Bucketing mode: the platform never saw a request, so it learns the context from a
        /// SEGMENT hit; deduplicated, only when the context differs from the last one sent.
        let segmentDigest: String?
        let reportsSegment: Bool

        init(request: DecisionRequest, response: DecisionResponse, watched: Bool, runtime: SDKRuntime) {
            self.request = request
            self.response = response
            decidedBy = runtime.config.mode != .BUCKETING ? .decisionAPI
                : runtime.bucketing?.decidesOnBootstrap == true ? .bootstrap : .bucketingFile
            decidedAt = runtime.config.now().unixMilliseconds
            recordsDecisions = runtime.config.recordsDecisions
            reportsSegment = runtime.decider.reportsSegment
            segmentDigest = reportsSegment && request.hasConsented && runtime.config.deduplication.isEnabled
                ? runtime.contextDigests.digest(of: request.context, visitorId: request.visitorId) : nil
            self.watched = watched
        }
    }

    /// What applying a decision changed, for what follows it.
    private struct Applied {
        /// The document to write to the visitor cache; `nil`: nothing changed (or no consent).
        let document: VisitorCacheDocument?
        let changes: [FSFlagValueChange]
        /// The assignments this fetch made: a variation group the history did not hold, or held
        /// with another variation.
        let decided: [AssignedCampaign]
        /// Whether a SEGMENT hit reports the context.
        let segment: Bool
    }

    /// Applies the decision to the visitor's state, unless a later fetch started meanwhile
    /// (`nil`: the latest one decides). A returning visitor decided as the store remembers it is
    /// not written again: no new assignment, the same document (context, campaigns, history,
    /// what was reported).
    private func apply(_ fetched: Fetched, generation: Int, runtime: SDKRuntime) -> Applied? {
        let response = fetched.response
        return withState { state -> Applied? in
            guard generation == state.fetchGeneration else { return nil }
            var segment = fetched.reportsSegment && fetched.request.hasConsented
            if segment, let digest = fetched.segmentDigest, state.hasConsented {
                segment = state.reported.contextDigest != digest
                state.reported.contextDigest = digest
            }
            let before = fetched.watched ? state.flags.mapValues(\.value) : [:]
            let decided = fetched.recordsDecisions && state.hasConsented
                ? response.campaigns.filter { state.assignmentsHistory[$0.variationGroupId] != $0.variationId } : []
            state.assignDecision(response.campaigns)
            state.decidedBy = fetched.decidedBy
            state.decidedWith = fetched.recordsDecisions
                ? VisitorState.Provenance(fileVersion: response.fileVersion, decidedAt: fetched.decidedAt) : nil
            let changes = fetched.watched ? Self.changes(from: before, to: state.flags.mapValues(\.value)) : []
            guard state.hasConsented else { return Applied(document: nil, changes: changes, decided: decided, segment: segment) }
            let document = state.cacheDocument
            if decided.isEmpty, document == state.storedDocument {
                return Applied(document: nil, changes: changes, decided: decided, segment: segment)
            }
            state.storedDocument = document
            return Applied(document: document, changes: changes, decided: decided, segment: segment)
        }
    }

    /// The SEGMENT hit that reports the visitor's context (bucketing mode).
    private func sendSegment(context: [String: FSJSONValue], runtime: SDKRuntime) {
        let segment = outgoingHit(type: FSTypeTrack.SEGMENT.rawValue, fields: SDKHit.segment(context: context), runtime: runtime)
        if let refusal = segment.identityRefusal {
            logger.error("Segment hit not sent: \(refusal)")
        } else {
            runtime.tracking.track(segment)
        }
    }

    /// The store's rows for the assignments a fetch made (decision provenance).
    private static func decisionRecords(_ campaigns: [AssignedCampaign], visitorId: String, context: [String: FSJSONValue],
                                        at decidedAt: Int64, by source: FSFlagSource, fileVersion: String?) -> [DecisionRecord] {
        guard !campaigns.isEmpty else { return [] }
        let contextText = FSJSONValue.object(context).jsonString()
        // Only a file's variations are shared (see `CacheService.cacheVisitor`).
        let split = source == .bucketingFile || source == .bootstrap ? VisitorCacheDocument.splitPreset(context, asDecisionContext: true) : nil
        let recordSource: DecisionRecord.Source = switch source {
        case .decisionAPI: .decisionAPI
        case .bootstrap: .bootstrap
        case .bucketingFile, .cache: .bucketingFile
        }
        return campaigns.map { campaign in
            DecisionRecord(visitorId: visitorId, decidedAt: decidedAt, campaignId: campaign.campaignId,
                           variationGroupId: campaign.variationGroupId, variationId: campaign.variationId,
                           source: recordSource, reason: FSFlagReason.decided(by: source, isSplit: campaign.type == "ab").rawValue,
                           fileVersion: source == .decisionAPI ? nil : fileVersion, context: contextText,
                           flags: FSJSONValue.object(campaign.flags).jsonString(),
                           shared: split.map { SharedDecisionParts(variation: campaign.variationText(), context: $0.rest, preset: $0.preset) })
        }
    }

    /// The flags whose values differ, by key.
    private static func changes(from before: [String: FSJSONValue], to after: [String: FSJSONValue]) -> [FSFlagValueChange] {
        Set(before.keys).union(after.keys).sorted().compactMap { key in
            before[key] == after[key] ? nil : FSFlagValueChange(key: key, oldRawValue: before[key], newRawValue: after[key])
        }
    }

    /// The store could not be read in time when the visitor was built: it is read now, before
    /// any decision, so that a returning visitor keeps its variations. Still unreadable: the
    /// fetch fails, and nothing is decided or written.
    private func readStoredHistoryIfUnread(_ runtime: SDKRuntime) async throws {
        guard withState({ $0.storedHistoryUnread }), let caches = runtime.caches else { return }
        let lookup = await caches.lookupVisitor(visitorId)
        if case .unavailable = lookup {
            setFetch(.FETCH_REQUIRED, .FETCH_ERROR, ifGeneration: withState { $0.fetchGeneration })
            throw FlagshipError.fetchFailed(.storeUnavailable(after: caches.readBound))
        }
        withState { state in
            guard state.storedHistoryUnread else { return }
            state.storedHistoryUnread = false
            switch lookup {
            case .found(let document):
                // Only what the store remembers: flags read meanwhile stay as they are until this fetch.
                state.assignmentsHistory.merge(document.assignmentsHistory) { current, _ in current }
                state.storedDocument = document
                if runtime.config.deduplication.isEnabled {
                    // What this instance reported meanwhile stays; the rest is what the store records.
                    var reported = document.reported
                    reported.consent = state.reported.consent ?? reported.consent
                    reported.contextDigest = state.reported.contextDigest ?? reported.contextDigest
                    reported.exposures.merge(state.reported.exposures) { _, mine in mine }
                    state.reported = reported
                }
            case .rejected:
                state.cachedDecisionUnreadable = true
            case .notFound, .timedOut, .unavailable:
                break
            }
        }
    }
}
