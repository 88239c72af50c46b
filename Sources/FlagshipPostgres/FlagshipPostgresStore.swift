#if Postgres
import Flagship
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// The SDK's store on PostgreSQL, shared by every instance of a fleet: the `flagship` schema of
/// one database (visitors, hits, bucketing file, SDK state), migrated at `prepare()`.
///
/// ```swift
/// let store = try FlagshipPostgresStore(url: "postgres://flagship@db.internal:5432/flagship")
/// let version = try await store.prepare()   // migrates; refuses a database that is not ours
/// ```
///
/// Made from a URL, the store owns its `PostgresClient` and runs it until `close()`; made from
/// a client, the app runs and closes that client.
public final class FlagshipPostgresStore: Sendable {
    /// How to reach the database.
    public struct Location: Sendable, Equatable, CustomStringConvertible {
        /// The server's host name or address.
        public var host: String
        /// The server's TCP port. Default 5432.
        public var port: Int
        /// The user the store connects as.
        public var username: String
        /// From the URL, else `$PGPASSWORD`. Never part of `description`.
        public var password: String?
        /// The database holding the `flagship` schema.
        public var database: String
        /// How the connections are secured (`sslmode`, `sslrootcert`): see ``TransportSecurity``.
        public var security: TransportSecurity

        /// `postgres://user[:password]@host[:port]/database[?sslmode=…&sslrootcert=…]` (or
        /// `postgresql://`); without a password in the URL, `PGPASSWORD` from `environment` is
        /// used, and without `sslmode` or `sslrootcert`, `PGSSLMODE` and `PGSSLROOTCERT` (see
        /// ``TransportSecurity``). Any other query parameter is refused, naming it.
        public init(url text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(FlagshipPostgresError) {
            // A password with an unescaped `@` or `/` makes the URL say two things (libpq would
            // take the part after the first `@` as the host): refused, the password not shown.
            let authorityAndPath = text.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? text
            if authorityAndPath.filter({ $0 == "@" }).count > 1 {
                throw FlagshipPostgresError(code: .invalidURL, description: "the PostgreSQL URL \(Self.redacting(text)) has more than one '@': write an '@' of the user name or password as %40 (and a '/' as %2F)")
            }
            guard let components = URLComponents(string: text),
                  components.scheme == "postgres" || components.scheme == "postgresql",
                  let host = components.host, !host.isEmpty else {
                throw FlagshipPostgresError(code: .invalidURL, description: "not a PostgreSQL URL: expected postgres://user@host:port/database")
            }
            let database = String(components.path.drop { $0 == "/" })
            guard let user = components.user, !user.isEmpty, !database.isEmpty else {
                throw FlagshipPostgresError(code: .invalidURL, description: "the PostgreSQL URL names no user or no database: expected postgres://user@host:port/database")
            }
            self.host = host
            port = components.port ?? 5432
            // SwiftNIO keeps 16 bits of a port: 99999 would silently become 34463.
            guard (1...65_535).contains(port) else {
                throw FlagshipPostgresError(code: .invalidURL, description: "the PostgreSQL URL's port \(port) is not a TCP port (1 to 65535)")
            }
            security = try TransportSecurity(query: components.queryItems ?? [], environment: environment)
            username = user.removingPercentEncoding ?? user
            password = components.password.map { $0.removingPercentEncoding ?? $0 } ?? environment["PGPASSWORD"]
            self.database = database.removingPercentEncoding ?? database
        }

        /// A location given part by part; `password` is used as given (`PGPASSWORD` is not read),
        /// and so is `security` (`PGSSLMODE` is not read): libpq's default, `prefer`, unless given.
        public init(host: String, port: Int = 5432, username: String, password: String?, database: String,
                    security: TransportSecurity = .prefer) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.security = security
        }

        /// `text` (a URL as given) with everything after the user name's first `:` up to the last
        /// `@` left out: what is shown of a URL that may hold a password, parsed or not.
        package static func redacting(_ text: String) -> String {
            guard let scheme = text.range(of: "://"), let lastAt = text.range(of: "@", options: .backwards),
                  lastAt.lowerBound > scheme.upperBound else { return text }
            let credentials = text[scheme.upperBound..<lastAt.lowerBound]
            guard let colon = credentials.firstIndex(of: ":") else { return text }
            return String(text[..<colon]) + String(text[lastAt.lowerBound...])
        }

