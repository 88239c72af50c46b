import Foundation

// A visitor's exposures: the activate a flag read reports, once per variation for the instance and,
// deduplicated, once per variation and visitor within the exposure window (`FSDeduplication`).
extension FSVisitor {
    /// Reports that the visitor saw `entry`: one activate per variation group and variation
    /// for this visitor instance, then `onVisitorExposed` once it is delivered.
    /// `defaultValue` is made only for an `onVisitorExposed` callback.
    func expose(_ entry: FlagEntry, defaultValue: () -> FSJSONValue) {
        guard let runtime else {
            logger.error("Exposure of flag '\(entry.key)' not sent: \(FlagshipError.sdkNotInitialized)")
            return
        }
        guard runtime.status != .SDK_PANIC else { return }
        let metadata = entry.metadata
        let wantsCallback = runtime.config.onVisitorExposed != nil
        let deduplication = runtime.config.deduplication
        let now = runtime.config.now().unixMilliseconds
        let outcome = withState { state -> ExposureOutcome in
            guard state.hasConsented else { return .none }
            guard state.recordExposure(of: entry) else { return .none }
            var document: VisitorCacheDocument?
            if deduplication.isEnabled {
                if state.reported.exposed(variationGroupId: metadata.variationGroupId, variationId: metadata.variationId,
                                          within: deduplication.exposureWindow, now: now) {
                    return .deduplicated
                }
                // Recorded now, written with the document: the platform is told once per window.
                // What was reported changed: the document differs from the stored one, no need to compare.
                state.reported.exposures[metadata.variationGroupId] = ReportedFacts.Exposure(variationId: metadata.variationId, sentAt: now)
                let updated = state.cacheDocument
                state.storedDocument = updated
                document = updated
            }
            var activate = OutgoingHit.activate(identity: state.identity, variationGroupId: metadata.variationGroupId,
                                                variationId: metadata.variationId, createdAt: now)
            if let provenance = state.decidedWith {
                activate.fileVersion = provenance.fileVersion
                activate.decidedAt = provenance.decidedAt
            }
            let exposed = wantsCallback ? FSVisitorExposed(id: state.visitorId, anonymousId: state.anonymousId, context: state.context) : nil
            let fromFile = state.decidedBy == .bucketingFile || state.decidedBy == .bootstrap
                || (state.decidedBy == .cache && runtime.config.mode == .BUCKETING)
            return .send(activate, exposed, document.map { ($0, fromFile) })
        }
        let prepared: (activate: OutgoingHit, exposed: FSVisitorExposed?)
        switch outcome {
        case .none:
            return
        case .deduplicated:
            runtime.config.instrumentation?.hitsDeduplicated(kind: .activate, count: 1)
            return
        case .send(let activate, let exposed, let document):
            prepared = (activate, exposed)
            if let (document, fromFile) = document { runtime.cacheVisitor(document, fromFile: fromFile) }
        }
        if let refusal = prepared.activate.identityRefusal {
            logger.error("Exposure of flag '\(entry.key)' not sent: \(refusal)")
            return
        }
        let callback = runtime.config.onVisitorExposed.flatMap { callback -> (@Sendable () -> Void)? in
            guard let exposed = prepared.exposed else { return nil }
            let flag = FSExposedFlag(key: entry.key, value: entry.value, defaultValue: defaultValue(), metadata: metadata)
            let queue = runtime.callbacks
            return { @Sendable in queue.async { callback(exposed, flag) } }
        }
        runtime.tracking.track(prepared.activate, onDelivered: callback)
    }

    private enum ExposureOutcome {
        /// Nothing to report: no consent, or this instance reported it already.
        case none
        /// The store records the activate as sent within the exposure window.
        case deduplicated
        /// The activate to send, the callback's visitor, and the document recording it (with
        /// whether its campaigns come from a bucketing file).
        case send(OutgoingHit, FSVisitorExposed?, (VisitorCacheDocument, Bool)?)
    }
}
