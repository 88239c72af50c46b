import BenchSQLite
import BenchSupport
import Benchmark
import Flagship
import FlagshipLocalServer
import FlagshipPostgres
import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport

/// Issue 34's figure: an app's order transaction with its TRANSACTION hit written in it
/// (`sendHit(_:inTransactionOn:)`), beside the same transaction without the hit, and beside the
/// way without this API (the transaction, then `try await sendHit`), in the same run:
/// on SQLite (the app's tables in the SDK's file, through the app's own connection) and on
/// PostgreSQL (the fleet's database, through the app's postgres-nio connection). The SDK runs
/// beside it, its sender delivering to the local server.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput],
        timeUnits: .microseconds,
        warmupIterations: 20,
        maxDuration: .seconds(5),
        maxIterations: 20_000
    )

    let sqlite = Box<SQLiteShop>()
    for way in HitWay.allCases {
        shopBenchmark("SQLite: order transaction (BEGIN IMMEDIATE, INSERT, COMMIT)\(way.suffix)", configuration, box: sqlite,
                      start: SQLiteShop.start) { try await $0.placeOrder(way) }
    }
    // What the hit itself costs in a transaction, the commit apart: 100 hits in one transaction.
    shopBenchmark("SQLite: 100 hits written in one transaction, its commit shared", configuration, box: sqlite,
                  start: SQLiteShop.start) { try $0.writeHits(100) }

    let postgres = Box<PostgresShop>()
    for way in HitWay.allCases {
        shopBenchmark("PostgreSQL: order transaction (withTransaction, INSERT)\(way.suffix)", configuration, box: postgres,
                      start: PostgresShop.start) { try await $0.placeOrder(way) }
    }
}

/// A benchmark that runs `body` once per iteration on a shop `start` made (and stops it after).
private func shopBenchmark<Shop: StoppableShop>(_ name: String, _ configuration: Benchmark.Configuration, box: Box<Shop>,
                                                start: @escaping @Sendable (Box<Shop>) async throws -> Shop,
                                                _ body: @escaping @Sendable (Shop) async throws -> Void) {
    Benchmark(name, configuration: configuration) { (benchmark: Benchmark, shop: Shop) async in
        for _ in benchmark.scaledIterations {
            do {
                try await body(shop)
            } catch {
                benchmark.error("\(error)")
            }
        }
    } setup: {
        try await start(box)
    } teardown: {
        await box.value?.stop()
    }
}

protocol StoppableShop: AnyObject, Sendable {
    func stop() async
}

/// How an order's hit is sent: not at all (the baseline), in the order's transaction, or after
/// its commit with `try await sendHit` (the hit's own group commit: durable too, not atomic with
/// the order).
enum HitWay: CaseIterable {
    case none, inTransaction, awaitedAfterCommit

    var suffix: String {
        switch self {
        case .none: return ""
        case .inTransaction: return " + its hit in it (sendHit inTransactionOn:)"
        case .awaitedAfterCommit: return ", then try await sendHit"
        }
    }
}

private let envId = "bench_env"
private let apiKey = "bench_key"

/// An order's hit: the order's id, its revenue.
private func orderHit(_ id: String) -> FSTransaction {
    let hit = FSTransaction(transactionId: id, affiliation: "checkout")
    hit.revenue = 42.5
    return hit
}

/// The SDK on a SQLite file, the local server taking its hits, and the app's own connection to
/// the file (synchronous = NORMAL, as the SDK's), with an `orders` table of the app's.
final class SQLiteShop: StoppableShop, @unchecked Sendable {
    // `@unchecked`: used by one benchmark at a time, never concurrently (package-benchmark runs
    // a benchmark's iterations on one thread, and setup and teardown around them).
    private let server: LocalFlagshipServer
    private let directory: TemporaryDirectory
    private let visitor: FSVisitor
    private let db: OpaquePointer
    private let insert: OpaquePointer
    private var next = 0

    private init(server: LocalFlagshipServer, directory: TemporaryDirectory, visitor: FSVisitor, db: OpaquePointer, insert: OpaquePointer) {
        self.server = server
        self.directory = directory
        self.visitor = visitor
        self.db = db
        self.insert = insert
    }