        /// The URL without its password: what logs and errors show.
        public var description: String {
            "postgres://\(username)@\(host):\(port)/\(database)"
        }
    }

    /// Where the store is, without the password.
    public let location: String
    /// How long the SDK waits for PostgreSQL on one call before it writes to its local store
    /// instead, and how long it then writes there before it tries PostgreSQL again.
    package let callTimeout: Duration
    package let retryAfter: TimeInterval
    /// How long a claim holds its hits, where a test shortens the SDK's own (60 s at least).
    package let leaseDuration: TimeInterval?
    /// Whether this instance's claims take hits under another instance's backoff (their
    /// `next_attempt_at` ahead): an operator's replay, which sends everything waiting now.
    package let claimsThroughBackoff: Bool
    /// The most hits the fleet's table keeps for one environment. The cap is for outages: while
    /// the events endpoint answers, each instance's own backpressure keeps its backlog far below
    /// it. Past it, the instance whose write found the excess deletes the oldest hits no instance
    /// holds in flight, counts them as evicted (`FlagshipInstrumentation`, the tracking counts) and
    /// logs it. The check runs on a write at most every `capCheckInterval` per instance, so the
    /// table may pass the cap by what the fleet writes in that time.
    public let maximumHits: Int
    /// 1,000,000 hits per environment: about 1 GB of rows and indexes at the SDK's hit sizes.
    public static let defaultMaximumHits = 1_000_000
    /// How often (at most) an instance checks the cap on a write: 5 s, where a test shortens it.
    package let capCheckInterval: TimeInterval
    /// When each environment's cap was last checked by this instance (unix ms).
    private let capChecks = Locked<[String: Int64]>([:])
    /// Who holds a claim on hits, as `hits.lease_owner` shows it: `<host> pid <pid> <instance>`.
    let instanceName = "\(ProcessInfo.processInfo.hostName) pid \(ProcessInfo.processInfo.processIdentifier) \(UUID().uuidString.prefix(8).lowercased())"
    let client: PostgresClient
    /// The thread the SDK's calls into PostgreSQL run their tasks on (`BoundedPostgresCalls`).
    let executor = ThreadExecutor(name: "io.flagship.postgres")
    /// PostgreSQL's clock against this instance's, for hits written in an app's transaction
    /// (`FSVisitor.sendHit(_:inTransactionOn:logger:)`), measured on the app's connection.
    let transactionClock = DatabaseClockOffset()
    /// The database of each connection an app wrote hits through (read once per connection).
    let transactionIdentities = ConnectionIdentities()
    /// This store's database, read once through its own client.
    private let ownIdentity = Locked<DatabaseIdentity?>(nil)

    /// The store's database (`DatabaseIdentity`), as its own client reaches it.
    func identity(logger: Logger) async throws -> DatabaseIdentity {
        if let known = ownIdentity.withLock({ $0 }) { return known }
        let identity = try await client.withConnection { try await DatabaseIdentity.read(on: $0, logger: logger) }
        ownIdentity.withLock { $0 = identity }
        return identity
    }
    /// How to open a connection of its own (a store made from a location), for `prepare()`, or
    /// why its TLS settings cannot be used (which `prepare()` throws); `nil` for a store made
    /// from a client.
    private let connection: Result<PostgresConnection.Configuration, FlagshipPostgresError>?
    private let runner: Task<Void, Never>?
    private let sharesDatabase: Bool
    let logger: Logger
    /// What the last `prepare()` found: `nil` until one has ended.
    private let preparation = Locked<Result<Int, FlagshipPostgresError>?>(nil)

    /// Why the SDK may never use the store: `prepare()` refused it (wrong credentials, another
    /// application's database, a newer schema or another history). The SDK then keeps everything
    /// in its local store and never writes to this database. A server that could not be reached
    /// is no refusal: the first call that reaches it prepares the store.
    package var refusal: FlagshipPostgresError? {
        guard case .failure(let error)? = preparation.withLock({ $0 }), error.code != .unreachable else { return nil }
        return error
    }

