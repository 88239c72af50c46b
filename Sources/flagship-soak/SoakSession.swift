import Flagship
import FlagshipLocalServer
import FlagshipStore
import Foundation
import Logging

/// One SDK started as an app starts it, on a store file of its own, against a local server of
/// its own that takes every batch (200): a soak run or one trial of `--find-steady`. Stopped
/// with `close()`, which leaves nothing behind.
final class SoakSession: Sendable {
    /// Requests the server keeps in memory: none, as the soak reads only its running totals
    /// (`totals` counts every request). Each kept request is a parsed batch of hits, some
    /// 125 KB at 3,000 visitors/s; 64 of them (kept up to twice that many between trims) were
    /// 16 MB of the RSS the soak reports, the tool's and not the SDK's.
    static let serverRecordLimit = 0

    let server: LocalFlagshipServer
    let flagship: Flagship
    let directory: URL
    let storeFile: URL
    /// The SDK's log lines of its prunes.
    let prunes = PruneLines.Kept()

    private init(server: LocalFlagshipServer, flagship: Flagship, directory: URL) {
        self.server = server
        self.flagship = flagship
        self.directory = directory
        storeFile = directory.appendingPathComponent("flagship.sqlite")
    }

    /// Starts a server and the shared SDK in bucketing mode, then downloads the bucketing file
    /// before the first visitor, so that every visitor is decided on the fixture's campaigns.
    static func start(fixture: SoakFixture, retention: TimeInterval? = nil, maxVisitors: Int? = nil, seedStore: URL? = nil,
                      provenance: Bool = true) async throws(SoakError) -> SoakSession {
        let server: LocalFlagshipServer
        do {
            server = LocalFlagshipServer(.init(
                envId: SoakFixture.envId, apiKey: SoakFixture.apiKey,
                bucketingFile: try ServedBucketingFile(data: fixture.bucketingJSON), recordLimit: serverRecordLimit
            ))
            try server.start()
        } catch {
            throw SoakError.server("\(error)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-soak-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            server.stop()
            throw SoakError.fileSystem(path: directory.path, reason: "cannot create it: \(error.localizedDescription)")
        }
        let flagship = Flagship.sharedInstance
        let session = SoakSession(server: server, flagship: flagship, directory: directory)
        if let seedStore {
            do {
                try FileManager.default.copyItem(at: seedStore, to: session.storeFile)
            } catch {
                server.stop()
                try? FileManager.default.removeItem(at: directory)
                throw SoakError.fileSystem(path: seedStore.path, reason: "cannot copy it: \(error.localizedDescription)")
            }
        }
        // The SDK's own log, kept to its prunes (at info), the rest silenced as before.
        let prunes = session.prunes
        var logger = Logger(label: "flagship-soak.sdk") { _ in PruneLines(prunes) }
        logger.logLevel = .info
        let config = FSConfigBuilder()
            .Bucketing()
            .withBucketingBaseURL(server.bucketingBaseURL)
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(session.storeFile)
            .withLogger(logger)
            .withVisitorRetention(retention ?? FlagshipConfig.defaultVisitorRetention, maxVisitors: maxVisitors)
            .withDecisionProvenance(provenance)
            .build()
        flagship.start(envId: SoakFixture.envId, apiKey: SoakFixture.apiKey, config: config)
        await flagship.pollBucketingFileNow()
        return session
    }

    /// Closes the SDK (its own deadline: what it cannot send stays in the store), stops the
    /// server and removes the store. Returns the SDK's counts once closed.
    func close() async -> TrackingStatistics? {
        // `close()`, with the counts it ends on (once closed the SDK has no runtime to ask).
        let statistics = await flagship.closeReporting()
        server.stop()
        try? FileManager.default.removeItem(at: directory)
        return statistics
    }

    /// Closes `session` in a task of its own: an interrupted run's task is cancelled, and its
    /// SDK must still close whole (send what it can, then remove the store).
    @discardableResult
    static func closeEvenIfCancelled(_ session: SoakSession) async -> TrackingStatistics? {
        await Task { await session.close() }.value
    }

    /// The store's bytes on disk (the database file and its write-ahead log), its visitor rows,
    /// and the process's memory: read on a dispatch thread, as file reads and SQLite's calls
    /// block, and a task must not hold a thread of the cooperative pool meanwhile.
    func inspect() async -> (storeBytes: Int64, visitorRows: Int?, memory: ProcessMemory?) {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: (self.storeBytes(), self.visitorRows(), ProcessMemory.current()))
            }
        }
    }

    /// Visitors decided at more than one moment (`nil` when the store cannot be read): in a soak,
    /// whose file and contexts never change, each was decided again without its assignment
    /// history. Read before the SDK closes (closing removes the store).
    func visitorsDecidedAgain() async -> [String]? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: try? Self.visitorsDecidedAgain(in: self.storeFile))
            }
        }
    }

    /// A visitor decided from its stored history adds no decision row: one with rows from two
    /// moments or more was decided without it (or after its retention ended, which a soak's
    /// returning visitors, picked among recent ones, never reach).
    static func visitorsDecidedAgain(in storeFile: URL) throws -> [String] {
        let store = try FlagshipDatabase.openForInspection(at: storeFile)
        defer { store.close() }
        return try store.read { try $0.decisions.visitorsDecidedMoreThanOnce() }
    }

    private func storeBytes() -> Int64 {
        [storeFile.path, storeFile.path + "-wal"].reduce(0) { total, path in
            let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber
            return total + (size?.int64Value ?? 0)
        }
    }

    /// Read through a read-only connection of the tool's own (the SDK keeps its file open);
    /// `nil` when the store cannot be read now: the sample says so rather than stopping the run.
    private func visitorRows() -> Int? {
        do {
            let store = try FlagshipDatabase.openForInspection(at: storeFile)
            defer { store.close() }
            return try store.read { try $0.visitors.count() }
        } catch {
            return nil
        }
    }
}

/// A log handler that keeps the SDK's lines about its prunes ("Visitor cache pruned …"), the
/// first `Kept.limit` of them, and drops every other line.
struct PruneLines: LogHandler {
    final class Kept: Sendable {
        static let limit = 20
        private let state = Locked<[String]>([])

        var lines: [String] { state.withLock { $0 } }

        func keep(_ line: String) {
            state.withLock { if $0.count < Self.limit { $0.append(line) } }
        }
    }

    private let kept: Kept
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    init(_ kept: Kept) {
        self.kept = kept
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let text = event.message.description
        if text.hasPrefix("Visitor cache pruned") { kept.keep(text) }
    }
}