    static func start(into box: Box<SQLiteShop>) async throws -> SQLiteShop {
        let server = LocalFlagshipServer(envId: envId, apiKey: apiKey)
        try server.start()
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("shop.sqlite")
        Flagship.sharedInstance.start(envId: envId, apiKey: apiKey, config: FSConfigBuilder()
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(file)
            .withLogLevel(.NONE)
            .build())
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        var db: OpaquePointer?
        guard sqlite3_open_v2(file.path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else {
            throw ShopFailure("cannot open \(file.path)")
        }
        sqlite3_busy_timeout(db, 5_000)
        try execute(db, "PRAGMA synchronous = NORMAL")
        try execute(db, "CREATE TABLE orders (id TEXT PRIMARY KEY, total REAL NOT NULL)")
        var insert: OpaquePointer?
        guard sqlite3_prepare_v2(db, "INSERT INTO orders (id, total) VALUES (?, 42.5)", -1, &insert, nil) == SQLITE_OK, let insert else {
            throw ShopFailure(String(cString: sqlite3_errmsg(db)))
        }
        let shop = SQLiteShop(server: server, directory: directory, visitor: visitor, db: db, insert: insert)
        box.value = shop
        return shop
    }

    func placeOrder(_ way: HitWay) async throws {
        next += 1
        let id = "o-\(next)"
        try Self.execute(db, "BEGIN IMMEDIATE")
        do {
            sqlite3_bind_text(insert, 1, id, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
            defer { sqlite3_reset(insert) }
            guard sqlite3_step(insert) == SQLITE_DONE else { throw ShopFailure(String(cString: sqlite3_errmsg(db))) }
            if way == .inTransaction { try visitor.sendHit(orderHit(id), inTransactionOn: db) }
            try Self.execute(db, "COMMIT")
        } catch {
            sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
            throw error
        }
        if way == .awaitedAfterCommit { try await visitor.sendHit(orderHit(id)) }
    }

    func writeHits(_ count: Int) throws {
        try Self.execute(db, "BEGIN IMMEDIATE")
        for _ in 0..<count {
            next += 1
            try visitor.sendHit(orderHit("o-\(next)"), inTransactionOn: db)
        }
        try Self.execute(db, "COMMIT")
    }

    private static func execute(_ db: OpaquePointer, _ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw ShopFailure("\(sql): \(String(cString: sqlite3_errmsg(db)))") }
    }

    func stop() async {
        sqlite3_finalize(insert)
        sqlite3_close(db)
        await Flagship.sharedInstance.close()
        server.stop()
        directory.remove()
    }
}

/// The SDK on a PostgreSQL store of this run's throwaway server, the local server taking its
/// hits, and a connection of the app's to the same database, with a `shop_orders` table.
final class PostgresShop: StoppableShop, @unchecked Sendable {
    // `@unchecked`: as `SQLiteShop`.
    private let server: LocalFlagshipServer
    private let directory: TemporaryDirectory
    private let store: FlagshipPostgresStore
    private let connection: PostgresConnection
    private let visitor: FSVisitor
    private let logger = Logger(label: "bench")
    private var next = 0

    private init(server: LocalFlagshipServer, directory: TemporaryDirectory, store: FlagshipPostgresStore,
                 connection: PostgresConnection, visitor: FSVisitor) {
        self.server = server
        self.directory = directory
        self.store = store
        self.connection = connection
        self.visitor = visitor
    }

    static func start(into box: Box<PostgresShop>) async throws -> PostgresShop {
        let postgres: TemporaryPostgres
        switch TemporaryPostgres.sharedDurable {
        case .success(let server): postgres = server
        case .failure(let reason): throw ShopFailure("this suite needs PostgreSQL (make deps installs it): \(reason)")
        }
        let database = try postgres.createDatabase("shop")
        let server = LocalFlagshipServer(envId: envId, apiKey: apiKey)
        try server.start()
        let directory = try TemporaryDirectory()
        let store = FlagshipPostgresStore(.init(host: postgres.host, port: postgres.port, username: postgres.username,
                                                password: postgres.password, database: database))
        try await store.prepare()
        Flagship.sharedInstance.start(envId: envId, apiKey: apiKey, config: FSConfigBuilder()
            .withDecisionBaseURL(server.decisionBaseURL)
            .withEventsBaseURL(server.eventsBaseURL)
            .withCacheDirectory(directory.url)
            .withLogLevel(.NONE)
            .withPostgresStore(store)
            .build())
        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        let logger = Logger(label: "bench")
        let connection = try await PostgresConnection.connect(
            configuration: .init(host: postgres.host, port: postgres.port, username: postgres.username,
                                 password: postgres.password, database: database, tls: .disable),
            id: 1, logger: logger)
        try await connection.query("CREATE TABLE shop_orders (id text PRIMARY KEY, total numeric NOT NULL)", logger: logger)
        let shop = PostgresShop(server: server, directory: directory, store: store, connection: connection, visitor: visitor)
        box.value = shop
        return shop
    }

    func placeOrder(_ way: HitWay) async throws {
        next += 1
        let id = "o-\(next)"
        let (visitor, logger) = (visitor, logger)
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("INSERT INTO shop_orders (id, total) VALUES (\(id), 42.5)", logger: logger)
            if way == .inTransaction { try await visitor.sendHit(orderHit(id), inTransactionOn: connection, logger: logger) }
        }
        if way == .awaitedAfterCommit { try await visitor.sendHit(orderHit(id)) }
    }

    func stop() async {
        try? await connection.close()
        await Flagship.sharedInstance.close()
        await store.close()
        server.stop()
        directory.remove()
    }
}

struct ShopFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
