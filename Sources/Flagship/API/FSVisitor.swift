import FlagshipStore
import Foundation
import Logging

/// Told of every change of a visitor's (fetch status, reason), off the caller's thread.
public typealias OnFetchFlagsStatusChanged = @Sendable (_ newStatus: FSFetchStatus, _ reason: FSFetchReasons) -> Void

/// A visitor: its context, its flags and its hits.
///
/// Safe to use from any thread or task. Flag reads are served from memory and never wait for
/// the disk or the network; everything that does runs on the SDK's own queues and tasks.
public final class FSVisitor: Sendable {
    let runtime: SDKRuntime?
    private let onFetchFlagsStatusChanged: OnFetchFlagsStatusChanged?
    // Held only to read or write the state: never across I/O or a callback.
    private let state: Locked<VisitorState>
    /// The listeners of `flagChanges()`.
    let flagWatchers = ChangeBroadcaster<[FSFlagValueChange]>()
    /// The configuration's evaluation hooks and the visitor's; `nil` when there are none.
    let hooks: HookChain?

    init(state: VisitorState, runtime: SDKRuntime?, onFetchFlagsStatusChanged: OnFetchFlagsStatusChanged?, hooks: HookChain? = nil) {
        self.state = Locked(state)
        self.runtime = runtime
        self.onFetchFlagsStatusChanged = onFetchFlagsStatusChanged
        self.hooks = hooks
    }

    func withState<T>(_ body: (inout VisitorState) -> T) -> T {
        state.withLock(body)
    }

    var logger: Logger { runtime?.logger ?? Flagship.fallbackLogger }

    /// The longest visitor id (and anonymous id) the SDK keeps, in UTF-8 bytes: 1,024. The hit and
    /// visitor stores index the id (PostgreSQL refuses an index entry past about 2,700 bytes, which
    /// failed a fleet's whole group commit). A visitor with a longer id still fetches and reads its
    /// flags; its hits are refused (`FlagshipError.invalidHit`, naming `vid` or `cuid`), its
    /// exposures and consent hits are not sent, and it is not cached, each said in the log.
    public static let maximumIdBytes = 1_024

    // MARK: Identity and status

    /// The visitor's id: the one it was built with, or the one given to `authenticate`.
    public var visitorId: String { withState { $0.visitorId } }
    /// The id the visitor had before `authenticate`, while it is authenticated.
    public var anonymousId: String? { withState { $0.anonymousId } }
    /// Whether the visitor consented to tracking (`setConsent(hasConsented:)` changes it).
    public var hasConsented: Bool { withState { $0.hasConsented } }
    /// Where the visitor's flags stand.
    public var fetchStatus: FSFetchStatus { withState { $0.fetchStatus } }
    /// Why the visitor's flags need a fetch; `NONE` when they do not.
    public var requiredFetchReason: FSFetchReasons { withState { $0.fetchReason } }

    /// The SDK status that governs this visitor: not initialized without a runtime.
    var sdkStatus: FSSdkStatus { runtime?.status ?? .SDK_NOT_INITIALIZED }

    private func setFetch(_ status: FSFetchStatus, _ reason: FSFetchReasons, ifGeneration generation: Int? = nil) {
        let changed = withState { state -> Bool in
            if let generation, generation != state.fetchGeneration { return false }
            return state.setFetch(status, reason)
        }
        if changed { notifyFetchStatus(status, reason) }
    }

    /// Applies `change`; when it changed anything, the visitor needs a fetch, for `reason`.
    func requireFetch(_ reason: FSFetchReasons, after change: (inout VisitorState) -> Bool) {
        let changed = withState { state in change(&state) && state.setFetch(.FETCH_REQUIRED, reason) }
        if changed { notifyFetchStatus(.FETCH_REQUIRED, reason) }
    }

    func notifyFetchStatus(_ status: FSFetchStatus, _ reason: FSFetchReasons) {
        guard let callback = onFetchFlagsStatusChanged else { return }
        callbackQueue.async { callback(status, reason) }
    }

    private var callbackQueue: DispatchQueue { runtime?.callbacks ?? Flagship.fallbackCallbacks }

    // MARK: Fetching

