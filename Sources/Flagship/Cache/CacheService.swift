import Dispatch
import FlagshipStore
import Foundation
import Logging

/// The SDK's side of the visitor cache: the custom delegate of an `FSCacheManager`, or the
/// SQLite default, called off the caller's thread, with lookups bounded by the manager's timeout.
/// (The hit cache belongs to the tracking manager: `SQLiteHitQueue`, `DelegateHitQueue`.)
///
/// Calls to one cache run in order on its own serial queue, so a lookup sees every write made
/// before it. A lookup that overruns its timeout is abandoned: the SDK goes on without it, and
/// its late answer is dropped.
final class CacheService: Sendable {
    /// The visitor cache, called on its own serial queue only.
    let visitorCache: ConfinedDelegate<any FSVisitorCacheDelegate>
    let visitorLookupTimeout: TimeInterval
    /// The SDK's store (the file, or its in-memory fallback), for tests that act on its connection.
    let store: FlagshipDatabase
    /// With the default cache over a store that can be written, or a shared store: the
    /// documents waiting for the tracking manager's group commit (`nil`: each goes to the
    /// cache's own queue).
    let pending: PendingVisitorDocuments?
    /// A fleet's shared store, which keeps the visitors in place of the default cache: read by
    /// lookups (`buildAsync()`'s at once, `build()`'s on the cache's queue), written by the
    /// tracking manager's group commits.
    private let shared: (any VisitorKeepingHitQueue)?
    /// The documents of the visitors seen last, with the SDK's own store or a fleet's: a
    /// returning visitor's lookup from memory (`nil`: an app's visitor cache, which is its own).
    let hot: HotVisitors?
    private let now: @Sendable () -> Date
    private let logger: Logger
    private var visitorQueue: DispatchQueue { visitorCache.queue }

    /// The visitor cache of `manager`; where it gives none, `shared` (a fleet's store), else the
    /// SQLite default over `store`.
    init(manager: FSCacheManager, store: FlagshipDatabase, shared: (any VisitorKeepingHitQueue)? = nil,
         ownStoreReadBound: TimeInterval = CacheService.ownStoreReadBound, hotVisitors: HotVisitors.Settings = .init(),
         now: @escaping @Sendable () -> Date = Date.init, logger: Logger) {
        readBound = ownStoreReadBound
        visitorCache = manager.visitorCache
            ?? ConfinedDelegate(FSDefaultCacheVisitor(database: store, now: now, logger: logger), label: "io.flagship.cache.visitors")
        self.shared = manager.visitorCache == nil ? shared : nil
        readsOwnStore = manager.visitorCache == nil && shared == nil
        pending = manager.visitorCache == nil && (shared != nil || store.opening.readOnly == nil) ? PendingVisitorDocuments() : nil
        let hot = HotVisitors(hotVisitors, now: now)
        self.hot = manager.visitorCache == nil && hot.isEnabled ? hot : nil
        visitorLookupTimeout = manager.visitorLookupTimeOut
        self.store = store
        self.now = now
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
        /// The SDK's own store did not answer within `ownStoreReadBound`: whether the visitor has
        /// an assignment history is not known, so it must not be decided again as if it had none.
        case unavailable
    }

    /// How long a lookup in the SDK's own store is waited for. Such a read never waits for a
    /// write (it has its own WAL reader), so only a starved machine makes it slow; abandoning it
    /// after the reference's 200 ms, as a custom cache's, would decide a returning visitor again
    /// without its history, and a changed allocation could switch its variation.
    static let ownStoreReadBound: TimeInterval = 5

    /// Whether lookups read the SDK's own store (the default visitor cache), whose answer is
    /// waited for up to `ownStoreReadBound` rather than abandoned after the lookup timeout.
    private let readsOwnStore: Bool

    /// `ownStoreReadBound`, as configured.
    let readBound: TimeInterval

    private var lookupBound: TimeInterval {
        readsOwnStore ? max(visitorLookupTimeout, readBound) : visitorLookupTimeout
    }

    func lookupVisitor(_ visitorId: String) async -> VisitorLookup {
        if let waiting = pending?.document(for: visitorId) { return .found(waiting) }
        if let document = hot?.document(for: visitorId) { return .found(document) }
        let ticket = hot?.ticket()
        if let shared {
            return interpret(await lookUp(visitorId, in: shared), visitorId: visitorId, ticket: ticket)
        }
        let lookup = self.lookup(visitorId)
        let answer = await boundedCall(on: visitorQueue, timeout: lookupBound, lookup)
        return interpret(answer, visitorId: visitorId, ticket: ticket)
    }

    /// As `lookupVisitor`, for a caller that cannot await (`FSVisitorBuilder.build()`): blocks
    /// the calling thread for the lookup timeout at most (`ownStoreReadBound` for the own store).
    func lookupVisitorBlocking(_ visitorId: String) -> VisitorLookup {
        if let waiting = pending?.document(for: visitorId) { return .found(waiting) }
        if let document = hot?.document(for: visitorId) { return .found(document) }
        let ticket = hot?.ticket()
        let answer = OneShot<Data?>()
        var lookingUp: Task<Void, Never>?
        if let shared {
            // Awaited by a task on the cache's queue, not on Swift's pool, whose one thread the
            // caller may be holding: the store's own awaits hold no thread meanwhile.
            let logger = logger
            lookingUp = Task(executorPreference: visitorCache.executor) {
                answer.fulfil(await Self.document(of: visitorId, in: shared, logger: logger))
            }
        } else {
            let lookup = self.lookup(visitorId)
            visitorQueue.async { answer.fulfil(lookup()) }
        }
        let found = answer.value(blockingUntil: .now() + lookupBound)
        if found == nil { lookingUp?.cancel() }
        return interpret(found, visitorId: visitorId, ticket: ticket)
    }

