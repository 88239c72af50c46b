#if Postgres
import FlagshipLocalServer
import Foundation
import Logging
import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import Flagship
@testable import FlagshipPostgres

/// `sendHit(_:inTransactionOn:logger:)`: a hit written into `flagship.hits` through the app's
/// own connection, inside the app's transaction, commits or rolls back with the app's rows; the
/// fleet's senders deliver a committed one once, even when the process that wrote it is killed
/// before any send.
final class PostgresHitsInTransactionTests: PostgresTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-transactional-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// An instance of the fleet on `store`, sending to `server` (or to nowhere: hits then wait).
    private func instance(store: FlagshipPostgresStore, events: URL, cache: String = "instance") -> Flagship {
        let flagship = Flagship()
        flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
            .withDecisionBaseURL(events.appendingPathComponent("v2"))
            .withEventsBaseURL(events)
            .withCacheDirectory(directory.appendingPathComponent(cache))
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 5, batchIntervalTimer: 0.05))
            .withLogLevel(.WARNING)
            .withPostgresStore(store)
            .build())
        return flagship
    }

    /// Nothing listens there: every send fails at once, and the hits wait in the table.
    private static let nowhere = URL(string: "http://127.0.0.1:1")!

    private static func order(_ id: String) -> FSTransaction {
        let transaction = FSTransaction(transactionId: id, affiliation: "checkout")
        transaction.revenue = 42.5
        return transaction
    }

    private struct Shop {
        let postgres: TemporaryPostgres
        let database: String
        let store: FlagshipPostgresStore
        let connection: PostgresConnection
    }

    /// A migrated database with the app's own `shop_orders` table, a store prepared on it, and a
    /// connection of the app's.
    private func shop() async throws -> Shop {
        let postgres = try postgres()
        let database = try await migratedDatabase(postgres)
        _ = try postgres.psql(database, "CREATE TABLE shop_orders (id text PRIMARY KEY, total numeric NOT NULL)")
        let store = store(postgres, database: database)
        try await store.prepare()
        let connection = try await connect(postgres, database: database)
        addTeardownBlock {
            try? await connection.close()
            await store.close()
        }
        return Shop(postgres: postgres, database: database, store: store, connection: connection)
    }

    private func transactionRows(_ shop: Shop) throws -> String {
        try shop.postgres.psql(shop.database, "SELECT count(*) FROM flagship.hits WHERE type = 'TRANSACTION'")
    }

    private func deliveredOrders(_ server: LocalFlagshipServer) -> [String] {
        server.hits.filter { $0["t"]?.stringValue == "TRANSACTION" }.compactMap { $0["tid"]?.stringValue }
    }

    /// Waits (20 s at most) until `condition` holds.
    private func waitUntil(_ description: String, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try !condition() {
            guard ContinuousClock.now < deadline else { return XCTFail("timed out waiting until \(description)") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func testACommittedOrdersHitIsDeliveredOnceByTheFleet() async throws {
        let shop = try await shop()
        let server = try startedFleetServer()
        defer { server.stop() }
        let flagship = instance(store: shop.store, events: server.baseURL)
        let visitor = await flagship.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()

        try await shop.connection.withTransaction(logger: logger) { connection in
            try await connection.query("INSERT INTO shop_orders (id, total) VALUES ('o-1', 42.5)", logger: logger)
            try await visitor.sendHit(Self.order("o-1"), inTransactionOn: connection, logger: logger)
        }

        try await waitUntil("the hit is delivered and its row deleted") {
            try deliveredOrders(server) == ["o-1"] && transactionRows(shop) == "0"
        }
        let hit = try XCTUnwrap(server.hits.first { $0["t"]?.stringValue == "TRANSACTION" })
        XCTAssertEqual(hit["vid"]?.stringValue, "buyer")
        XCTAssertEqual(hit["tr"]?.doubleValue, 42.5)
        await flagship.close()
        XCTAssertEqual(deliveredOrders(server), ["o-1"], "once")
        XCTAssertEqual(try shop.postgres.psql(shop.database, "SELECT count(*) FROM shop_orders"), "1")
    }

    private struct Rollback: Error {}

    func testARolledBackOrderSendsNothing() async throws {
        let shop = try await shop()
        let server = try startedFleetServer()
        defer { server.stop() }
        let flagship = instance(store: shop.store, events: server.baseURL)
        let visitor = await flagship.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()

        do {
            try await shop.connection.withTransaction(logger: logger) { connection in
                try await connection.query("INSERT INTO shop_orders (id, total) VALUES ('o-1', 42.5)", logger: logger)
                try await visitor.sendHit(Self.order("o-1"), inTransactionOn: connection, logger: logger)
                XCTAssertEqual(try transactionRows(shop), "0", "not seen outside the transaction before its commit")
                throw Rollback()
            }
            XCTFail("the transaction was to roll back")
        } catch let error as PostgresTransactionError where error.closureError is Rollback {
            XCTAssertNil(error.rollbackError)
        }

        // The consent hit, sent after the rollback, is delivered: the orders' hit would be by then.
        try await waitUntil("the consent hit is delivered") { server.hits.contains { $0["ea"]?.stringValue == "fs_consent" } }
        await flagship.close()
        XCTAssertEqual(deliveredOrders(server), [])
        XCTAssertEqual(try transactionRows(shop), "0")
        XCTAssertEqual(try shop.postgres.psql(shop.database, "SELECT count(*) FROM shop_orders"), "0")
    }

    /// The hit is written first; the app's own insert then breaks its primary key, which aborts
    /// the transaction: the hit goes with it.
    func testAnOrderRefusedByTheAppsOwnConstraintLeavesNoHit() async throws {
        let shop = try await shop()
        _ = try shop.postgres.psql(shop.database, "INSERT INTO shop_orders (id, total) VALUES ('o-1', 10)")
        let flagship = instance(store: shop.store, events: Self.nowhere)
        let visitor = await flagship.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()

        do {
            try await shop.connection.withTransaction(logger: logger) { connection in
                try await visitor.sendHit(Self.order("o-1"), inTransactionOn: connection, logger: logger)
                try await connection.query("INSERT INTO shop_orders (id, total) VALUES ('o-1', 42.5)", logger: logger)
            }
            XCTFail("the duplicate order was to be refused")
        } catch let error as PostgresTransactionError {
            XCTAssertEqual((error.closureError as? PSQLError)?.serverInfo?[.sqlState], "23505", String(reflecting: error))
        }

        XCTAssertEqual(try transactionRows(shop), "0")
        XCTAssertEqual(try shop.postgres.psql(shop.database, "SELECT total FROM shop_orders"), "10")
        await flagship.close()
    }

    /// Refused as `sendHit` refuses it, before any statement: the app's transaction goes on and
    /// commits its own rows.
    func testARefusedHitThrowsBeforeAnyStatementAndTheTransactionGoesOn() async throws {
        let shop = try await shop()
        let flagship = instance(store: shop.store, events: Self.nowhere)
        let visitor = await flagship.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        let shy = await flagship.newVisitor(visitorId: "shy", hasConsented: false, instanceType: .NEW_INSTANCE).buildAsync()

        try await shop.connection.withTransaction(logger: logger) { connection in
            try await connection.query("INSERT INTO shop_orders (id, total) VALUES ('o-1', 42.5)", logger: logger)
            do {
                try await visitor.sendHit(FSTransaction(transactionId: "o-1", affiliation: " "), inTransactionOn: connection, logger: logger)
                XCTFail("an empty affiliation was to be refused")
            } catch let error as FlagshipError {
                XCTAssertEqual(error, .invalidHit(.missingField(hit: "TRANSACTION", field: "ta")))
            }
            do {
                try await shy.sendHit(Self.order("o-1"), inTransactionOn: connection, logger: logger)
                XCTFail("a visitor without consent was to be refused")
            } catch let error as FlagshipError {
                XCTAssertEqual(error, .consentNotGiven(visitorId: "shy"))
            }
        }

        XCTAssertEqual(try shop.postgres.psql(shop.database, "SELECT count(*) FROM shop_orders"), "1", "the transaction committed")
        XCTAssertEqual(try transactionRows(shop), "0")
        await flagship.close()
    }

    /// The article's `placeOrder` (FleetsArticleTransactionExample.swift), on a `PostgresClient`:
    /// the order committed with its hit, delivered once; a second order whose hit is refused
    /// leaves neither.
    func testTheArticlesExamplePlacesAnOrderWithItsHit() async throws {
        let shop = try await shop()
        let server = try startedFleetServer()
        defer { server.stop() }
        let flagship = instance(store: shop.store, events: server.baseURL)
        let visitor = await flagship.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()
        let client = PostgresClient(configuration: .init(host: shop.postgres.host, port: shop.postgres.port,
                                                         username: shop.postgres.username, password: shop.postgres.password,
                                                         database: shop.database, tls: .disable))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            try await placeOrder("o-1", total: 42.5, by: visitor, on: client, logger: logger)
            do {
                try await placeOrder("", total: 10, by: visitor, on: client, logger: logger)
                XCTFail("an order without an id was to be refused")
            } catch let error as PostgresTransactionError {
                XCTAssertEqual(error.closureError as? FlagshipError, .invalidHit(.missingField(hit: "TRANSACTION", field: "tid")))
            }
            group.cancelAll()
        }

        try await waitUntil("the order's hit is delivered") { deliveredOrders(server) == ["o-1"] }
        await flagship.close()
        XCTAssertEqual(deliveredOrders(server), ["o-1"])
        XCTAssertEqual(try shop.postgres.psql(shop.database, "SELECT id FROM shop_orders"), "o-1", "the refused order rolled back")
    }

    /// An SDK whose hits are not in PostgreSQL: no instance would send the row, so none is written.
    func testAnSDKWithoutAPostgresStoreRefusesTheHit() async throws {
        let shop = try await shop()
        let flagship = Flagship()
        flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
            .withDecisionBaseURL(Self.nowhere).withEventsBaseURL(Self.nowhere)
            .withCacheDirectory(directory.appendingPathComponent("alone")).withLogLevel(.WARNING).build())
        let visitor = await flagship.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()

        do {
            try await visitor.sendHit(Self.order("o-1"), inTransactionOn: shop.connection, logger: logger)
            XCTFail("the hit was to be refused")
        } catch let error as FlagshipError where error.code == .hitNotWritten {
            let reason = try XCTUnwrap(error.cacheError)
            XCTAssertEqual(reason.code, .notTheStore, "\(reason)")
        }
        XCTAssertEqual(try transactionRows(shop), "0")
        await flagship.close()
    }

    /// The connection holds no transaction: the hit would autocommit and be sent even if the app
    /// then gave up its order. Refused, nothing written, as the SQLite form refuses it.
    func testAConnectionWithoutATransactionIsRefusedAndNothingIsWritten() async throws {
        let shop = try await shop()
        let flagship = instance(store: shop.store, events: Self.nowhere)
        let visitor = await flagship.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()

        do {
            try await visitor.sendHit(Self.order("o-1"), inTransactionOn: shop.connection, logger: logger)
            XCTFail("the hit was to be refused")
        } catch let error as FlagshipError where error.code == .hitNotWritten {
            let reason = try XCTUnwrap(error.cacheError)
            XCTAssertEqual(reason.code, .notInTransaction, "\(reason)")
        }
        XCTAssertEqual(try transactionRows(shop), "0")
        // The connection still works, and inside a transaction the hit is taken.
        try await shop.connection.withTransaction(logger: logger) { connection in
            try await visitor.sendHit(Self.order("o-2"), inTransactionOn: connection, logger: logger)
        }
        XCTAssertEqual(try transactionRows(shop), "1")
        await flagship.close()
    }

    /// A second database of the same server, with a migrated `flagship` schema of its own: a hit
    /// committed there would never be sent (no instance reads it). Refused, and the app's
    /// transaction goes on and commits its own rows.
    func testAConnectionToAnotherDatabaseWithAFlagshipSchemaIsRefused() async throws {
        let shop = try await shop()
        let other = try await migratedDatabase(shop.postgres)
        _ = try shop.postgres.psql(other, "CREATE TABLE shop_orders (id text PRIMARY KEY, total numeric NOT NULL)")
        let connection = try await connect(shop.postgres, database: other)
        addTeardownBlock { try? await connection.close() }
        let flagship = instance(store: shop.store, events: Self.nowhere)
        let visitor = await flagship.newVisitor(visitorId: "buyer", hasConsented: true, instanceType: .NEW_INSTANCE).buildAsync()

        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("INSERT INTO shop_orders (id, total) VALUES ('o-1', 42.5)", logger: logger)
            do {
                try await visitor.sendHit(Self.order("o-1"), inTransactionOn: connection, logger: logger)
                XCTFail("the hit was to be refused")
            } catch let error as FlagshipError where error.code == .hitNotWritten {
                let reason = try XCTUnwrap(error.cacheError)
                XCTAssertEqual(reason.code, .notTheStore, "\(reason)")
                XCTAssertTrue(reason.description.contains(other), reason.description)
            }
        }
        XCTAssertEqual(try shop.postgres.psql(other, "SELECT count(*) FROM flagship.hits WHERE type = 'TRANSACTION'"), "0")
        XCTAssertEqual(try shop.postgres.psql(other, "SELECT count(*) FROM shop_orders"), "1", "the app's transaction committed")
        XCTAssertEqual(try transactionRows(shop), "0")

        // The store's own database, through another connection: taken.
        try await shop.connection.withTransaction(logger: logger) { connection in
            try await visitor.sendHit(Self.order("o-2"), inTransactionOn: connection, logger: logger)
        }
        XCTAssertEqual(try transactionRows(shop), "1")
        await flagship.close()
    }

    /// A process commits an order and its hit while its events endpoint is unreachable, and is
    /// killed with SIGKILL before any send reaches a server; another instance, started after,
    /// delivers the hit once. (The killed process's sender may hold the row at the kill, trying
    /// its dead endpoint: its 1 s lease lapses, as a dead instance's does.)
    func testAnOrderCommittedByAProcessKilledBeforeAnySendIsDeliveredOnceByTheNextInstance() async throws {
        let shop = try await shop()
        let server = try startedFleetServer()
        defer { server.stop() }
        let probe = try ProbeProcess(["order", shop.postgres.url(shop.database), Self.nowhere.absoluteString,
                                      directory.appendingPathComponent("killed").path, "o-killed", "1"],
                                     password: shop.postgres.password)
        try await probe.waitForLine(timeout: .seconds(60)) { $0 == "committed" }
        probe.kill()
        XCTAssertEqual(try transactionRows(shop), "1", "committed in the app's transaction")
        XCTAssertEqual(try shop.postgres.psql(shop.database, "SELECT id FROM shop_orders"), "o-killed")

        let flagship = instance(store: shop.store, events: server.baseURL, cache: "next")
        try await waitUntil("the killed process's hit is delivered") {
            try deliveredOrders(server) == ["o-killed"] && transactionRows(shop) == "0"
        }
        await flagship.close()
        XCTAssertEqual(deliveredOrders(server), ["o-killed"], "once")
        XCTAssertEqual(server.hits.first { $0["t"]?.stringValue == "TRANSACTION" }?["vid"]?.stringValue, "buyer")
    }
}

