import Foundation

// A visitor's consent and identity: `setConsent` (its hit, and the erasure of a withdrawal), and
// experience continuity (`authenticate`, `unauthenticate`).
extension FSVisitor {
    // MARK: Consent

    /// Records the visitor's consent and sends the consent hit. Without consent no activate and
    /// no hit but the consent hit are sent, and the visitor's cached data is deleted (its
    /// consent hits kept) until consent returns.
    public func setConsent(hasConsented: Bool) {
        let identity = withState { state in
            state.hasConsented = hasConsented
            // Withdrawn: the stored document is erased, so the next fetch with consent writes it,
            // and what the platform was told is forgotten with it: a new consent is reported again.
            if !hasConsented {
                state.storedDocument = nil
                state.reported = ReportedFacts()
            }
            return state.identity
        }
        sendConsentHit(hasConsented)
        guard !hasConsented else { return }
        // The same person under both ids while authenticated: what was cached as the anonymous
        // visitor goes too.
        for id in [identity.visitorId, identity.anonymousId].compactMap({ $0 }) {
            runtime?.purgeVisitor(id)
        }
    }

    func sendConsentHit(_ hasConsented: Bool) {
        guard let runtime, runtime.status != .SDK_PANIC, runtime.status != .SDK_NOT_INITIALIZED else { return }
        // A consent the store records as received is not sent again, nor even made: a returning
        // visitor's request costs no hit. A withdrawal always is (on a fleet another instance may
        // have reported a consent since: missing it costs more).
        var marked = false
        if hasConsented, runtime.config.deduplication.isEnabled {
            let told = withState { state -> Bool in
                guard state.hasConsented else { return false }
                if state.reported.consent == true { return true }
                state.reported.consent = true
                marked = true
                return false
            }
            if told {
                runtime.config.instrumentation?.hitsDeduplicated(kind: .consent, count: 1)
                return
            }
        }
        let hit = outgoingHit(type: "EVENT", fields: SDKHit.consent(hasConsented: hasConsented, clientName: SDKInfo.clientName), runtime: runtime)
        if let refusal = hit.identityRefusal {
            // Not sent, so not reported.
            if marked { withState { $0.reported.consent = nil } }
            logger.error("Consent hit not sent: \(refusal)")
            return
        }
        runtime.tracking.track(hit)
    }

    // MARK: Experience continuity

    /// The visitor logged in as `visitorId`: its current id becomes the anonymous id.
    public func authenticate(visitorId newVisitorId: String) {
        guard !newVisitorId.isEmpty else {
            logger.error("authenticate ignored: the visitor id is empty")
            return
        }
        guard continuityAllowed(action: "authenticate") else { return }
        requireFetch(.AUTHENTICATE) { state in
            if state.anonymousId == nil { state.anonymousId = state.visitorId }
            state.visitorId = newVisitorId
            state.forgetReportedExposures()
            // What the platform was told is per visitor id: nothing is known of the new one's.
            state.reported = ReportedFacts()
            return true
        }
    }

    /// The visitor logged out: back to its anonymous id.
    public func unauthenticate() {
        guard continuityAllowed(action: "unauthenticate") else { return }
        var authenticated = true
        requireFetch(.UNAUTHENTICATE) { state in
            guard let anonymousId = state.anonymousId else {
                authenticated = false
                return false
            }
            state.visitorId = anonymousId
            state.anonymousId = nil
            state.forgetReportedExposures()
            state.reported = ReportedFacts()
            return true
        }
        if !authenticated {
            logger.error("unauthenticate ignored: the visitor is not authenticated", metadata: logger.visitorMetadata(visitorId))
        }
    }

    private func continuityAllowed(action: String) -> Bool {
        guard contextChangesAllowed(action: action) else { return false }
        if let decider = runtime?.decider, !decider.allowsExperienceContinuity {
            logger.error("\(action) ignored: experience continuity is not enabled in the bucketing file's account settings")
            return false
        }
        return true
    }
}
