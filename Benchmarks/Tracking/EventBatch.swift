import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Bodies for the events endpoint shaped as the SDK sends them (`t: BATCH`, hits under `h`, each
/// with its queue time), for measuring the transport and the server without the SDK.
enum EventBatch {
    struct Refused: Error, CustomStringConvertible {
        let status: Int
        var description: String { "the events endpoint answered \(status)" }
    }

    static func bodies(hits: Int, perBatch: Int, envId: String) throws -> [Data] {
        let hit: [String: Any] = [
            "t": "EVENT", "vid": "v", "ds": "APP", "cid": envId, "ec": "Action Tracking", "ea": "click", "qt": 1_234,
        ]
        return try stride(from: 0, to: hits, by: perBatch).map { start in
            let batch: [String: Any] = [
                "cid": envId, "ds": "APP", "t": "BATCH", "qt": 1_234,
                "h": Array(repeating: hit, count: min(perBatch, hits - start)),
            ]
            return try JSONSerialization.data(withJSONObject: batch, options: [.sortedKeys])
        }
    }

    /// Posts the bodies one after the other, each once the previous one was answered.
    static func post(_ bodies: [Data], to url: URL) async throws {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for body in bodies {
            let (_, response) = try await session.upload(for: request, from: body)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard (200..<300).contains(status) else { throw Refused(status: status) }
        }
    }
}
