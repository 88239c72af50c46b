import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship demo`: the steps of `make demo` that need the SDK itself.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Steps of the `make demo` walkthrough.",
        subcommands: [DemoSeed.self]
    )
}

/// `flagship demo seed`: writes sample visitors and unsent hits through the SDK's default caches
/// (`FSDefaultCacheVisitor`, `FSDefaultCacheHit`), exactly as the SDK hands them over.
struct DemoSeed: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed",
        abstract: "Write sample visitors and hits through the default caches.",
        discussion: "The database is <cache-dir>/flagship-<env-id>.sqlite, created if needed; each hit's cid is <env-id>."
    )

    @Option(help: ArgumentHelp("The cache directory.", valueName: "dir"))
    var cacheDir: String

    @Option(help: ArgumentHelp("The environment id: it names the database file and is each hit's cid.", valueName: "id"))
    var envId: String = "demo_env"

    func run() throws {
        let directory = URL(fileURLWithPath: cacheDir, isDirectory: true)
        let visitorCache = try FSDefaultCacheVisitor(envId: envId, cacheDirectory: directory)
        let hitCache = try FSDefaultCacheHit(envId: envId, cacheDirectory: directory)
        let now = Int64(Date().timeIntervalSince1970 * 1000)

        let visitors = [
            DemoVisitor(id: "dave", anonymousId: nil, context: ["plan": "pro", "age": 41], variation: "green"),
            DemoVisitor(id: "bob", anonymousId: "anon-7f3a", context: ["plan": "free", "age": 27], variation: "blue"),
            DemoVisitor(id: "carol", anonymousId: nil, context: ["plan": "free", "beta": true], variation: "green"),
        ]
        for visitor in visitors {
            visitorCache.cacheVisitor(visitorId: visitor.id, try visitor.document())
        }

        var hits: [String: [String: Any]] = [:]
        for (index, visitor) in visitors.enumerated() {
            // Spread over the last few minutes, so the oldest-first order shows.
            let base = now - Int64(300_000 - index * 60_000)
            hits["\(visitor.id):\(UUID().uuidString.lowercased())"] = visitor.hit(envId: envId, time: base, "EVENT", [
                "ec": "User Engagement", "ea": "fs_consent", "el": "swift-linux:true",
            ])
            hits["\(visitor.id):\(UUID().uuidString.lowercased())"] = visitor.hit(envId: envId, time: base + 1_000, "SCREENVIEW", ["dl": "home"])
            hits["\(visitor.id):\(UUID().uuidString.lowercased())"] = visitor.hit(envId: envId, time: base + 2_000, "EVENT", [
                "ec": "Action Tracking", "ea": "add_to_cart", "el": "cta", "ev": 1,
            ])
            hits["\(visitor.id):\(UUID().uuidString.lowercased())"] = visitor.activate(time: base + 3_000)
        }
        hits["dave:\(UUID().uuidString.lowercased())"] = visitors[0].hit(envId: envId, time: now - 5_000, "TRANSACTION", [
            "tid": "order-1001", "ta": "checkout", "tr": 42.5, "tc": "EUR",
        ])
        hitCache.cacheHits(hits: hits)

        print("cached \(visitors.count) visitors and \(hits.count) hits in \(StoreLocation.databaseFile(envId: envId, in: directory).path)")
    }
}

/// A sample visitor, assigned one variation of one campaign.
private struct DemoVisitor {
    let id: String
    let anonymousId: String?
    let context: [String: Any]
    let variation: String

    /// A visitor cache document, version 1.
    func document() throws -> Data {
        let campaign: [String: Any] = [
            "campaignId": "c-homepage", "campaignName": "Homepage button", "variationGroupId": "vg-homepage",
            "variationGroupName": "All visitors", "variationId": "var-\(variation)", "variationName": variation.capitalized,
            "isReference": variation == "blue", "type": "ab", "slug": NSNull(), "activated": true,
            "flags": ["btnColor": variation, "showBanner": true, "discount": 0.1],
        ]
        let data: [String: Any] = [
            "visitorId": id, "anonymousId": anonymousId ?? NSNull(), "consent": true, "context": context,
            "campaigns": [campaign], "assignmentsHistory": ["vg-homepage": "var-\(variation)"],
        ]
        return try JSONSerialization.data(withJSONObject: ["version": 1, "data": data], options: [.sortedKeys])
    }

    /// A hit cache document, version 1, with the wire fields of its type and the environment's
    /// id (`cid`), as the SDK writes them.
    func hit(envId: String, time: Int64, _ type: String, _ fields: [String: Any]) -> [String: Any] {
        var content = fields
        content["t"] = type
        content["ds"] = "APP"
        content["cid"] = envId
        if let anonymousId {
            content["vid"] = anonymousId
            content["cuid"] = id
        } else {
            content["vid"] = id
        }
        return ["version": 1, "data": [
            "visitorId": id, "anonymousId": anonymousId ?? NSNull(), "type": type, "time": time, "content": content,
        ] as [String: Any]]
    }

    /// An activate: the visitor saw the campaign's flag. As the SDK writes it, no `cid` (the batch
    /// carries it) and `aid` only for a visitor that has an anonymous id.
    func activate(time: Int64) -> [String: Any] {
        var content: [String: Any] = ["vid": id, "caid": "vg-homepage", "vaid": "var-\(variation)"]
        if let anonymousId { content["aid"] = anonymousId }
        return ["version": 1, "data": [
            "visitorId": id, "anonymousId": anonymousId ?? NSNull(), "type": "ACTIVATE", "time": time, "content": content,
        ] as [String: Any]]
    }
}
