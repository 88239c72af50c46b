import FlagshipStore
import Foundation
import XCTest

final class DemoCommandTests: CommandTestCase {
    /// Everything environment-specific follows --env-id: the file's name (made safe for a path), and each hit's `cid`.
    func testSeedWritesTheStoreAndTheHitsOfTheEnvironmentItIsGiven() throws {
        let result = try flagship("demo", "seed", "--cache-dir", storeDirectory.path, "--env-id", "acme.prod")

        XCTAssertEqual(result.status, 0, result.stderr)
        let file = storeDirectory.appendingPathComponent("flagship-acme_prod.sqlite")
        XCTAssertEqual(result.stdout, "cached 3 visitors and 13 hits in \(file.path)\n")
        XCTAssertEqual(try storeDirectoryListing().filter { $0.hasSuffix(".sqlite") }, ["flagship-acme_prod.sqlite"])
        let store = try FlagshipDatabase.openForInspection(at: file)
        defer { store.close() }
        XCTAssertEqual(try store.read { try $0.visitors.visitors() }.map(\.visitorId).sorted(), ["bob", "carol", "dave"])
        let hits = try store.read { try $0.hits.page(limit: 100) }
        XCTAssertEqual(hits.count, 13)
        var cidByType: [String: Set<String>] = [:]
        for hit in hits {
            XCTAssertFalse(hit.document.contains("demo_env"), hit.document)
            let document = try XCTUnwrap(try parseJSON(hit.document) as? [String: Any])
            let content = try XCTUnwrap((document["data"] as? [String: Any])?["content"] as? [String: Any], hit.document)
            cidByType[hit.type, default: []].insert(content["cid"] as? String ?? "none")
            if hit.type == "ACTIVATE" {
                // The activate batch carries cid; aid only for a visitor with an anonymous id.
                XCTAssertEqual(content["aid"] as? String, hit.visitorId == "bob" ? "anon-7f3a" : nil, hit.document)
            }
        }
        XCTAssertEqual(cidByType, [
            "EVENT": ["acme.prod"], "SCREENVIEW": ["acme.prod"], "TRANSACTION": ["acme.prod"], "ACTIVATE": ["none"],
        ])
    }

    func testSeedWithoutAnEnvIdUsesTheDemoEnvironment() throws {
        let result = try flagship("demo", "seed", "--cache-dir", storeDirectory.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        let file = storeDirectory.appendingPathComponent("flagship-demo_env.sqlite")
        XCTAssertEqual(result.stdout, "cached 3 visitors and 13 hits in \(file.path)\n")
        let store = try FlagshipDatabase.openForInspection(at: file)
        defer { store.close() }
        let cids = try store.read { try $0.hits.page(limit: 100) }.filter { $0.type != "ACTIVATE" }.map { hit -> String? in
            let document = try parseJSON(hit.document) as? [String: Any]
            return ((document?["data"] as? [String: Any])?["content"] as? [String: Any])?["cid"] as? String
        }
        XCTAssertEqual(cids, Array(repeating: "demo_env", count: 10))
    }
}
