import Foundation

/// The caches the SDK uses for visitors and unsent hits, and how long it waits for their lookups.
///
/// A `nil` cache means the default one: a table of the environment's SQLite database
/// (`FSDefaultCacheVisitor`, `FSDefaultCacheHit`).
///
/// ```swift
/// let caches = FSCacheManager(MyVisitorCache(), nil, visitorLookupTimeOut: 0.1)
/// ```
///
/// The manager confines each cache it is given at `init`: the SDK calls a cache only on the serial
/// queue the manager made for it, one call at a time, never from two threads at once, and a
/// manager made from another (`FSCacheManager(otherManager)`) shares that queue. The caches
/// themselves are not kept where other code could reach them.
public final class FSCacheManager: Sendable {
    /// The custom visitor cache, confined to its queue; `nil`: the default.
    let visitorCache: ConfinedDelegate<any FSVisitorCacheDelegate>?
    /// The custom hit cache, confined to its queue; `nil`: the default.
    let hitCache: ConfinedDelegate<any FSHitCacheDelegate>?
    /// Seconds (`TimeInterval`) a visitor lookup may take before the SDK goes on without it.
    public let visitorLookupTimeOut: TimeInterval
    /// Seconds (`TimeInterval`) a hit lookup may take before the SDK goes on without it.
    public let hitCacheLookupTimeout: TimeInterval

    /// - Parameters:
    ///   - visitorCacheImp: the visitor cache; `nil`: the default one (the SQLite store).
    ///   - hitCacheImp: the hit cache; `nil`: the default one (the SQLite store).
    ///   - visitorLookupTimeOut: in seconds, as every `TimeInterval`: the default 0.2 is 200 ms.
    ///   - hitCacheLookupTimeout: in seconds, default 0.2 (200 ms).
    public convenience init(
        _ visitorCacheImp: (any FSVisitorCacheDelegate)? = nil,
        _ hitCacheImp: (any FSHitCacheDelegate)? = nil,
        visitorLookupTimeOut: TimeInterval = 0.2,
        hitCacheLookupTimeout: TimeInterval = 0.2
    ) {
        self.init(visitorCache: visitorCacheImp.map { ConfinedDelegate($0, label: "io.flagship.cache.visitors") },
                  hitCache: hitCacheImp.map { ConfinedDelegate($0, label: "io.flagship.cache.hits") },
                  visitorLookupTimeOut: visitorLookupTimeOut, hitCacheLookupTimeout: hitCacheLookupTimeout)
    }

    /// The caches and lookup timeouts of `cacheManager`, its caches on the same queues: the
    /// reference's start example wraps a custom cache manager so,
    /// `withCacheManager(FSCacheManager(customCacheManager))`.
    public convenience init(_ cacheManager: FSCacheManager) {
        self.init(visitorCache: cacheManager.visitorCache, hitCache: cacheManager.hitCache,
                  visitorLookupTimeOut: cacheManager.visitorLookupTimeOut,
                  hitCacheLookupTimeout: cacheManager.hitCacheLookupTimeout)
    }

    private init(visitorCache: ConfinedDelegate<any FSVisitorCacheDelegate>?, hitCache: ConfinedDelegate<any FSHitCacheDelegate>?,
                 visitorLookupTimeOut: TimeInterval, hitCacheLookupTimeout: TimeInterval) {
        self.visitorCache = visitorCache
        self.hitCache = hitCache
        self.visitorLookupTimeOut = Self.sane(visitorLookupTimeOut)
        self.hitCacheLookupTimeout = Self.sane(hitCacheLookupTimeout)
    }

    /// A negative or non-finite timeout would never, or always, fire: use the default instead.
    private static func sane(_ timeout: TimeInterval) -> TimeInterval {
        timeout.isFinite && timeout >= 0 ? timeout : 0.2
    }
}
