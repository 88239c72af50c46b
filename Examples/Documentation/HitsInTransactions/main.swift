// The program of HitsAndDelivery.md (Sources/Flagship/Flagship.docc), verbatim: built by `make build`
// (FLAGSHIP_EXAMPLE=1, Package.swift), where this package's CSQLite module is at hand, and run
// offline by DocumentationSnippetTests.
import CSQLite                                      // your app's SQLite module (a system library over libsqlite3)
import Flagship
import FlagshipLocalServer
import Foundation

let server = LocalFlagshipServer(envId: "env", apiKey: "key")   // stands in for Flagship's hosts
try server.start()
let file = FileManager.default.temporaryDirectory.appendingPathComponent("shop-\(UUID().uuidString).sqlite")
Flagship.sharedInstance.start(envId: "env", apiKey: "key", config: FSConfigBuilder().DecisionApi()
    .withDecisionBaseURL(server.decisionBaseURL).withEventsBaseURL(server.eventsBaseURL)
    .withCacheFile(file)                            // the SDK's store: your tables go beside its own
    .build())
let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "alice", hasConsented: true, instanceType: .NEW_INSTANCE)
    .buildAsync()

// Your connection to the same file: read-write, waiting for the SDK's short writes.
var db: OpaquePointer?
guard sqlite3_open_v2(file.path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else { fatalError("cannot open the store") }
sqlite3_busy_timeout(db, 5_000)
func execute(_ sql: String) {
    guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { fatalError(String(cString: sqlite3_errmsg(db))) }
}
execute("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, total REAL NOT NULL)")

// An order and its hit: one transaction, one fact.
func placeOrder(_ id: String, total: Double, commit: Bool) throws {
    execute("BEGIN IMMEDIATE")
    var insert: OpaquePointer?
    sqlite3_prepare_v2(db, "INSERT INTO orders (id, total) VALUES (?, ?)", -1, &insert, nil)
    sqlite3_bind_text(insert, 1, id, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))   // SQLITE_TRANSIENT
    sqlite3_bind_double(insert, 2, total)
    let inserted = sqlite3_step(insert) == SQLITE_DONE
    sqlite3_finalize(insert)
    let hit = FSTransaction(transactionId: id, affiliation: "checkout")
    hit.revenue = Float(total)
    do {
        guard inserted else { throw CocoaError(.fileWriteUnknown) }
        try visitor.sendHit(hit, inTransactionOn: db)   // refused (invalid, no consent...): throws, nothing written
    } catch {
        execute("ROLLBACK")                         // neither the order nor its hit
        throw error
    }
    execute(commit ? "COMMIT" : "ROLLBACK")
}
try placeOrder("o-1", total: 42.5, commit: true)
try placeOrder("o-2", total: 10, commit: false)    // rolled back: no order, no hit
sqlite3_close(db)

Flagship.sharedInstance.close()                     // waits for the last round, which sends what waits
let orders = server.hits.filter { $0["t"]?.stringValue == "TRANSACTION" }.compactMap { $0["tid"]?.stringValue }
print("transactions received:", orders)             // ["o-1"]
server.stop()
try? FileManager.default.removeItem(at: file)
guard orders == ["o-1"] else { fatalError("expected only o-1, the committed order") }
