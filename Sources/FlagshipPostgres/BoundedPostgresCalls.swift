#if Postgres
import Dispatch
import Flagship
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// What the SDK's calls into PostgreSQL have in common: each is awaited, no thread waiting for
/// it, and bounded by the store's `callTimeout` (`awaited`: both sides of the hit queue, the
/// writer's and the sender's, the bucketing file's reads and writes); a visitor's lookup, for
/// `buildAsync()` and `build()` alike, is bounded by the SDK's lookup timeout instead, which
/// abandons it. Each first makes sure the store is prepared (its
/// schema migrated, the database found to be ours): a store PostgreSQL was away for at start is
/// prepared by the first call that reaches it; one `prepare()` refused is never written to.
protocol BoundedPostgresCalls {
    var store: FlagshipPostgresStore { get }
    var envId: String { get }
    var logger: Logger { get }
}

extension BoundedPostgresCalls {
    /// Runs `work` on a connection of the pool, awaited: the caller's task suspends (no thread
    /// waits) until the answer or `callTimeout`, whichever comes first. Past it the work is
    /// cancelled and left to end by itself: a call that waits for a lost connection may not
    /// answer its cancellation at once, and nothing here waits for it (its late outcome is
    /// dropped; a late insert makes a hit wait in both stores, sent twice at worst, never lost).
    /// The caller's cancellation does not end the wait (what it records,
    /// the sender's settlements, must be recorded whatever becomes of it), the timeout does.
    /// The sender's calls (claims and settlements) and the bucketing file's are made this way.
    @discardableResult
    func awaited<T: Sendable>(
        _ what: String, _ work: @escaping @Sendable (PostgresConnection, String, Logger) async throws -> T
    ) async throws(FSCacheError) -> T {
        let (task, outcome) = started(work)
        let clock = SystemClock()
        let deadline = clock.now().addingTimeInterval(store.callTimeout.inSeconds)
        guard let result = await outcome.value(until: deadline, clock: clock, cancellable: false) else {
            task.cancel()
            throw unanswered(what)
        }
        return try Self.value(of: result, doing: what)
    }

    /// `work` set going on a connection of the pool once the store is prepared, its outcome told
    /// to the returned `OneShot`. The task runs on a thread of the store's, not on Swift's
    /// cooperative pool, whose threads a busy server keeps occupied.
    private func started<T: Sendable>(
        _ work: @escaping @Sendable (PostgresConnection, String, Logger) async throws -> T
    ) -> (Task<Void, Never>, OneShot<Result<T, any Error>>) {
        let (store, envId, logger) = (store, envId, logger)
        let outcome = OneShot<Result<T, any Error>>()
        let task = Task(executorPreference: store.executor) {
            do {
                try await store.ensurePrepared()
                outcome.fulfil(.success(try await store.client.withConnection { try await work($0, envId, logger) }))
            } catch {
                outcome.fulfil(.failure(error))
            }
        }
        return (task, outcome)
    }

    private func unanswered(_ what: String) -> FSCacheError {
        FSCacheError(code: .unreachable, path: nil, description: "\(what): no answer from \(store.location) within \(store.callTimeout)")
    }

    /// A call's value, or its failure as the SDK's cache error.
    private static func value<T>(of result: Result<T, any Error>, doing what: String) throws(FSCacheError) -> T {
        switch result {
        case .success(let value):
            return value
        case .failure(let error):
            let reason = FlagshipPostgresError(error, doing: what)
            let code: FSCacheError.Code = reason.code == .unreachable ? .unreachable : reason.refusesRows ? .refused : .other
            throw FSCacheError(code: code, path: nil, description: reason.description)
        }
    }
}

/// The fleet's bucketing file in `flagship.bucketing`, for the SDK's bucketing poller.
struct PostgresBucketingFiles: SharedBucketingFiles, BoundedPostgresCalls {
    let store: FlagshipPostgresStore
    let envId: String
    let logger: Logger

    func file() async throws -> BucketingRecord? {
        try await awaited("reading the bucketing file") { connection, envId, logger in
            try await PostgresBucketingStore(connection: connection, logger: logger).file(envId: envId)
        }
    }

    func save(_ record: BucketingRecord) async throws {
        try await awaited("storing the bucketing file") { connection, _, logger in
            try await PostgresBucketingStore(connection: connection, logger: logger).save(record)
        }
    }

    func keep(_ version: BucketingFileVersion, keeping: Int) async throws {
        try await awaited("keeping the bucketing file by version") { connection, _, logger in
            try await PostgresBucketingStore(connection: connection, logger: logger).keep(version, keeping: keeping)
        }
    }
}
#endif
