import ArgumentParser
import Flagship
#if Postgres
import FlagshipPostgres
#endif
import FlagshipStore
import Foundation

/// The options of the commands that run the SDK itself (`fetch`, `send-hit`, `replay`,
/// `doctor`): which environment, which store, which servers. `Store` says what `--db` means for
/// the command.
struct SDKArguments<Store: StoreOption>: ParsableArguments {
    @Option(help: "The environment id.") var envId: String
    @OptionGroup var key: APIKeyArguments
    @Option(help: Store.help) var db: String?
    @Option(help: ArgumentHelp("The Decision API base, /v2 included.", valueName: "url")) var decisionURL: String?
    @Option(help: ArgumentHelp("The events base.", valueName: "url")) var eventsURL: String?

    func validate() throws {
        try PostgresURL.requireSupport(db)
        for (name, value) in [("--decision-url", decisionURL), ("--events-url", eventsURL)] {
            if let value, URL(string: value)?.scheme == nil { throw ValidationError("\(name) must be an absolute URL, not '\(value)'") }
        }
    }

    #if Postgres
    /// Where the PostgreSQL store is, when `--db` is a `postgres://` URL; `nil` for a file.
    func postgresLocation() throws -> FlagshipPostgresStore.Location? {
        try db.flatMap { try PostgresURL.location($0) }
    }
    #endif

    /// For a command that runs the SDK on a store file only: refuses a PostgreSQL URL, saying so.
    func requireStoreFile() throws {
        if let db { try PostgresURL.refuse(db, command: Store.command) }
    }

    /// The store file the SDK will use: `--db`, else where the SDK looks by default.
    var storeFile: URL {
        db.map { URL(fileURLWithPath: $0).standardizedFileURL }
            ?? StoreLocation.databaseFile(envId: envId, in: StoreLocation.defaultDirectory())
    }

    /// A configuration builder with the store file (not a PostgreSQL URL) and the servers set,
    /// the SDK's log lines written as the tool writes its own.
    func configBuilder() -> FSConfigBuilder {
        let builder = FSConfigBuilder().DecisionApi().withLogger(ToolLogHandler.logger)
        if let db, !PostgresURL.isPostgres(db) { builder.withCacheFile(URL(fileURLWithPath: db)) }
        if let decisionURL, let url = URL(string: decisionURL) { builder.withDecisionBaseURL(url) }
        if let eventsURL, let url = URL(string: eventsURL) { builder.withEventsBaseURL(url) }
        return builder
    }

    /// Opens the store file as the SDK will, and closes it. The SDK falls back to an in-memory
    /// store when the file cannot be used (and only logs it); a command that promises hits are
    /// on disk checks first, so that it fails instead of reporting what a restart would not find.
    func checkStoreIsUsable() throws {
        let store: FlagshipDatabase
        do {
            store = try FlagshipDatabase.open(at: storeFile)
        } catch {
            throw CommandFailure("the store \(storeFile.path) cannot be used: \(error)")
        }
        defer { store.close() }
        DBMigrate.report(store.opening, of: storeFile)
        if let reason = store.opening.readOnly {
            throw CommandFailure("the store \(storeFile.path) cannot be written now: \(reason)")
        }
    }

    /// Starts `Flagship.sharedInstance` with `config`; fails if the SDK refused to start.
    func startSDK(_ config: FlagshipConfig, on flagship: Flagship = Flagship.sharedInstance) throws -> Flagship {
        flagship.start(envId: envId, apiKey: try key.key(), config: config)
        guard flagship.getStatus() != .SDK_NOT_INITIALIZED else {
            throw CommandFailure("the SDK did not start: check --env-id and the API key")
        }
        return flagship
    }
}
