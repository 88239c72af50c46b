import FlagshipStore
import Foundation
import Logging

/// Keeps the environment's bucketing file: the stored one first, then a download at start and
/// every polling interval (PROTOCOL.md section 4, BUCKETING.md "Polling").
///
/// A download is sent with `If-Modified-Since` once a file is known; `304` changes nothing. A new
/// file is parsed before anything else: an unusable one is logged and dropped, so it never
/// replaces the good file in memory or in SQLite. Failures keep the file and wait for the next poll.
final class BucketingPoller: Sendable {
    struct State {
        var file: BucketingFile?
        var lastModified: String?
        /// When the file in use was downloaded (by this instance or, shared, by another).
        var downloadedAt: Int64 = .min
        /// Whether the file in use is the bootstrap, given at start, not yet replaced.
        var bootstrapped = false
        /// The campaigns of the file in use, for the change a new one makes.
        var campaigns: BucketingFileCampaigns?
        /// Set once the first download of this start has ended, whatever its outcome.
        var closed = false
        /// Whether any store work was queued (`close` then waits for it).
        var storeWorkQueued = false
    }

    let url: URL
    let envId: String
    /// The largest file taken (`FlagshipConfig.bucketingFileMaximumBytes`).
    let maximumBytes: Int
    let interval: TimeInterval
    let timeout: TimeInterval
    let transport: any HTTPTransport
    let store: FlagshipDatabase?
    /// The file a fleet shares (FlagshipPostgres), read at start and written with each download.
    let shared: (any SharedBucketingFiles)?
    /// The file given at start (`withBootstrap`), used when the store has none.
    let bootstrap: Data?
    let clock: any SDKClock
    let logger: Logger
    /// Told of every file put in use (stored or downloaded), off any lock.
    let onFile: @Sendable (BucketingFile) -> Void
    /// Told of what a new file changed from the one in use (not of the first file of a start).
    let onChange: (@Sendable (FSBucketingFileChange) -> Void)?
    let state = Locked(State())
    let outage: OutageLog
    /// Finished by `close()`: `run()` cancels its polling (a download under way with it) and returns.
    private let stop: AsyncStream<Void>
    private let stopContinuation: AsyncStream<Void>.Continuation
    /// Ends with the first download of this start, its failure, `startOffline()` or `close()`:
    /// what a fetch waits for when no file is known yet.
    let firstAttempt = OneShot<Void>()
    /// The store's work, in the order it was asked for: the fleet's file read at start, a stored
    /// file compiled again, a version kept, a download written. Run by `runStoreWork()`, a child
    /// of the instance's background task, so that polling goes on meanwhile: the local store's
    /// part on its own queue, the fleet's awaited. Bounded by construction: at most three jobs at
    /// start, and a download's, which the poll awaits before the next one.
    private let storeWork: AsyncStream<@Sendable () async -> Void>
    private let storeWorkContinuation: AsyncStream<@Sendable () async -> Void>.Continuation
    /// Fulfilled once `runStoreWork()` has run every job queued before `close()`.
    private let storeWorkEnded = OneShot<Void>()
    /// How many file versions the store keeps for provenance; `nil`: none (provenance off).
    let keptVersions: Int?

    init(envId: String, baseURL: URL, interval: TimeInterval, timeout: TimeInterval, transport: any HTTPTransport,
         store: FlagshipDatabase?, shared: (any SharedBucketingFiles)? = nil, bootstrap: Data? = nil,
         keptVersions: Int? = nil, maximumBytes: Int = BucketingFile.maximumBytes, clock: any SDKClock, logger: Logger,
         onChange: (@Sendable (FSBucketingFileChange) -> Void)? = nil,
         onFile: @escaping @Sendable (BucketingFile) -> Void) {
        self.envId = envId
        self.maximumBytes = maximumBytes
        (stop, stopContinuation) = AsyncStream.makeStream(of: Void.self)
        (storeWork, storeWorkContinuation) = AsyncStream.makeStream(of: (@Sendable () async -> Void).self)
        url = baseURL.flagshipEndpoint(path: [envId, "bucketing.json"])
        self.interval = interval
        self.timeout = timeout
        self.transport = transport
        self.store = store
        self.shared = shared
        self.bootstrap = bootstrap
        self.keptVersions = keptVersions
        self.clock = clock
        self.logger = logger
        outage = OutageLog(logger: logger, now: { [clock] in Date(timeIntervalSinceReferenceDate: clock.uptime()) })
        self.onFile = onFile
        self.onChange = onChange
    }

