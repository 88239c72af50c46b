import FlagshipStore
import Foundation
import Logging

// A visitor's hits: the reference's `sendHit`, its awaited and fire-and-forget forms, and the hit
// for the app's own transaction. (`FSVisitor.swift` holds the visitor's state, fetch, flags,
// context and consent.)
extension FSVisitor {
    /// Sends a hit: it joins the pool at once and is written to the hit cache in the background
    /// (the next group commit). A refused one (invalid, no consent, panic, not initialized) is
    /// logged. Never waits for the disk or the network.
    ///
    /// Refused in asynchronous code, as `build()` is: top-level code in a `main.swift` that
    /// awaits is type-checked as synchronous, so there `try await visitor.sendHit(hit)` would pick
    /// this form and silently neither wait for the commit nor throw a refusal. There, write
    /// `try await visitor.sendHit(hit, until: .strategyDefault)` (or `.committed`), or
    /// `visitor.sendHitInBackground(hit)`; in an `async` function `try await visitor.sendHit(hit)`
    /// is the awaited form.
    @available(*, noasync, message: "in async code (top-level code that awaits included) this would neither wait nor throw: write 'try await visitor.sendHit(hit, until: .strategyDefault)', or 'visitor.sendHitInBackground(hit)' for fire-and-forget")
    public func sendHit<T: FSTrackingProtocol>(_ event: T) {
        sendHitInBackground(event)
    }

    /// The fire-and-forget `sendHit(_:)`, by a name async code can call: there, `sendHit(_:)`
    /// is the `async` form, which waits for the commit. Returns at once; the hit is written by
    /// the next group commit and sent in the background. Nothing waits: when the hit cache is far
    /// behind (`TrackingManager.Settings.ingressCap` hits wait for it), the hit is dropped and
    /// counted as lost, where `try await sendHit` would wait.
    ///
    /// ```swift
    /// visitor.sendHitInBackground(FSScreen("checkout"))
    /// ```
    public func sendHitInBackground<T: FSTrackingProtocol>(_ event: T) {
        do {
            let (hit, tracking) = try prepareHit(event)
            tracking.track(hit)
        } catch {
            logger.error("Hit not sent: \(error)")
        }
    }

    /// Sends a hit and returns once the caching strategy has it:
    ///
    /// - `CONTINUOUS_CACHING`: once it is committed to the hit cache (in one group commit with
    ///   the hits sent at the same time). It then survives a crash and is sent after a restart.
    /// - `PERIODIC_CACHING`: once it is in the in-memory pool, which is written to the cache at
    ///   the next batch interval and at `close()`: a crash before then loses it. To wait for the
    ///   commit under this strategy too, use `sendHit(_:until: .committed)`.
    ///
    /// Throws why it was refused (an invalid hit names the field), or
    /// `FlagshipError.hitNotCached` when the cache could not take it (it is still sent from memory).
    public func sendHit<T: FSTrackingProtocol>(_ event: T) async throws {
        try await sendHit(event, until: .strategyDefault)
    }

    /// Sends a hit and returns once `acknowledgement` holds. With `.committed` the hit is
    /// written to the hit cache at once under either strategy (periodic caching included) and
    /// this returns after the commit: an acknowledged hit survives `kill -9`.
    ///
    /// ```swift
    /// try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "checkout"), until: .committed)
    /// ```
    public func sendHit<T: FSTrackingProtocol>(_ event: T, until acknowledgement: FSHitAcknowledgement) async throws {
        let (hit, tracking) = try prepareHit(event)
        try await tracking.trackDurably(hit, committed: acknowledgement == .committed)
    }

    /// A hit to write in the app's own transaction: refused as `sendHit` refuses it, before
    /// anything is written.
    package func hitForTransaction(_ event: some FSTrackingProtocol) throws(FlagshipError) -> HitForTransaction {
        let (hit, tracking) = try prepareHit(event)
        guard let runtime else { throw .sdkNotInitialized }
        let now = runtime.config.now
        return HitForTransaction(hit: hit, queue: tracking.hitQueue, envId: runtime.envId, sharedStore: runtime.config.sharedStore,
                                 now: { now().unixMilliseconds }, tracking: tracking)
    }

    func prepareHit(_ event: some FSTrackingProtocol) throws(FlagshipError) -> (OutgoingHit, TrackingManager) {
        guard let runtime, runtime.status != .SDK_NOT_INITIALIZED else { throw .sdkNotInitialized }
        guard runtime.status != .SDK_PANIC else { throw .panic }
        let encoded: (type: FSTypeTrack, fields: [String: FSJSONValue])
        do {
            encoded = try encodedForSending(event)
        } catch {
            throw .invalidHit(error)
        }
        guard hasConsented else { throw .consentNotGiven(visitorId: visitorId) }
        let hit = outgoingHit(type: encoded.type.rawValue, fields: encoded.fields, runtime: runtime)
        if let refusal = hit.identityRefusal { throw .invalidHit(refusal) }
        return (hit, runtime.tracking)
    }

    /// A hit of this visitor, as it is now, in this environment.
    func outgoingHit(type: String, fields: [String: FSJSONValue], runtime: SDKRuntime) -> OutgoingHit {
        let identity = withState { $0.identity }
        return OutgoingHit.hit(type: type, fields: fields, identity: identity, envId: runtime.envId,
                               createdAt: runtime.config.now().unixMilliseconds)
    }
}
