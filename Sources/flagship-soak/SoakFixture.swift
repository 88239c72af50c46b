import FlagshipLocalServer
import Foundation

/// What the soak's visitors are decided with and what they do: the local server's sample
/// bucketing file (three campaigns) plus seven campaigns targeted on the visitors' context, so
/// that each decision evaluates rules as a real environment's would (the ServerLoop benchmark's
/// fixture, rebuilt here: Benchmarks is a package of its own).
struct SoakFixture: Sendable {
    static let envId = "soak_env"
    static let apiKey = "soak_api_key"
    /// The flags each visitor reads, with exposure: the sample's and two of the added campaigns'.
    static let flagKeys = ["btnColor", "extra0", "extra1"]

    let bucketingJSON: Data

    init() throws(SoakError) {
        do {
            guard var file = try JSONSerialization.jsonObject(with: ServedBucketingFile.sampleData) as? [String: Any] else {
                throw SoakError.fixture("the sample bucketing file is not a JSON object")
            }
            var campaigns = file["campaigns"] as? [[String: Any]] ?? []
            for (index, rule) in Self.targetingRules.enumerated() {
                campaigns.append(Self.campaign(index: index, key: rule.key, operator: rule.operator, value: rule.value))
            }
            file["campaigns"] = campaigns
            bucketingJSON = try JSONSerialization.data(withJSONObject: file, options: [.sortedKeys])
        } catch let error as SoakError {
            throw error
        } catch {
            throw SoakError.fixture("cannot build the bucketing file: \(error)")
        }
    }

    /// One targeting rule per added campaign (computed: `Any` values cannot be a shared constant).
    private static var targetingRules: [(key: String, operator: String, value: Any)] {
        [
            ("country", "EQUALS", ["fr", "de", "it"]), ("age", "GREATER_THAN_OR_EQUALS", 18), ("plan", "NOT_EQUALS", "free"),
            ("device", "CONTAINS", "phone"), ("visits", "LOWER_THAN", 40), ("isVip", "EQUALS", false), ("country", "NOT_EQUALS", "us"),
        ]
    }

    /// An A/B campaign of one targeted variation group, flag `extra<index>` = `a` or `b`.
    private static func campaign(index: Int, key: String, operator: String, value: Any) -> [String: Any] {
        [
            "id": "c-extra-\(index)", "name": "Extra \(index)", "type": "ab",
            "variationGroups": [[
                "id": "vg-extra-\(index)", "name": "Targeted \(index)",
                "targeting": ["targetingGroups": [["targetings": [["key": key, "operator": `operator`, "value": value]]]]],
                "variations": [
                    ["id": "v-extra-\(index)-a", "name": "A", "reference": true, "allocation": 50,
                     "modifications": ["type": "FLAG", "value": ["extra\(index)": "a"]]],
                    ["id": "v-extra-\(index)-b", "name": "B", "allocation": 50,
                     "modifications": ["type": "FLAG", "value": ["extra\(index)": "b"]]],
                ],
            ]],
        ]
    }

    static func visitorId(_ index: Int) -> String {
        "soak-visitor-\(index)"
    }

    /// A context that passes about half the added campaigns' rules, varying by visitor; the same
    /// for a visitor each time it returns.
    static func context(_ index: Int) -> [String: Any] {
        [
            "country": ["fr", "de", "us", "it"][index % 4],
            "age": 16 + index % 40,
            "plan": ["free", "pro", "enterprise"][index % 3],
            "device": index % 2 == 0 ? "iphone" : "desktop",
            "visits": index % 60,
            "isVip": index % 5 == 0,
        ]
    }
}