    /// Whether a write at `now` (unix ms) checks `envId`'s cap: the first write, then one every
    /// `capCheckInterval`. A `true` is taken: the next write within the interval gets `false`.
    func capCheckIsDue(envId: String, now: Int64) -> Bool {
        let interval = Int64((capCheckInterval * 1000).rounded())
        return capChecks.withLock { checks in
            if let last = checks[envId], now >= last, now - last < interval { return false }
            checks[envId] = now
            return true
        }
    }

    /// Prepares the store unless a `prepare()` succeeded already; throws a refusal at once.
    package func ensurePrepared() async throws(FlagshipPostgresError) {
        switch preparation.withLock({ $0 }) {
        case .success?:
            return
        case .failure(let error)? where error.code != .unreachable:
            throw error
        default:
            try await prepare(timeout: callTimeout)
        }
    }

    /// A store on its own client, run until `close()`. `sharesDatabase`: the database may hold
    /// other applications' tables beside the `flagship` schema (otherwise it must be empty or ours).
    public convenience init(_ location: Location, sharesDatabase: Bool = false, maximumHits: Int = FlagshipPostgresStore.defaultMaximumHits,
                            logger: Logger = Logger(label: "io.flagship.postgres")) {
        self.init(location, sharesDatabase: sharesDatabase, logger: logger, callTimeout: Self.defaultCallTimeout,
                  retryAfter: Self.defaultRetryAfter, maximumHits: maximumHits)
    }

    /// A store whose claims take the hits that other instances' failed sends put under backoff:
    /// for `flagship replay`, an operator's request to send everything waiting now.
    package static func claimingThroughBackoff(_ location: Location,
                                               logger: Logger = Logger(label: "io.flagship.postgres")) -> FlagshipPostgresStore {
        FlagshipPostgresStore(location, sharesDatabase: false, logger: logger, callTimeout: defaultCallTimeout,
                              retryAfter: defaultRetryAfter, claimsThroughBackoff: true)
    }

    static let defaultCallTimeout: Duration = .seconds(5)
    static let defaultRetryAfter: TimeInterval = 5

    /// With the waits a test shortens.
    package init(_ location: Location, sharesDatabase: Bool, logger: Logger, callTimeout: Duration, retryAfter: TimeInterval,
                 leaseDuration: TimeInterval? = nil, claimsThroughBackoff: Bool = false,
                 maximumHits: Int = FlagshipPostgresStore.defaultMaximumHits, capCheckInterval: TimeInterval = 5) {
        self.maximumHits = max(1, maximumHits)
        self.capCheckInterval = capCheckInterval
        self.callTimeout = callTimeout
        self.retryAfter = retryAfter
        self.leaseDuration = leaseDuration
        self.claimsThroughBackoff = claimsThroughBackoff
        var configuration = PostgresClient.Configuration(host: location.host, port: location.port, username: location.username,
                                                         password: location.password, database: location.database,
                                                         tls: location.security.clientTLS)
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.maximumConnections = 8
        // The pool says each failed connection attempt at info, and retries for as long as the
        // server is away: the store says it once, at `prepare()`, so the pool speaks from notice up.
        var background = logger
        background.logLevel = max(logger.logLevel, .notice)
        let client = PostgresClient(configuration: configuration, backgroundLogger: background)
        self.client = client
        connection = Result { () throws(FlagshipPostgresError) in
            var direct = PostgresConnection.Configuration(host: location.host, port: location.port, username: location.username,
                                                          password: location.password, database: location.database,
                                                          tls: try location.security.connectionTLS())
            direct.options.connectTimeout = .seconds(5)
            return direct
        }
        runner = Task { await client.run() }
        self.location = location.description
        self.sharesDatabase = sharesDatabase
        self.logger = logger
    }

