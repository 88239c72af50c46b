import Dispatch
import FlagshipStore
import Foundation
import Logging

/// The SDK's side of the caches: the custom delegates of an `FSCacheManager`, or the SQLite
/// defaults, called off the caller's thread, with lookups bounded by the manager's timeouts.
///
/// Calls to one cache run in order on its own serial queue, so a lookup sees every write made
/// before it. A lookup that overruns its timeout is abandoned: the SDK goes on without it, and
/// its late answer is dropped.
final class CacheService: Sendable {
    let visitorCache: any FSVisitorCacheDelegate
    let hitCache: any FSHitCacheDelegate
    let visitorLookupTimeout: TimeInterval
    let hitLookupTimeout: TimeInterval
    private let logger: Logger
    private let visitorQueue = DispatchQueue(label: "io.flagship.cache.visitors")
    private let hitQueue = DispatchQueue(label: "io.flagship.cache.hits")

    /// The caches of `manager`, with the SQLite defaults over `store` where it gives none.
    init(manager: FSCacheManager, store: FlagshipDatabase, now: @escaping @Sendable () -> Date = Date.init, logger: Logger) {
        visitorCache = manager.visitorCacheImp ?? FSDefaultCacheVisitor(database: store, now: now, logger: logger)
        hitCache = manager.hitCacheImp ?? FSDefaultCacheHit(database: store, now: now, logger: logger)
        visitorLookupTimeout = manager.visitorLookupTimeOut
        hitLookupTimeout = manager.hitCacheLookupTimeout
        self.logger = logger
    }

    // MARK: Visitors

    enum VisitorLookup: Sendable, Equatable {
        case found(VisitorCacheDocument)
        case notFound
        /// The cache did not answer within the timeout.
        case timedOut
        /// The cache answered with a document that cannot be trusted (logged).
        case rejected(VisitorCacheDocumentError)
    }

    func lookupVisitor(_ visitorId: String) async -> VisitorLookup {
        let cache = visitorCache
        let answer = await boundedCall(on: visitorQueue, timeout: visitorLookupTimeout) {
            cache.lookupVisitor(visitorId: visitorId)
        }
        return interpret(answer, visitorId: visitorId)
    }

    /// As `lookupVisitor`, for a caller that cannot await (`FSVisitorBuilder.build()`): blocks
    /// the calling thread for the lookup timeout at most.
    func lookupVisitorBlocking(_ visitorId: String) -> VisitorLookup {
        let cache = visitorCache
        let answer = Locked<Data??>(nil)
        let answered = DispatchSemaphore(value: 0)
        visitorQueue.async {
            let found = cache.lookupVisitor(visitorId: visitorId)
            answer.withLock { $0 = .some(found) }
            answered.signal()
        }
        let inTime = answered.wait(timeout: .now() + visitorLookupTimeout) == .success
        return interpret(inTime ? answer.withLock { $0 } : nil, visitorId: visitorId)
    }

    /// `nil`: no answer in time; `.some(nil)`: the cache knows no such visitor.
    private func interpret(_ answer: Data??, visitorId: String) -> VisitorLookup {
        guard let answer else {
            logger.warning("Visitor cache lookup for '\(visitorId)' took longer than \(Int(visitorLookupTimeout * 1000)) ms: going on without it")
            return .timedOut
        }
        guard let data = answer else { return .notFound }
        do {
            return .found(try VisitorCacheDocument(data: data, expectedVisitorId: visitorId))
        } catch {
            logger.error("Cached data of visitor '\(visitorId)' ignored: \(error)")
            return .rejected(error)
        }
    }

    func cacheVisitor(_ document: VisitorCacheDocument) async {
        let data: Data
        do {
            data = try document.jsonData()
        } catch {
            logger.error("Visitor '\(document.visitorId)' not cached: \(error)")
            return
        }
        let cache = visitorCache
        await queuedCall(on: visitorQueue) { cache.cacheVisitor(visitorId: document.visitorId, data) }
    }

    func flushVisitor(_ visitorId: String) async {
        let cache = visitorCache
        await queuedCall(on: visitorQueue) { cache.flushVisitor(visitorId: visitorId) }
    }

    // MARK: Hits

    enum HitLookup: Sendable, Equatable {
        case found([String: HitCacheDocument])
        case timedOut
    }

    /// Every cached hit the cache gives within the timeout. Entries that are not valid hit
    /// documents are logged and left out.
    func lookupHits() async -> HitLookup {
        let cache = hitCache
        let logger = logger
        let answer = await boundedCall(on: hitQueue, timeout: hitLookupTimeout) { () -> [String: HitCacheDocument] in
            var documents: [String: HitCacheDocument] = [:]
            for (id, dictionary) in cache.lookupHits() {
                do {
                    documents[id] = try HitCacheDocument(dictionary: dictionary)
                } catch {
                    logger.error("Cached hit '\(id)' ignored: \(error)")
                }
            }
            return documents
        }
        guard let answer else {
            logger.warning("Hit cache lookup took longer than \(Int(hitLookupTimeout * 1000)) ms: going on without it")
            return .timedOut
        }
        return .found(answer)
    }

    func cacheHits(_ hits: [String: HitCacheDocument]) async {
        guard !hits.isEmpty else { return }
        let cache = hitCache
        await queuedCall(on: hitQueue) {
            cache.cacheHits(hits: hits.mapValues(\.dictionary))
        }
    }

    func flushHits(_ ids: [String]) async {
        guard !ids.isEmpty else { return }
        let cache = hitCache
        await queuedCall(on: hitQueue) { cache.flushHits(hitIds: ids) }
    }

    func flushAllHits() async {
        let cache = hitCache
        await queuedCall(on: hitQueue) { cache.flushAllHits() }
    }

    // MARK: Consent

    /// Consent withdrawn: forgets the visitor and deletes its cached hits except consent hits.
    /// The default cache does it in one statement; a custom one through lookup and flush.
    func purgeVisitor(_ visitorId: String) async {
        await flushVisitor(visitorId)
        if let store = hitCache as? FSDefaultCacheHit {
            let logger = logger
            await queuedCall(on: hitQueue) {
                do {
                    try store.purgeHits(visitorId: visitorId)
                } catch {
                    logger.error("Hits of visitor '\(visitorId)' could not be deleted after consent was withdrawn: \(error)")
                }
            }
            return
        }
        guard case .found(let hits) = await lookupHits() else {
            logger.error("Hits of visitor '\(visitorId)' could not be listed after consent was withdrawn: they stay cached")
            return
        }
        let ids = hits.filter { $0.value.visitorId == visitorId && !$0.value.isConsentHit }.map(\.key)
        await flushHits(ids.sorted())
    }
}
