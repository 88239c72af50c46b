import ArgumentParser
import Flagship
#if Postgres
import FlagshipPostgres
#endif
import FlagshipStore
import Foundation

/// `flagship replay`: sends the hits earlier runs left in the store, as the SDK does at each
/// start, and says how many went.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Send the hits waiting in the store, oldest first, then stop.",
        discussion: """
            Starts the SDK, which deletes the hits past their lifetime (4 h) and sends the others \
            now, whatever backoff earlier runs or other instances set on them after a failed send \
            (NEXT TRY in `flagship hits`): a replay is a request to send now. It waits until none is \
            being sent or due (a send that fails during the replay backs off and is tried once more \
            at close), and prints {"replayed": n, "expired": n, "remaining": n}. The hits the server \
            did not take stay for the next start. Several processes may replay one store at once: \
            each hit is claimed by one of them before it is sent, and "remaining" counts what the \
            store held when this one closed, hits another process was sending included. Hits \
            claimed by a process of this host that died are released at start; a claim of another \
            host's process lapses a minute after it was made (`flagship hits` shows claims).

            Exits 0 when no hit remains but dead letters (hits that can never be sent, counted in \
            "remaining" and named in a warning); 1, after the summary, when some remain (the \
            server did not take them, or another process holds them: run it again), or when the \
            replay could not run.
            """ + postgresParagraph(
                "With --db postgres://user@host:port/database, the SDK starts on that PostgreSQL store " +
                "(FSConfigBuilder.withPostgresStore) and sends the hits of --env-id that wait there, whoever " +
                "wrote them, beside any hit of this host's local store file (--local-db); replays on several " +
                "hosts share the work the same way. A database without the store's schema has nothing to " +
                "replay and is left as it is; an older schema is migrated, as the SDK does when it starts. If" +
                " PostgreSQL stops during the replay (a restart, a failover), the replay waits for it, 60 s " +
                "at most, and sends again what remains; \"remaining\" is counted in PostgreSQL and in the " +
                "local file once it answers, and the replay fails (exit 1) if it does not answer in time. A " +
                "hit whose send could not be recorded before the stop is sent again, and counted again in " +
                "\"replayed\".")
    )

    @OptionGroup var sdk: SDKArguments<ReplayStore>
    @Option(help: ArgumentHelp(
        "With a PostgreSQL --db: this host's store file, where the SDK commits hits while PostgreSQL cannot be reached, "
            + "and whose hits it sends too (default: <cache dir>/flagship-<envId>.sqlite).",
        valueName: "path", visibility: PostgresURL.isBuiltIn ? .default : .hidden))
    var localDb: String?

    func validate() throws {
        if localDb != nil, !(sdk.db.map(PostgresURL.isPostgres) ?? false) {
            throw ValidationError("--local-db goes with a PostgreSQL --db (postgres://...); with a store file, --db names it")
        }
    }

    func run() async throws {
        #if Postgres
        if let location = try sdk.postgresLocation() {
            try await replay(on: location)
            return
        }
        #endif
        guard FileManager.default.fileExists(atPath: sdk.storeFile.path) else {
            throw CommandFailure("no store at \(sdk.storeFile.path): nothing to replay")
        }
        try sdk.checkStoreIsUsable()
        let flagship = try sdk.startSDK(sdk.configBuilder().build())
        await flagship.waitUntilTrackingIsIdle()
        let statistics = await flagship.closeReporting()
        try report(statistics, remainingIn: sdk.storeFile.path, deadLetters: (try? deadLetters()) ?? 0)
    }

    /// The store file's dead letters: hits no replay can send (`flagship hits` says why), kept
    /// until they expire. They are counted as remaining, but do not make a replay fail.
    private func deadLetters() throws -> Int {
        let store = try FlagshipDatabase.openForInspection(at: sdk.storeFile)
        defer { store.close() }
        return try store.read { try $0.hits.deadLetterCount() }
    }

    /// Says what the replay did: the counts as one JSON line, a warning for hits refused, and a
    /// failure (exit 1) when hits remain.
    private func report(_ statistics: TrackingStatistics?, remainingIn store: String, deadLetters: Int = 0) throws {
        guard let statistics else { throw Self.notCounted }
        try report(Counts(statistics), remainingIn: store, deadLetters: deadLetters)
    }

    /// The SDK closed (by another caller) before its statistics were taken.
    private static let notCounted = CommandFailure("the SDK was closed before the replay was counted")

    /// What a replay did, added up over its passes.
    private struct Counts {
        var delivered = 0
        var expired = 0
        var rejected = 0
        var waiting = 0

        init() {}

        init(_ statistics: TrackingStatistics) {
            (delivered, expired, rejected, waiting) = (statistics.delivered, statistics.expired, statistics.rejected, statistics.waiting)
        }
    }

    private func report(_ statistics: Counts, remainingIn store: String, deadLetters: Int) throws {
        if statistics.rejected > 0 {
            Output.warn("the server refused \(statistics.rejected) hit(s) for good: they were dropped")
        }
        let unsendable = min(deadLetters, statistics.waiting)
        if unsendable > 0 {
            Output.warn("\(unsendable) dead letter(s) stay in \(store), never sent (`flagship hits` says why) until they expire")
        }
        try Output.printJSONLine([
            "replayed": statistics.delivered,
            "expired": statistics.expired,
            "remaining": statistics.waiting,
        ])
        let remaining = statistics.waiting - unsendable
        if remaining > 0 {
            throw CommandFailure("\(remaining) hit(s) remain in \(store): the next start (or replay) sends them")
        }
    }

    #if Postgres
    /// How long a replay on PostgreSQL waits for it to answer again (a restart, a failover)
    /// before it gives up counting what remains there.
    static let postgresWait: Duration = .seconds(60)

    /// Replays the hits of `--env-id` that wait in the PostgreSQL store. A pass starts the SDK,
    /// sends until nothing is due, and closes; then what remains is counted where it is (the
    /// environment's rows in PostgreSQL, this host's local file). When a pass delivered hits and
    /// some remain (PostgreSQL went away during it, so its claims failed), another pass runs once
    /// PostgreSQL answers again; `postgresWait` bounds the whole wait.
    private func replay(on location: FlagshipPostgresStore.Location) async throws {
        // Read first, writing nothing: a database without the store has nothing to replay and
        // gets no schema; a newer schema or another application's is refused untouched.
        let envId = sdk.envId
        _ = try await PostgresReading.read(location) { try await $0.hitCount(envId: envId) }
        let localFile = localDb.map { URL(fileURLWithPath: $0).standardizedFileURL }
            ?? StoreLocation.databaseFile(envId: envId, in: StoreLocation.defaultDirectory())
        let deadline = ContinuousClock.now + Self.postgresWait
        var total = Counts()
        while true {
            _ = try await Self.whenPostgresAnswers(location, until: deadline) { _ in () }
            let pass = try await replayPass(on: location, localFile: localFile)
            total.delivered += pass.delivered
            total.expired += pass.expired
            total.rejected += pass.rejected
            let (shared, deadLetters) = try await Self.whenPostgresAnswers(location, until: deadline) { inspection in
                (try await inspection.hitCount(envId: envId), try await inspection.deadLetterCount(envId: envId))
            }
            total.waiting = shared + (try Self.hitCount(in: localFile))
            if total.waiting == deadLetters || pass.delivered == 0 || ContinuousClock.now >= deadline {
                try report(total, remainingIn: "\(location) (environment \(envId)) and \(localFile.path)", deadLetters: deadLetters)
                return
            }
        }
    }

    /// One pass: the SDK started on the store, run until nothing is being sent or due, closed.
    private func replayPass(on location: FlagshipPostgresStore.Location, localFile: URL) async throws -> TrackingStatistics {
        // Its claims take the hits other instances' failed sends put under backoff: sent now.
        let store = FlagshipPostgresStore.claimingThroughBackoff(location)
        let statistics: TrackingStatistics?
        do {
            try await store.prepare()
            let flagship = try sdk.startSDK(sdk.configBuilder().withCacheFile(localFile).withPostgresStore(store).build(), on: Flagship())
            await flagship.waitUntilTrackingIsIdle()
            statistics = await flagship.closeReporting()
        } catch {
            await store.close()
            throw error is CommandFailure ? error : CommandFailure("\(error)")
        }
        await store.close()
        guard let statistics else { throw Self.notCounted }
        return statistics
    }

    /// `body` on the store once PostgreSQL answers: while it cannot be reached (a restart), asked
    /// again every half second until `deadline`, then a failure saying so.
    private static func whenPostgresAnswers<T: Sendable>(
        _ location: FlagshipPostgresStore.Location, until deadline: ContinuousClock.Instant,
        _ body: @escaping @Sendable (PostgresInspection) async throws -> T
    ) async throws -> T {
        var said = false
        while true {
            do {
                return try await PostgresInspection.read(location, body)
            } catch let error as FlagshipPostgresError where error.code == .unreachable {
                guard ContinuousClock.now < deadline else {
                    throw CommandFailure("\(error); waited \(Self.postgresWait.components.seconds) s for it: what remains there could not be counted")
                }
                if !said {
                    Output.warn("PostgreSQL cannot be reached (\(error)): waiting for it, \(Self.postgresWait.components.seconds) s at most")
                    said = true
                }
                try await Task.sleep(for: .milliseconds(500))
            } catch {
                throw CommandFailure("\(error)")
            }
        }
    }

    /// The hits of this host's local store file, 0 when there is none.
    private static func hitCount(in file: URL) throws -> Int {
        guard FileManager.default.fileExists(atPath: file.path) else { return 0 }
        let store = try FlagshipDatabase.openForInspection(at: file)
        defer { store.close() }
        return try store.read { try $0.hits.count() }
    }
    #endif
}
