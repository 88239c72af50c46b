#if Postgres
import CSQLite
import Flagship
import FlagshipPostgres
import Foundation
import Logging
import PostgresNIO

// One instance of a fleet, as a process of its own, for the PostgreSQL fleet tests:
//
//   flagship-fleet-probe decide <postgres URL> <server URL> <cache dir> <visitor id>
//     Bucketing mode: waits for a bucketing file, decides for the visitor, prints
//     `variation <campaign id> <variation id>` for each campaign, and closes.
//   flagship-fleet-probe send <postgres URL> <server URL> <cache dir> <prefix> <count> <lease s>
//     Decision API mode: sends <count> awaited events `<prefix>-<n>`, 8 at a time; prints
//     `ack <prefix>-<n>` once each `try await sendHit` returned (committed), then `sent`; goes on
//     delivering until standard input ends, then closes and prints `closed`.
//   flagship-fleet-probe erase <postgres URL> <server URL> <cache dir> <visitor id>
//     Withdraws the visitor's consent and closes (which waits for the erasure).
//   flagship-fleet-probe order <postgres URL> <server URL> <cache dir> <order id> [<lease s>]
//     Decision API mode: in one transaction of its own connection, inserts the order into
//     `shop_orders` (made if missing) and writes its TRANSACTION hit (visitor `buyer`) with
//     `sendHit(_:inTransactionOn:logger:)`; prints `committed` after the commit, then waits
//     until standard input ends (the test kills it before).
//   flagship-fleet-probe order-sqlite - <server URL> <cache dir> <order id>
//     The same without PostgreSQL: the SDK's store is `<cache dir>/shop.sqlite`, the order goes
//     to a `shop_orders` table of that file, through a connection the probe opens itself.
//
// The password comes from PGPASSWORD. Output lines are written at once: the test reads them
// while this runs, and may kill it with SIGKILL at any line.

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("flagship-fleet-probe: \(message)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 5, let server = URL(string: arguments[2]) else {
    fail("usage: flagship-fleet-probe decide|send|erase <postgres URL> <server URL> <cache dir> <arguments...>")
}
let (command, url, cache) = (arguments[0], arguments[1], URL(fileURLWithPath: arguments[3]))
let logger = Logger(label: "io.flagship.fleet-probe")

/// Waits until the test closes standard input (or kills this process).
func waitForEndOfInput() async {
    let input = FileHandle.standardInput
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async {
            while !input.availableData.isEmpty {}
            done.resume()
        }
    }
}

if command == "order-sqlite" {
    let file = cache.appendingPathComponent("shop.sqlite")
    Flagship.sharedInstance.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
        .withDecisionBaseURL(server.appendingPathComponent("v2"))
        .withEventsBaseURL(server)
        .withCacheFile(file)
        .withLogLevel(.WARNING)
        .build())
    let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
    var db: OpaquePointer?
    guard sqlite3_open_v2(file.path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else { fail("cannot open \(file.path)") }
    sqlite3_busy_timeout(db, 5_000)
    func execute(_ sql: String) {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { fail("\(sql): \(String(cString: sqlite3_errmsg(db)))") }
    }
    execute("CREATE TABLE IF NOT EXISTS shop_orders (id TEXT PRIMARY KEY, total REAL NOT NULL)")
    execute("BEGIN IMMEDIATE")
    execute("INSERT INTO shop_orders (id, total) VALUES ('\(arguments[4])', 42.5)")
    do {
        try visitor.sendHit(FSTransaction(transactionId: arguments[4], affiliation: "checkout"), inTransactionOn: db)
    } catch {
        fail("\(error)")
    }
    execute("COMMIT")
    say("committed")
    await waitForEndOfInput()
    sqlite3_close(db)
    await closeSDK()
    say("closed")
    exit(0)
}

/// The SDK closed, its last batch sent within its deadline (the `async` close, which top-level
/// code would not pick by itself).
func closeSDK() async {
    await Flagship.sharedInstance.close()
}

