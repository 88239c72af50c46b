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

            With --db postgres://user@host:port/database, the SDK starts on that PostgreSQL store \
            (FSConfigBuilder.withPostgresStore) and sends the hits of --env-id that wait there, \
            whoever wrote them, beside any hit of this host's local store file (--local-db); \
            replays on several hosts share the work the same way. A database without the store's \
            schema has nothing to replay and is left as it is; an older schema is migrated, as the \
            SDK does when it starts.
            """
    )

    @OptionGroup var sdk: SDKArguments<ReplayStore>
    @Option(help: ArgumentHelp(
        "With a PostgreSQL --db: this host's store file, where the SDK commits hits while PostgreSQL cannot be reached, "
            + "and whose hits it sends too (default: <cache dir>/flagship-<envId>.sqlite).",
        valueName: "path"))
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
        guard let statistics else {
            throw CommandFailure("the SDK was closed before the replay was counted")
        }
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
    /// Replays the hits of `--env-id` that wait in the PostgreSQL store.
    private func replay(on location: FlagshipPostgresStore.Location) async throws {
        // Read first, writing nothing: a database without the store has nothing to replay and
        // gets no schema; a newer schema or another application's is refused untouched.
        let envId = sdk.envId
        _ = try await PostgresReading.read(location) { try await $0.hitCount(envId: envId) }
        // Its claims take the hits other instances' failed sends put under backoff: sent now.
        let store = FlagshipPostgresStore.claimingThroughBackoff(location)
        let statistics: TrackingStatistics?
        do {
            try await store.prepare()
            let localFile = localDb.map { URL(fileURLWithPath: $0).standardizedFileURL }
                ?? StoreLocation.databaseFile(envId: envId, in: StoreLocation.defaultDirectory())
            let flagship = try sdk.startSDK(sdk.configBuilder().withCacheFile(localFile).withPostgresStore(store).build())
            await flagship.waitUntilTrackingIsIdle()
            statistics = await flagship.closeReporting()
        } catch {
            await store.close()
            throw error is CommandFailure ? error : CommandFailure("\(error)")
        }
        await store.close()
        let deadLetters = (try? await PostgresReading.read(location) { try await $0.deadLetterCount(envId: envId) }) ?? 0
        try report(statistics, remainingIn: "\(location) (environment \(envId))", deadLetters: deadLetters)
    }
    #endif
}