    /// A store on its own client, as `init(_:sharesDatabase:logger:)`, at the location `url`
    /// names (`Location(url:)`).
    /// - Throws: `FlagshipPostgresError` with code `unreachable` when `url` is not a PostgreSQL
    ///   URL naming a user and a database.
    public convenience init(url: String, sharesDatabase: Bool = false, maximumHits: Int = FlagshipPostgresStore.defaultMaximumHits,
                            logger: Logger = Logger(label: "io.flagship.postgres")) throws(FlagshipPostgresError) {
        self.init(try Location(url: url), sharesDatabase: sharesDatabase, maximumHits: maximumHits, logger: logger)
    }

    /// A store on the app's client, which the app runs (`client.run()`) and closes.
    public init(client: PostgresClient, location: String, sharesDatabase: Bool = false,
                maximumHits: Int = FlagshipPostgresStore.defaultMaximumHits, logger: Logger = Logger(label: "io.flagship.postgres")) {
        self.maximumHits = max(1, maximumHits)
        capCheckInterval = 5
        callTimeout = Self.defaultCallTimeout
        retryAfter = Self.defaultRetryAfter
        leaseDuration = nil
        claimsThroughBackoff = false
        self.client = client
        connection = nil
        runner = nil
        self.location = location
        self.sharesDatabase = sharesDatabase
        self.logger = logger
    }

    /// Connects and brings the schema to this build's version; returns it. Throws, having written
    /// nothing, for a database that is not ours, a newer schema or an edited history; and for a
    /// server that cannot be reached or refuses the credentials.
    @discardableResult
    public func prepare(timeout: Duration = .seconds(10)) async throws(FlagshipPostgresError) -> Int {
        do throws(FlagshipPostgresError) {
            let version = try await migrate(timeout: timeout)
            preparation.withLock { $0 = .success(version) }
            return version
        } catch {
            preparation.withLock { $0 = .failure(error) }
            throw error
        }
    }

    private func migrate(timeout: Duration) async throws(FlagshipPostgresError) -> Int {
        let (client, sharesDatabase, logger, location, connection) = (client, sharesDatabase, logger, location, connection)
        let migrate: @Sendable () async throws -> PostgresMigrator.Outcome = {
            guard let connection = try connection?.get() else {
                return try await client.withConnection { try await PostgresMigrator().migrate($0, sharesDatabase: sharesDatabase, logger: logger) }
            }
            // Its own connection, not the pool's: the pool retries a refused connection or
            // credentials for as long as it runs, where this says why at once.
            let direct = try await PostgresConnection.connect(configuration: connection, id: 0, logger: logger)
            do {
                let outcome = try await PostgresMigrator().migrate(direct, sharesDatabase: sharesDatabase, logger: logger)
                try? await direct.close()
                return outcome
            } catch {
                try? await direct.close()
                throw error
            }
        }
        // Not a task group: a group waits for all its tasks, and a connection attempt to a
        // server that is away may not answer its cancellation at once. The attempt left behind
        // ends by itself (the connect timeout).
        let clock = SystemClock()
        let result = await firstOf(deadline: clock.now().addingTimeInterval(timeout.inSeconds), clock: clock) {
            (finish: @escaping @Sendable (Result<PostgresMigrator.Outcome, any Error>) -> Void) in
            Task {
                do { finish(.success(try await migrate())) } catch { finish(.failure(error)) }
            }
        }
        let outcome: PostgresMigrator.Outcome
        switch result {
        case .success(let value)?:
            outcome = value
        case .failure(let error)?:
            throw FlagshipPostgresError(error, doing: "preparing the PostgreSQL store")
        case nil:
            throw FlagshipPostgresError(code: .unreachable, description: "preparing the PostgreSQL store: no connection to "
                + "\(location) within \(timeout): check the host, the port and that the server runs")
        }
        if outcome.fromVersion < outcome.toVersion {
            logger.info("PostgreSQL store at schema version \(outcome.toVersion) (was \(outcome.fromVersion))", metadata: ["location": "\(location)"])
        }
        return outcome.toVersion
    }

    /// Ends the client the store made (not an app's). Safe to call twice.
    public func close() async {
        executor.shutdown()
        guard let runner else { return }
        runner.cancel()
        await runner.value
    }
}
#endif
