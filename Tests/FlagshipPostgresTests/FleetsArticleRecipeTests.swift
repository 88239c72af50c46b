#if Postgres
import Foundation
import PostgresTestSupport
import XCTest

/// The `psql` recipes of the article "Fleets on PostgreSQL" run, as shown, on a database the
/// migration made.
final class FleetsArticleRecipeTests: PostgresTestCase {
    func testEveryPsqlRecipeOfTheFleetsArticleRunsOnAMigratedDatabase() async throws {
        let server = try postgres()
        let database = try await migratedDatabase(server)
        let article = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/Flagship/Flagship.docc/Fleets.md")
        let recipes = Self.sqlBlocks(try String(contentsOf: article, encoding: .utf8))
        XCTAssertFalse(recipes.isEmpty, "no ```sql block in \(article.path)")
        for recipe in recipes {
            XCTAssertNoThrow(try server.psql(database, recipe), "a recipe of Fleets.md fails:\n\(recipe)")
        }
    }

    /// The bodies of the article's ```sql fences.
    private static func sqlBlocks(_ markdown: String) -> [String] {
        var blocks: [String] = []
        var open: [String]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if let current = open {
                if line.trimmingCharacters(in: .whitespaces) == "```" {
                    blocks.append(current.joined(separator: "\n"))
                    open = nil
                } else {
                    open = current + [line]
                }
            } else if line.trimmingCharacters(in: .whitespaces) == "```sql" {
                open = []
            }
        }
        return blocks
    }
}
#endif