let lease = command == "send" && arguments.count == 7 ? TimeInterval(arguments[6])
    : command == "order" && arguments.count == 6 ? TimeInterval(arguments[5]) : nil
let store: FlagshipPostgresStore
do {
    store = FlagshipPostgresStore(try .init(url: url), sharesDatabase: false, logger: logger, callTimeout: .seconds(5),
                                  retryAfter: 1, leaseDuration: lease)
    try await store.prepare()
} catch {
    fail("\(error)")
}

let builder = FSConfigBuilder()
    .withDecisionBaseURL(server.appendingPathComponent("v2"))
    .withEventsBaseURL(server)
    .withCacheDirectory(cache)
    .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 20, batchIntervalTimer: 0.05))
    .withLogLevel(.WARNING)
    .withPostgresStore(store)
let flagship = Flagship.sharedInstance

switch command {
case "decide":
    flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: builder.Bucketing().withBucketingBaseURL(server).build())
    let visitor = await flagship.newVisitor(visitorId: arguments[4], hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
    try await visitor.fetchFlags()
    let assigned = Set(visitor.getFlags().keys().map { key in
        let metadata = visitor.getFlag(key: key).metadata()
        return "variation \(metadata.campaignId) \(metadata.variationId)"
    })
    for line in assigned.sorted() { say(line) }
case "send":
    guard let count = Int(arguments[5]) else { fail("send: <count> is not a number") }
    flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: builder.build())
    let prefix = arguments[4]
    let visitor = await flagship.newVisitor(visitorId: prefix, hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<8 {
            group.addTask {
                for number in stride(from: lane + 1, through: count, by: 8) {
                    let label = "\(prefix)-\(number)"
                    try await visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: label))
                    say("ack \(label)")
                }
            }
        }
        try await group.waitForAll()
    }
    say("sent")
    // Delivers (its own hits and the fleet's) until the test closes standard input.
    await waitForEndOfInput()
case "order":
    flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: builder.build())
    let visitor = await flagship.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
    do {
        try await placeOrder(arguments[4], visitor: visitor)
        say("committed")
    } catch {
        fail("order: \(String(reflecting: error))")
    }
    await waitForEndOfInput()
case "erase":
    flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: builder.build())
    let visitor = await flagship.newVisitor(visitorId: arguments[4], hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
    visitor.setConsent(hasConsented: false)
default:
    fail("unknown command \(command)")
}
/// The order and its TRANSACTION hit, in one transaction of a connection of the probe's own.
func placeOrder(_ orderId: String, visitor: FSVisitor) async throws {
    guard let components = URLComponents(string: url), let host = components.host, let user = components.user else {
        fail("order: \(url) names no host or user")
    }
    let connection = try await PostgresConnection.connect(
        configuration: .init(host: host, port: components.port ?? 5432, username: user,
                             password: ProcessInfo.processInfo.environment["PGPASSWORD"],
                             database: String(components.path.dropFirst()), tls: .disable),
        id: 1, logger: logger)
    try await connection.query("CREATE TABLE IF NOT EXISTS shop_orders (id text PRIMARY KEY, total numeric NOT NULL)", logger: logger)
    try await connection.withTransaction(logger: logger) { connection in
        try await connection.query("INSERT INTO shop_orders (id, total) VALUES (\(orderId), 42.5)", logger: logger)
        try await visitor.sendHit(FSTransaction(transactionId: orderId, affiliation: "checkout"), inTransactionOn: connection, logger: logger)
    }
    try await connection.close()
}

/// Closes the SDK (its last batch, within its deadline), then the store's client.
func closeAll() async {
    await flagship.close()
    await store.close()
}
await closeAll()
say("closed")
#else
import Foundation

FileHandle.standardError.write(Data("flagship-fleet-probe is built with the package trait Postgres: swift build --traits Postgres\n".utf8))
exit(2)
#endif