    /// Fetches the visitor's flags; `onFetchCompleted` runs once, whatever the outcome, off the
    /// caller's thread. See `fetchFlags() async throws` for what happens.
    ///
    /// Failures are logged as `fetchFlags() async throws` logs them (this form has no error to give).
    public func fetchFlags(onFetchCompleted: @escaping @Sendable () -> Void) {
        let queue = callbackQueue
        Task {
            do {
                try await fetchFlags()
            } catch let error as FlagshipError where error.code == .fetchFailed {
                // Logged by the fetch itself.
            } catch {
                logger.error("fetchFlags ignored: \(error)")
            }
            queue.async(execute: onFetchCompleted)
        }
    }

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
        let response: DecisionResponse
        let started = ContinuousClock.now
        let source: FSDecisionSource = runtime.config.mode == .BUCKETING ? .bucketing : .decisionAPI
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
        if response.panic {
            logger.warning("The Decision API says panic: flags give their defaults, nothing is sent")
            runtime.setStatus(.SDK_PANIC)
            setFetch(.PANIC, .NONE, ifGeneration: generation)
            return
        }
        if runtime.status == .SDK_PANIC { runtime.setStatus(.SDK_INITIALIZED) }
        let decidedBy: FSFlagSource = source == .decisionAPI ? .decisionAPI
            : runtime.bucketing?.decidesOnBootstrap == true ? .bootstrap : .bucketingFile
        // An answer to an older fetch than the latest is dropped: the latest one decides.
        let watched = flagWatchers.hasListeners
        let decidedAt = runtime.config.now().unixMilliseconds
        let recordsDecisions = runtime.config.recordsDecisions
        let deduplicates = runtime.config.deduplication.isEnabled
        // Bucketing mode: the platform never saw a request, so it learns the context from a
        // SEGMENT hit; deduplicated, only when the context differs from the last one sent.
        let segmentDigest = runtime.decider.reportsSegment && request.hasConsented && deduplicates
            ? runtime.contextDigests.digest(of: request.context, visitorId: request.visitorId) : nil
        let outcome = withState { state -> (latest: Bool, document: VisitorCacheDocument?, changes: [FSFlagValueChange],
                                            decided: [AssignedCampaign], segment: Bool) in
            guard generation == state.fetchGeneration else { return (false, nil, [], [], false) }
            var segment = runtime.decider.reportsSegment && request.hasConsented
            if segment, let segmentDigest, state.hasConsented {
                segment = state.reported.contextDigest != segmentDigest
                state.reported.contextDigest = segmentDigest
            }
            let before = watched ? state.flags.mapValues(\.value) : [:]
            // The assignments this fetch made: a variation group the history did not hold, or
            // held with another variation.
            let decided = recordsDecisions && state.hasConsented
                ? response.campaigns.filter { state.assignmentsHistory[$0.variationGroupId] != $0.variationId } : []
            state.assignDecision(response.campaigns)
            state.decidedBy = decidedBy
            state.decidedWith = recordsDecisions ? VisitorState.Provenance(fileVersion: response.fileVersion, decidedAt: decidedAt) : nil
            let changes = watched ? Self.changes(from: before, to: state.flags.mapValues(\.value)) : []
            guard state.hasConsented else { return (true, nil, changes, decided, segment) }
            // A returning visitor decided as the store remembers it is not written again: no
            // new assignment, the same document (context, campaigns, history, what was reported).
            let document = state.cacheDocument
            if decided.isEmpty, document == state.storedDocument { return (true, nil, changes, decided, segment) }
            state.storedDocument = document
            return (true, document, changes, decided, segment)
        }
        guard outcome.latest else { return }
        if !outcome.changes.isEmpty { flagWatchers.yield(outcome.changes) }
        if segmentDigest != nil, !outcome.segment { runtime.config.instrumentation?.hitsDeduplicated(kind: .segment, count: 1) }
        setFetch(.FETCHED, .NONE, ifGeneration: generation)
        logger.debug("Flags of visitor '\(request.visitorId)' fetched: \(response.campaigns.count) campaign(s)")
        if outcome.segment {
            let segment = outgoingHit(type: FSTypeTrack.SEGMENT.rawValue,
                                      fields: SDKHit.segment(context: request.context), runtime: runtime)
            if let refusal = segment.identityRefusal {
                logger.error("Segment hit not sent: \(refusal)")
            } else {
                runtime.tracking.track(segment)
            }
        }
        // Written by the next group commit, with the hits: the flags are in memory already.
        if let document = outcome.document {
            // Encoded here, out of the visitor's lock.
            let decisions = Self.decisionRecords(outcome.decided, visitorId: document.visitorId, context: request.context,
                                                 at: decidedAt, by: decidedBy, fileVersion: response.fileVersion)
            runtime.cacheVisitor(document, decisions: decisions, fromFile: decidedBy == .bucketingFile || decidedBy == .bootstrap)
        }
    }

    /// The store's rows for the assignments a fetch made (decision provenance).
    private static func decisionRecords(_ campaigns: [AssignedCampaign], visitorId: String, context: [String: JSONValue],
                                        at decidedAt: Int64, by source: FSFlagSource, fileVersion: String?) -> [DecisionRecord] {
        guard !campaigns.isEmpty else { return [] }
        let contextText = JSONValue.object(context).jsonString()
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
                           flags: JSONValue.object(campaign.flags).jsonString(),
                           shared: split.map { SharedDecisionParts(variation: campaign.variationText(), context: $0.rest, preset: $0.preset) })
        }
    }

    /// The flags whose values differ, by key.
    private static func changes(from before: [String: JSONValue], to after: [String: JSONValue]) -> [FSFlagValueChange] {
        Set(before.keys).union(after.keys).sorted().compactMap { key in
            before[key] == after[key] ? nil : FSFlagValueChange(key: key, oldRawValue: before[key], newRawValue: after[key])
        }
    }

    /// Sent with every decision request, beside the visitor's own context.
    static let clientContext: [String: JSONValue] = [
        "fs_client": .string(SDKInfo.clientName), "fs_version": .string(SDKInfo.version),
    ]

    // MARK: Flags

    /// The flag of that key; one that does not exist gives its default and reports `NOT_FOUND`.
    public func getFlag(key: String) -> FSFlag {
        FSFlag(key: key, visitor: self)
    }

    /// Every flag the visitor has.
    public func getFlags() -> FSFlagCollection {
        let keys = withState { Array($0.flags.keys) }
        return FSFlagCollection(flags: Dictionary(uniqueKeysWithValues: keys.map { ($0, FSFlag(key: $0, visitor: self)) }), visitor: self)
    }

    /// The flag's entry and the status to report, read together.
    func flagSnapshot(_ key: String) -> (entry: FlagEntry?, status: FSFlagStatus) {
        let sdkStatus = sdkStatus
        return withState { state in
            guard let entry = state.flags[key] else { return (nil, .NOT_FOUND) }
            if sdkStatus == .SDK_PANIC || state.fetchStatus == .PANIC { return (entry, .PANIC) }
            return (entry, state.fetchStatus == .FETCHED ? .FETCHED : .FETCH_REQUIRED)
        }
    }

    /// `FSFlag.value(defaultValue:visitorExposed:)`: the entry and whether its exposure is still
    /// to report, in one pass under the lock (not generic, so nothing is boxed there). Once the
    /// exposure is reported, a read takes no other lock and allocates nothing.
    func readFlag<T>(_ key: String, defaultValue: T?, exposing: Bool) -> T? {
        // With hooks, the details' read: the same value and exposure, and what the hooks are told.
        if hooks != nil { return readFlagDetails(key, defaultValue: defaultValue, exposing: exposing).value }
        let panic = sdkStatus == .SDK_PANIC
        // The value is copied out of the lock, the entry only when its exposure is to be reported:
        // a read that reports nothing retains no more than the value it returns.
        let found = withState { state -> FoundFlag in
            guard !panic, state.fetchStatus != .PANIC, let entry = state.flags[key] else { return .missing }
            return exposing && !state.isExposureReported(entry) ? .toExpose(entry) : .found(entry.value)
        }
        let flagValue: JSONValue
        let toExpose: FlagEntry?
        switch found {
        case .missing: return defaultValue
        case .found(let value): (flagValue, toExpose) = (value, nil)
        case .toExpose(let entry): (flagValue, toExpose) = (entry.value, entry)
        }
        let value: T?
        if flagValue.isNull {
            value = defaultValue
        } else if let converted = FlagValue.convert(flagValue, to: T.self) {
            value = converted
        } else {
            logMismatch(key: key, value: flagValue, expected: T.self)
            return defaultValue
        }
        if let entry = toExpose {
            self.expose(entry, defaultValue: { defaultValue.flatMap { try? JSONValue(any: $0) } ?? .null })
        }
        return value
    }

    private enum FoundFlag {
        case missing
        case found(JSONValue)
        case toExpose(FlagEntry)
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
