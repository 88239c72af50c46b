import Foundation

/// A store for visitors' data (context, assigned campaigns and flags, assignment history),
/// for a custom cache in place of the default SQLite one.
///
/// The SDK calls these methods on a serial queue of its own, one call at a time and never from
/// the caller's thread, so an implementation needs no locking of its own for the SDK's sake.
/// `lookupVisitor` is abandoned after `FSCacheManager.visitorLookupTimeOut`.
public protocol FSVisitorCacheDelegate {
    /// Saves `visitorData` (a visitor cache document, version 1, JSON) for `visitorId`.
    func cacheVisitor(visitorId: String, _ visitorData: Data)
    /// The data last saved for `visitorId`, or `nil`.
    func lookupVisitor(visitorId: String) -> Data?
    /// Deletes what is saved for `visitorId` (for example when consent is withdrawn).
    func flushVisitor(visitorId: String)
}
