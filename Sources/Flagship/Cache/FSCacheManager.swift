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
/// `@unchecked Sendable` although the caches need not be: the manager never changes after `init`,
/// and the SDK calls each cache on one serial queue of its own (`ConfinedDelegate`), never from
/// two threads at once.
public final class FSCacheManager: @unchecked Sendable {
    public let visitorCacheImp: (any FSVisitorCacheDelegate)?
    public let hitCacheImp: (any FSHitCacheDelegate)?
    /// Seconds (`TimeInterval`) a visitor lookup may take before the SDK goes on without it.
    public let visitorLookupTimeOut: TimeInterval
    /// Seconds (`TimeInterval`) a hit lookup may take before the SDK goes on without it.
    public let hitCacheLookupTimeout: TimeInterval

    /// - Parameters:
    ///   - visitorLookupTimeOut: in seconds, as every `TimeInterval`: the default 0.2 is 200 ms.
    ///   - hitCacheLookupTimeout: in seconds, default 0.2 (200 ms).
    public init(
        _ visitorCacheImp: (any FSVisitorCacheDelegate)? = nil,
        _ hitCacheImp: (any FSHitCacheDelegate)? = nil,
        visitorLookupTimeOut: TimeInterval = 0.2,
        hitCacheLookupTimeout: TimeInterval = 0.2
    ) {
        self.visitorCacheImp = visitorCacheImp
        self.hitCacheImp = hitCacheImp
        self.visitorLookupTimeOut = Self.sane(visitorLookupTimeOut)
        self.hitCacheLookupTimeout = Self.sane(hitCacheLookupTimeout)
    }

    /// A negative or non-finite timeout would never, or always, fire: use the default instead.
    private static func sane(_ timeout: TimeInterval) -> TimeInterval {
        timeout.isFinite && timeout >= 0 ? timeout : 0.2
    }
}
