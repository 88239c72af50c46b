import Foundation

/// What the SDK tells the platform again about a visitor it has already told
/// (`FSConfigBuilder.withDeduplication`).
///
/// A server builds a visitor for every request. With the reference's behaviour each request of a
/// returning visitor sends its consent hit, a SEGMENT hit (bucketing mode) and an activate for
/// each flag it reads, though the platform already has them. By default the SDK records, in the
/// visitor's document in the store, what the platform was told (the consent, a digest of the
/// context, each variation exposed and when), and sends only what differs:
///
/// - a consent hit when the visitor's consent is not the one recorded (a withdrawal is always
///   sent: on a fleet another instance may have reported consent since, and a withdrawal missed
///   costs more than one repeated);
/// - a SEGMENT hit when the context differs from the last one sent;
/// - an activate once per visitor and variation within `exposureWindow`.
///
/// The record survives restarts and is shared by a fleet's instances through their store; a
/// consent withdrawal erases it with the rest of the visitor's data, so a visitor who consents
/// again is reported again. What is left unsent is counted
/// (`FlagshipInstrumentation.hitsDeduplicated(kind:count:)`). Hits the app sends
/// (`sendHit`) are never deduplicated.
public struct FSDeduplication: Sendable, Equatable, CustomStringConvertible {
    /// Whether consent, SEGMENT and activate hits are compared with what the store records as sent.
    public let isEnabled: Bool
    /// Seconds within which an activate of the same visitor and variation is not sent again.
    public let exposureWindow: TimeInterval

    /// The default: deduplicated, activates once per visitor and variation every 30 minutes.
    ///
    /// Flagship's reports count unique visitors per variation: a second activate of the same
    /// visitor and variation changes no count. 30 minutes is the session the official
    /// TypeScript SDK's hit deduplicator keeps per visitor (it forgets a visitor after 30 minutes
    /// without activity); here the window runs from the last activate sent, so a visitor seen for
    /// hours is reported again every 30 minutes rather than never, and the reported time of its
    /// exposure stays within 30 minutes of the truth.
    public static let standard = FSDeduplication(isEnabled: true, exposureWindow: 30 * 60)

    /// The reference's behaviour, exactly: every build sends the consent hit, every bucketing
    /// fetch a SEGMENT hit, every visitor instance one activate per variation it reads. Nothing
    /// is recorded.
    public static let reference = FSDeduplication(isEnabled: false, exposureWindow: 0)

    /// Deduplicated, activates once per visitor and variation within `seconds`; 0 or less sends
    /// an activate per visitor instance, as the reference does, and deduplicates the rest.
    public static func exposureWindow(_ seconds: TimeInterval) -> FSDeduplication {
        FSDeduplication(isEnabled: true, exposureWindow: seconds.isFinite ? max(0, seconds) : 0)
    }

    private init(isEnabled: Bool, exposureWindow: TimeInterval) {
        self.isEnabled = isEnabled
        self.exposureWindow = exposureWindow
    }

    public var description: String {
        isEnabled ? "deduplicated, activates every \(Int(exposureWindow)) s at most" : "the reference's (nothing deduplicated)"
    }
}