    /// The file decisions are made from now; `nil` until one is stored or downloaded.
    var file: BucketingFile? {
        state.withLock { $0.file }
    }

    /// Reads the stored file, if any, so the SDK can decide at once, offline. A stored document
    /// that no longer parses is ignored (logged) and replaced by the next download. With a shared
    /// store, its file is read next, off the caller's thread.
    func loadStored() {
        loadLocal()
        loadBootstrap()
        loadShared()
    }

    /// Whether decisions are made on the bootstrap file now.
    var decidesOnBootstrap: Bool {
        state.withLock { $0.bootstrapped }
    }

    /// The bootstrap, when the store gave no file: the oldest a file can be, so that anything
    /// downloaded or shared replaces it.
    func loadBootstrap() {
        guard let bootstrap, file == nil else { return }
        do {
            let (parsed, file) = try BucketingFile.readKeepingTree(json: bootstrap, maximumBytes: maximumBytes)
            let campaigns = BucketingFileCampaigns(parsed: parsed, file: file)
            let used = state.withLock { state -> Bool in
                guard state.file == nil else { return false }
                state.file = file
                state.campaigns = campaigns
                state.bootstrapped = true
                return true
            }
            guard used else { return }
            logger.info("Bucketing file from the bootstrap given at start (\(file.campaignCount) campaign(s)), until one is downloaded")
            onFile(file)
            keepVersionSoon(of: file, document: String(decoding: bootstrap, as: UTF8.self), origin: .bootstrap)
        } catch {
            logger.error("The bootstrap bucketing file is unusable (\(error)): it is ignored")
        }
    }

    /// The stored file (`StoredBucketingFile`), so the SDK can decide at once, offline; one read
    /// from its JSON is compiled again for the next start.
    func loadLocal() {
        guard let store, let stored = StoredBucketingFile.read(from: store, envId: envId, maximumBytes: maximumBytes, logger: logger) else {
            return
        }
        if let recompile = stored.recompile {
            compileSoon(stored.file, digests: stored.campaigns.digests, downloadedAt: recompile.downloadedAt)
        }
        state.withLock { state in
            state.file = stored.file
            state.campaigns = stored.campaigns
            state.lastModified = stored.lastModified
            state.downloadedAt = stored.downloadedAt
        }
        let age = Int(max(0, clock.now().unixMilliseconds - stored.downloadedAt) / 1000)
        let form = stored.recompile == nil ? "compiled" : "read from its JSON"
        logger.info("Bucketing file from the store (\(stored.file.campaignCount) campaign(s), downloaded \(age) s ago, \(form))")
        onFile(stored.file)
        keepVersionSoon(of: stored.file, document: stored.recompile?.document, origin: .store)
    }

    /// Writes the compiled form of the stored file read from its JSON, on the store's queue.
    func compileSoon(_ file: BucketingFile, digests: [String: String], downloadedAt: Int64) {
        guard let store, store.opening.readOnly == nil else { return }
        let (envId, logger) = (envId, logger)
        queueStoreWork {
            let compiled = await Self.compile(file, digests: digests)
            _ = try? await store.queued { store in
                StoredBucketingFile.writeCompiled(compiled, envId: envId, downloadedAt: downloadedAt, to: store, logger: logger)
            }
        }
    }

    /// The fleet's file, used when it is newer than the one in use (another instance downloaded
    /// it since), and kept in the local store for the next start. Store work, so a download of
    /// this start that comes first is stored after it.
    func loadShared() {
        guard shared != nil else { return }
        queueStoreWork { [self] in await adoptShared() }
    }

