#if Postgres
// The example of "Hits in the app's transaction" in the article "Fleets on PostgreSQL"
// (Sources/Flagship/Flagship.docc/Fleets.md), verbatim: compiled here, and run by
// PostgresHitsInTransactionTests.testTheArticlesExamplePlacesAnOrderWithItsHit
// (DocumentationSnippetTests checks that it is here).
import Flagship
import FlagshipPostgres
import Logging
import PostgresNIO

/// An order and its hit in one transaction of the app's: both committed, or neither.
func placeOrder(_ id: String, total: Double, by visitor: FSVisitor, on client: PostgresClient, logger: Logger) async throws {
    let hit = FSTransaction(transactionId: id, affiliation: "checkout")
    hit.revenue = Float(total)
    try await client.withTransaction(logger: logger) { connection in
        try await connection.query("INSERT INTO shop_orders (id, total) VALUES (\(id), \(total))", logger: logger)
        // A refused hit throws before any statement; a failed one is rolled back to its savepoint.
        try await visitor.sendHit(hit, inTransactionOn: connection, logger: logger)
    }
}
#endif
