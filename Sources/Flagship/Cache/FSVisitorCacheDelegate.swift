import Foundation

/// A store for visitors' data (context, assigned campaigns and flags, assignment history),
/// for a custom cache in place of the default SQLite one.
///
/// The SDK calls these methods from its own background queue, never from the caller's thread,
/// so an implementation must be safe to call from any thread: hence `Sendable`.
/// `lookupVisitor` is abandoned after `FSCacheManager.visitorLookupTimeOut`.
public protocol FSVisitorCacheDelegate: Sendable {
    /// Saves `visitorData` (a visitor cache document, version 1, JSON) for `visitorId`.
    func cacheVisitor(visitorId: String, _ visitorData: Data)
    /// The data last saved for `visitorId`, or `nil`.
    func lookupVisitor(visitorId: String) -> Data?
    /// Deletes what is saved for `visitorId` (for example when consent is withdrawn).
    func flushVisitor(visitorId: String)
}