    private func adoptShared() async {
        guard let shared else { return }
        let record: BucketingRecord
        do {
            guard let found = try await shared.file() else { return }
            record = found
        } catch {
            logger.warning("The shared bucketing file could not be read (\(error)); \(keptFileNote)")
            return
        }
        guard record.downloadedAt > state.withLock({ $0.downloadedAt }) else { return }
        let parsed: ParsedBucketingFile
        let file: BucketingFile
        do {
            (parsed, file) = try await Self.parse(Data(record.document.utf8), maximumBytes: maximumBytes)
        } catch {
            logger.error("The shared bucketing file is unusable (\(error)); \(keptFileNote)")
            return
        }
        let campaigns = BucketingFileCampaigns(parsed: parsed, file: file)
        let adopted = state.withLock { state -> (Bool, BucketingFileCampaigns?) in
            guard !state.closed, record.downloadedAt > state.downloadedAt else { return (false, nil) }
            defer { state.campaigns = campaigns }
            state.file = file
            state.lastModified = record.lastModified
            state.downloadedAt = record.downloadedAt
            state.bootstrapped = false
            return (true, state.campaigns)
        }
        guard adopted.0 else { return }
        tellChange(from: adopted.1, to: campaigns)
        let age = Int(max(0, clock.now().unixMilliseconds - record.downloadedAt) / 1000)
        logger.info("Bucketing file from the shared store (\(file.campaignCount) campaign(s), downloaded \(age) s ago)")
        onFile(file)
        let version = versionToKeep(of: file, document: record.document, origin: .fleet)
        guard let store else { return }
        let logger = logger
        var compiled = record
        compiled.compiled = await Self.compile(file, digests: campaigns.digests)
        _ = try? await store.queued { [compiled] store in
            Self.storeLocally(compiled, version: version, in: store, logger: logger,
                              failure: "The shared bucketing file could not be stored locally")
        }
    }

    /// A file's JSON parsed and checked, on Swift's global executor: not on the SDK's background
    /// thread, which every instance's sender shares (a file of thousands of campaigns takes a
    /// large fraction of a second), and never blocking (CPU work only).
    static func parse(_ json: Data, maximumBytes: Int) async throws -> (ParsedBucketingFile, BucketingFile) {
        try await withTaskExecutorPreference(globalConcurrentExecutor) {
            try BucketingFile.readKeepingTree(json: json, maximumBytes: maximumBytes)
        }
    }

    /// A file's compiled form (`CompiledBucketingFile`), encoded on Swift's global executor, as
    /// `parse` parses: CPU work, kept off the store's queue, where the group commits wait behind
    /// whatever runs, and off the SDK's background thread.
    static func compile(_ file: BucketingFile, digests: [String: String]) async -> [UInt8] {
        await withTaskExecutorPreference(globalConcurrentExecutor) {
            CompiledBucketingFile.encode(file, digests: digests)
        }
    }

    /// Queues `job` as store work; `false` once closed (the job does not run).
    @discardableResult
    func queueStoreWork(_ job: @escaping @Sendable () async -> Void) -> Bool {
        state.withLock { $0.storeWorkQueued = true }
        if case .terminated = storeWorkContinuation.yield(job) { return false }
        return true
    }

    /// Queues `job` as store work and waits until it has run (or until the caller is cancelled:
    /// the job still runs, in its turn); returns at once once closed.
    func runStoreWork(_ job: @escaping @Sendable () async -> Void) async {
        let done = OneShot<Void>()
        guard queueStoreWork({ await job(); done.fulfil(()) }) else { return }
        _ = await done.value()
    }

    /// Runs the store work as it is queued, until `close()` and the work queued before it has
    /// run; a child of the SDK instance's background task (network or not).
    func runStoreWork() async {
        for await job in storeWork { await job() }
        storeWorkEnded.fulfil(())
    }

