/// A hit: something a visitor did, sent with `FSVisitor.sendHit(_:)`.
///
/// Only the SDK's hits (`FSScreen`, `FSPage`, `FSTransaction`, `FSItem`, `FSEvent`) can be sent; a
/// type of your own that conforms is refused at `sendHit` with an error log, because the SDK would
/// not know its wire fields.
public protocol FSTrackingProtocol: Sendable {
    /// The hit's type on the wire (its `t` field).
    var type: FSTypeTrack { get }
}

/// The wire types of hits (`t`), as the events endpoint and the hit cache spell them.
public enum FSTypeTrack: String, Sendable, CaseIterable {
    case SCREENVIEW
    case PAGEVIEW
    case TRANSACTION
    case ITEM
    case EVENT
    case SEGMENT
    case ACTIVATE
}