    /// A shared store's lookup, awaited for the lookup timeout at most: not on the cache's serial
    /// queue, so that the lookups of a server's many visitors wait for the network together.
    private func lookUp(_ visitorId: String, in shared: any VisitorKeepingHitQueue) async -> Data?? {
        let logger = logger
        let clock = SystemClock()
        return await firstOf(deadline: clock.now().addingTimeInterval(visitorLookupTimeout), clock: clock) {
            (finish: @escaping @Sendable (Data?) -> Void) in
            Task { finish(await Self.document(of: visitorId, in: shared, logger: logger)) }
        }
    }

    /// The visitor's document in a shared store. A store that fails (both it and its local
    /// spill) is logged, and knows no visitor.
    private static func document(of visitorId: String, in shared: any VisitorKeepingHitQueue, logger: Logger) async -> Data? {
        do {
            return try await shared.lookUpVisitor(id: visitorId).map { Data($0.document.utf8) }
        } catch is CancellationError {
            // Its caller stopped waiting at the lookup timeout, and said so.
            return nil
        } catch {
            logger.error("The visitor cache could not be read: \(error)", metadata: logger.visitorMetadata(visitorId))
            return nil
        }
    }

    /// The cache's lookup, to run on its queue.
    private func lookup(_ visitorId: String) -> @Sendable () -> Data? {
        let cache = visitorCache
        return { cache.onQueue { $0.lookupVisitor(visitorId: visitorId) } }
    }

    /// `nil`: no answer in time; `.some(nil)`: the cache knows no such visitor. With `ticket` (a
    /// store read), a document found is kept in memory (`hot`).
    private func interpret(_ answer: Data??, visitorId: String, ticket: UInt64? = nil) -> VisitorLookup {
        guard let answer else {
            if readsOwnStore {
                logger.warning("A visitor could not be read from the store within \(lookupBound.millisecondsText): its flags are not decided again until it can be (fetchFlags throws meanwhile)",
                               metadata: logger.visitorMetadata(visitorId))
                return .unavailable
            }
            logger.warning("A visitor cache lookup took longer than \(Int(visitorLookupTimeout * 1000)) ms: going on without it",
                           metadata: logger.visitorMetadata(visitorId))
            return .timedOut
        }
        guard let data = answer else { return .notFound }
        do {
            let document = try VisitorCacheDocument(data: data, expectedVisitorId: visitorId)
            for dropped in document.droppedFlags {
                logger.warning("Cached data of a visitor: \(dropped)", metadata: logger.visitorMetadata(visitorId))
            }
            // A document missing a flag it could not read is read again next time, and said again.
            if let ticket, let hot, document.droppedFlags.isEmpty { hot.keep(document, bytes: data.count, ticket: ticket) }
            return .found(document)
        } catch {
            logger.error("Cached data of a visitor ignored: \(error)", metadata: logger.visitorMetadata(visitorId))
            return .rejected(error)
        }
    }

    /// Accepts the visitor's newest document and returns at once: with the default cache it
    /// waits, one per visitor, for the tracking manager's next group commit (returns `true`: the
    /// caller schedules it); a custom cache gets it on its own queue (`false`).
    /// `decisions` (the assignments the fetch made) are recorded with the document in the default
    /// cache's store; a custom cache gets the document only.
    /// `fromFile`: the campaigns come from a bucketing file, the same for every visitor placed in
    /// them, and the store may share them (a Decision API answer may be made for the visitor
    /// alone: flag values built from its data; it stays in its row, and goes with it).
    func cacheVisitor(_ document: VisitorCacheDocument, decisions: [DecisionRecord] = [], fromFile: Bool = false) -> Bool {
        if let pending {
            hot?.keep(document, bytes: document.estimatedBytes)
            pending.put(document: document, updatedAt: now().unixMilliseconds, decisions: decisions, fromFile: fromFile)
            return true
        }
        let text = document.jsonText()
        visitorCache.async { $0.cacheVisitor(visitorId: document.visitorId, Data(text.utf8)) }
        return false
    }

    // MARK: Consent and closing

    /// Consent withdrawn: forgets the visitor, after every write queued before (the tracking
    /// manager deletes its hits, and with the default cache its row, in the same transaction).
    func flushVisitorInBackground(_ visitorId: String) {
        hot?.erase(visitorId)
        if let pending {
            pending.remove(visitorId)
            return
        }
        visitorCache.async { $0.flushVisitor(visitorId: visitorId) }
    }

    /// Returns once every cache call queued so far has run.
    func waitForPendingWrites() async {
        await queuedCall(on: visitorQueue) {}
    }

    /// As `waitForPendingWrites()`, until `deadline` on `clock` at most: `false` when it passed first.
    func waitForPendingWrites(until deadline: Date, clock: any SDKClock) async -> Bool {
        await queuedCall(on: visitorQueue, until: deadline, clock: clock) { true } ?? false
    }
}