    /// The row that keeps `file` by version for provenance, used now; `nil` when provenance is off.
    /// Stores `record` in the local store, its compiled form (`compile`) beside its JSON (the next
    /// start decides from it without parsing), and keeps `version`; a failure is logged as `failure`,
    /// and the file is used until the process ends. Blocking: on the store's own queue.
    static func storeLocally(_ record: BucketingRecord, version: (file: BucketingFileVersion, keeping: Int)?,
                             in store: FlagshipDatabase, logger: Logger, failure: String) {
        do {
            try store.write { db in
                try db.bucketing.save(record)
                if let version { try db.bucketingFiles.use(version.file, keeping: version.keeping) }
            }
        } catch {
            logger.error("\(failure) (\(error)); it is used until the process ends")
        }
    }

    func versionToKeep(of file: BucketingFile, document: String,
                               origin: BucketingFileVersion.Origin) -> (file: BucketingFileVersion, keeping: Int)? {
        guard let keptVersions, store != nil || shared != nil else { return nil }
        let now = clock.now().unixMilliseconds
        return (BucketingFileVersion(version: file.version, envId: envId, document: document, origin: origin,
                                     firstUsedAt: now, lastUsedAt: now), keptVersions)
    }

    /// Keeps `file` by version (`StoredBucketingFile.keepVersion`), as store work: a file read at
    /// start, and the caller goes on.
    func keepVersionSoon(of file: BucketingFile, document: String?, origin: BucketingFileVersion.Origin) {
        guard let keeping = keptVersions, store != nil || shared != nil else { return }
        let (store, shared, logger, envId) = (store, shared, logger, envId)
        let now = clock.now().unixMilliseconds
        queueStoreWork {
            do {
                try await StoredBucketingFile.keepVersion(of: file, document: document, origin: origin, envId: envId, at: now,
                                                          keeping: keeping, store: store, shared: shared)
            } catch {
                logger.warning("The bucketing file in use could not be kept by version (\(error)): decisions made on it cannot be replayed")
            }
        }
    }

    /// Tells `onChange` what a new file changed from the one it replaced (nothing for the first
    /// file of a start, nor for a file that only repeats the one in use).
    func tellChange(from old: BucketingFileCampaigns?, to new: BucketingFileCampaigns) {
        guard let onChange, let old, let change = FSBucketingFileChange.between(old: old, new: new, panic: new.panic) else { return }
        onChange(change)
    }

    /// Polls: a download now, then one every interval, until `close()`; a child of the SDK
    /// instance's background task (`SDKRuntime.run`).
    func run() async {
        await runUntil(stop) { [self] in
            await poll()
            endFirstAttempt()
            while !Task.isCancelled {
                do {
                    try await clock.sleep(until: clock.now().addingTimeInterval(interval))
                } catch {
                    break
                }
                await poll()
            }
        }
    }

    /// The file to decide from; when none is known yet, waits for the end of the first download
    /// of this start (bounded by the request timeout), or for the caller's cancellation.
    func usableFile() async -> BucketingFile? {
        if file == nil { _ = await firstAttempt.value() }
        return file
    }

    /// After `close()`: returns once the store work queued before it (a downloaded file, a
    /// version kept) has run, or at `deadline`: `false` then.
    func waitForStoreWrites(until deadline: Date, clock: any SDKClock) async -> Bool {
        guard state.withLock({ $0.storeWorkQueued }) else { return true }
        return await storeWorkEnded.value(until: deadline, clock: clock, cancellable: false) != nil
    }

    /// The network is disabled: no download is made, so none is waited for. Decisions use the
    /// stored file, the shared one or the bootstrap; without any, a fetch fails at once.
    func startOffline() {
        // Said at info: each fetch that fails for want of a file says so as a warning.
        if file == nil {
            logger.info("No bucketing file stored and the network is disabled: fetches fail until a start with the network downloads one (or withBootstrap gives one)")
        }
        endFirstAttempt()
    }

    /// Stops polling; a download under way is cancelled. Safe to call twice.
    func close() {
        state.withLock { $0.closed = true }
        stopContinuation.finish()
        storeWorkContinuation.finish()
        endFirstAttempt()
    }

    func endFirstAttempt() {
        firstAttempt.fulfil(())
    }
}
