import Foundation

/// A store for hits not sent yet, for a custom cache in place of the default SQLite one.
///
/// Keys are hit ids (`<visitorId>:<uuid>`); values are hit cache documents, version 1:
/// `["version": 1, "data": ["visitorId": ..., "anonymousId": ..., "type": ..., "time": ..., "content": [...]]]`.
/// Called on a serial queue of the SDK's, one call at a time, never from the caller's thread.
/// `lookupHits` is abandoned after `FSCacheManager.hitCacheLookupTimeout`.
public protocol FSHitCacheDelegate {
    /// Saves these hits, replacing any saved under the same id.
    func cacheHits(hits: [String: [String: Any]])
    /// Every hit saved.
    func lookupHits() -> [String: [String: Any]]
    /// Deletes the hits with these ids.
    func flushHits(hitIds: [String])
    /// Deletes every hit, without exception.
    func flushAllHits()
}
