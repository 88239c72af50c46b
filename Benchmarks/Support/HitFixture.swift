import Foundation

/// The hits the benchmarks write: EVENT hits of one visitor, one millisecond apart, each a hit
/// cache document (version 1) as the SDK hands it to `FSHitCacheDelegate.cacheHits(hits:)`.
public struct HitFixture {
    public static let visitorId = "v1"

    /// `<visitorId>:<uuid>`.
    public let id: String
    /// Unix milliseconds.
    public let time: Int64

    public static func make(count: Int) -> [HitFixture] {
        let start = Int64(Date().timeIntervalSince1970 * 1000)
        return (0..<count).map { HitFixture(id: "\(visitorId):\(UUID().uuidString)", time: start + Int64($0)) }
    }

    public var document: [String: Any] {
        [
            "version": 1,
            "data": [
                "visitorId": Self.visitorId,
                "anonymousId": NSNull(),
                "type": "EVENT",
                "time": time,
                "content": ["t": "EVENT", "vid": Self.visitorId, "ec": "Action Tracking", "ea": "click", "ds": "APP", "cid": "env"],
            ] as [String: Any],
        ]
    }

    /// The `hits` row the hit store writes for this hit, with the document as JSON text.
    public func row() throws -> RawHitTable.Row {
        let json = try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes])
        return RawHitTable.Row(
            id: id, visitorId: Self.visitorId, type: "EVENT", document: String(decoding: json, as: UTF8.self), createdAt: time
        )
    }
}

extension Array where Element == HitFixture {
    /// The argument of successive `cacheHits(hits:)` calls, `size` hits each.
    public func batches(of size: Int) -> [[String: [String: Any]]] {
        stride(from: 0, to: count, by: size).map { start in
            Dictionary(uniqueKeysWithValues: self[start..<Swift.min(start + size, count)].map { ($0.id, $0.document) })
        }
    }
}
