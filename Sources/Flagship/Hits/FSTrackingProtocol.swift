/// A hit: something a visitor did, sent with `FSVisitor.sendHit(_:)`.
///
/// Sealed: only the SDK's hits (`FSScreen`, `FSPage`, `FSTransaction`, `FSItem`, `FSEvent`)
/// conform, because the SDK validates and encodes each one's wire fields itself. A type of yours
/// does not compile as a conformance: it cannot make the `FSHitSeal` the protocol asks for.
public protocol FSTrackingProtocol: Sendable {
    /// The hit's type on the wire (its `t` field).
    var type: FSTypeTrack { get }
    /// What only the SDK's hit types can give: the seal of the protocol.
    var sdkHitSeal: FSHitSeal { get }
}

/// The seal of `FSTrackingProtocol`: made only inside the SDK, so that only its hit types conform.
/// (A conformance that borrows the seal of an SDK hit, or traps instead of returning one, still
/// compiles: `sendHit` refuses such a type at run time too, with an error.)
public struct FSHitSeal: Sendable {
    init() {}
}

/// The wire types of hits (`t`), as the events endpoint and the hit cache spell them.
public enum FSTypeTrack: String, Sendable, CaseIterable {
    /// `FSScreen`.
    case SCREENVIEW
    /// `FSPage`.
    case PAGEVIEW
    /// `FSTransaction`.
    case TRANSACTION
    /// `FSItem`.
    case ITEM
    /// `FSEvent`, and the consent hit the SDK sends itself.
    case EVENT
    /// The visitor's context, sent by the SDK after a fetch in bucketing mode (no Decision API
    /// request told the platform of it).
    case SEGMENT
    /// An exposure, sent by the SDK to the activate endpoint.
    case ACTIVATE
}