/// The same on SQLite: the app keeps its `shop_orders` table in the SDK's store file and writes
/// the hit through its own connection (the probe's `order-sqlite`); killed before any send, the
/// next start of the SDK on that file delivers the hit once. (Here for the probe, which the
/// PostgreSQL tests build; PostgreSQL itself is not used.)
final class SQLiteHitsInTransactionKillTests: XCTestCase {
    func testAnOrderCommittedByAProcessKilledBeforeAnySendIsDeliveredOnceAfterTheRestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-transactional-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = LocalFlagshipServer(envId: "fleet_env", apiKey: "fleet_key")
        try server.start()
        defer { server.stop() }

        let probe = try ProbeProcess(["order-sqlite", "-", "http://127.0.0.1:1", directory.path, "o-killed"], password: "")
        try await probe.waitForLine(timeout: .seconds(60)) { $0 == "committed" }
        probe.kill()

        let flagship = Flagship()
        flagship.start(envId: "fleet_env", apiKey: "fleet_key", config: FSConfigBuilder()
            .withDecisionBaseURL(server.decisionBaseURL).withEventsBaseURL(server.eventsBaseURL)
            .withCacheFile(directory.appendingPathComponent("shop.sqlite"))
            .withTrackingManagerConfig(FSTrackingManagerConfig(poolMaxSize: 5, batchIntervalTimer: 0.05))
            .withLogLevel(.WARNING)
            .build())
        var orders: [String] { server.hits.filter { $0["t"]?.stringValue == "TRANSACTION" }.compactMap { $0["tid"]?.stringValue } }
        let deadline = ContinuousClock.now + .seconds(20)
        while orders.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        await flagship.close()
        XCTAssertEqual(orders, ["o-killed"], "delivered once after the restart")
        XCTAssertEqual(server.hits.first { $0["t"]?.stringValue == "TRANSACTION" }?["vid"]?.stringValue, "buyer")
        let data = try FSVisitorData.read(visitorId: "buyer", storeFile: directory.appendingPathComponent("shop.sqlite"))
        XCTAssertFalse(data.hits.contains { $0.type == "TRANSACTION" }, "its row deleted once delivered")
    }
}
#endif
