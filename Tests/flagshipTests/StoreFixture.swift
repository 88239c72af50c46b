import FlagshipStore

/// Known rows, with fixed times, written through the record stores as the SDK writes them.
enum StoreFixture {
    static let visitors = [
        VisitorRecord(
            visitorId: "v1", anonymousId: nil, consent: true,
            document: #"{"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "consent": true, "context": {"age": 32}, "campaigns": [{"campaignId": "c1", "variationGroupId": "vg1", "variationId": "var1", "isReference": false, "type": "ab", "slug": null, "activated": false, "flags": {"btnColor": "green"}}], "assignmentsHistory": {"vg1": "var1"}}}"#,
            updatedAt: 1_732_170_001_000
        ),
        VisitorRecord(
            visitorId: "v2", anonymousId: "anon-2", consent: true,
            document: #"{"version": 1, "data": {"visitorId": "v2", "anonymousId": "anon-2", "consent": true, "context": {}, "campaigns": [], "assignmentsHistory": {}}}"#,
            updatedAt: 1_732_170_002_500
        ),
    ]

    static let hits = [
        HitRecord(
            id: "v1:0001", visitorId: "v1", type: "EVENT",
            document: #"{"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "type": "EVENT", "time": 1732170000123, "content": {"t": "EVENT", "vid": "v1", "ec": "Action Tracking", "ea": "click", "el": "cta", "ds": "APP", "cid": "env"}}}"#,
            createdAt: 1_732_170_000_123, attempts: 2
        ),
        HitRecord(
            id: "v2:0002", visitorId: "v2", type: "ACTIVATE",
            document: #"{"version": 1, "data": {"visitorId": "v2", "anonymousId": "anon-2", "type": "ACTIVATE", "time": 1732170005000, "content": {"vid": "v2", "aid": "anon-2", "caid": "vg1", "vaid": "var1", "cid": "env"}}}"#,
            createdAt: 1_732_170_005_000
        ),
        HitRecord(
            id: "v1:0003", visitorId: "v1", type: "PAGEVIEW",
            document: #"{"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "type": "PAGEVIEW", "time": 1732170009999, "content": {"t": "PAGEVIEW", "vid": "v1", "dl": "https://example.com/a", "ds": "APP", "cid": "env"}}}"#,
            createdAt: 1_732_170_009_999
        ),
        HitRecord(
            id: "v1:0004", visitorId: "v1", type: "EVENT", isConsent: true,
            document: #"{"version": 1, "data": {"visitorId": "v1", "anonymousId": null, "type": "EVENT", "time": 1732170010000, "content": {"t": "EVENT", "vid": "v1", "ec": "User Engagement", "ea": "fs_consent", "el": "swift:true", "ds": "APP", "cid": "env"}}}"#,
            createdAt: 1_732_170_010_000
        ),
    ]

    static let bucketingFiles = [
        BucketingRecord(
            envId: "env-a", document: #"{"campaigns": [], "panic": false}"#,
            lastModified: "Thu, 21 Nov 2024 06:00:00 GMT", downloadedAt: 1_732_168_800_000
        ),
        // Not ASCII: the summary counts bytes, not characters.
        BucketingRecord(envId: "env-b", document: #"{"name": "café"}"#, lastModified: nil, downloadedAt: 1_732_168_900_042),
    ]

    static func populate(_ store: FlagshipDatabase) throws {
        try store.write { db in
            for visitor in visitors { try db.visitors.save(visitor) }
            try db.hits.insert(hits)
            for file in bucketingFiles { try db.bucketing.save(file) }
            try db.state.setValue("true", forKey: "firstInit", now: 1_732_160_000_000)
        }
    }
}
