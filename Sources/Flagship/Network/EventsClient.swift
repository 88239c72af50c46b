import Foundation

/// Sends hits to the events endpoint in batches (PROTOCOL.md section 2) and activates to the
/// Decision API (section 3), and says, request by request, which hits were delivered.
///
/// Requests go one after the other, in the order of the input; it never retries by itself: that
/// is the tracking manager's decision (backoff), from the outcomes given back.
final class EventsClient: Sendable {
    /// A batch body stays under this many bytes (the events endpoint's limit).
    static let maxBatchBytes = 2_500_000
    static let maxActivatesPerRequest = 100
    /// The status reported for a hit refused locally because no batch could ever hold it.
    static let hitTooLargeStatus = 413

    let envId: String
    let decisionBaseURL: URL
    let eventsBaseURL: URL
    let timeout: TimeInterval
    let sdkVersion: String
    private let apiKey: String
    private let transport: any HTTPTransport
    private let maxBatchBytes: Int

    init(envId: String, apiKey: String, decisionBaseURL: URL, eventsBaseURL: URL, timeout: TimeInterval,
         sdkVersion: String = SDKInfo.version, transport: any HTTPTransport,
         maxBatchBytes: Int = EventsClient.maxBatchBytes) {
        self.envId = envId
        self.apiKey = apiKey
        self.decisionBaseURL = decisionBaseURL
        self.eventsBaseURL = eventsBaseURL
        self.timeout = timeout
        self.sdkVersion = sdkVersion
        self.transport = transport
        self.maxBatchBytes = maxBatchBytes
    }

    /// The same client, its requests bounded by `timeout` seconds instead.
    func withTimeout(_ timeout: TimeInterval) -> EventsClient {
        EventsClient(envId: envId, apiKey: apiKey, decisionBaseURL: decisionBaseURL, eventsBaseURL: eventsBaseURL,
                     timeout: timeout, sdkVersion: sdkVersion, transport: transport, maxBatchBytes: maxBatchBytes)
    }

    /// `{events}/`: the root path.
    var hitsURL: URL { eventsBaseURL.flagshipEndpoint(path: [""]) }
    var activateURL: URL { decisionBaseURL.flagshipEndpoint(path: ["activate"]) }

    /// Sends hits as `BATCH` bodies of at most `maxBatchBytes - 1` bytes each; each hit's `qt` is
    /// `now - createdAt` (milliseconds, never negative), and the batch's `qt` is its oldest hit's.
    /// `queueTimes`: each hit's `qt` by id (`HitAges`); a hit missing from it is aged `now - createdAt`.
    func sendHits(_ hits: [OutgoingHit], now: Int64, queueTimes: [String: Int64] = [:]) async -> [SendResult] {
        let prefix = "{\"cid\":\(FSJSONValue.string(envId).jsonString()),\"ds\":\"APP\",\"h\":["
        return await send(hits, now: now, queueTimes: queueTimes, maxCount: .max, to: hitsURL, service: "the events endpoint",
                          apiKey: nil) { entries, batchQueueTime in
            // The keys in sorted order, as `FSJSONValue.jsonString()` writes them.
            prefix + entries + "],\"qt\":\(batchQueueTime),\"t\":\"BATCH\"}"
        }
    }

    /// Sends activates, at most 100 per request (and under `maxBatchBytes`), each with its `qt`.
    func sendActivates(_ activates: [OutgoingHit], now: Int64, queueTimes: [String: Int64] = [:]) async -> [SendResult] {
        let prefix = "{\"batch\":["
        let suffix = "],\"cid\":\(FSJSONValue.string(envId).jsonString())}"
        return await send(activates, now: now, queueTimes: queueTimes, maxCount: Self.maxActivatesPerRequest, to: activateURL,
                          service: "the activate endpoint", apiKey: apiKey) { entries, _ in prefix + entries + suffix }
    }

    /// Packs the hits, in order, into bodies made by `body(entries, oldest qt)` that stay under the
    /// byte limit and hold at most `maxCount` entries, and sends them one after the other. The
    /// results: one per hit refused locally (too large), then one per request, in order.
    private func send(_ hits: [OutgoingHit], now: Int64, queueTimes: [String: Int64], maxCount: Int, to url: URL, service: String, apiKey: String?,
                      body: (_ entries: String, _ batchQueueTime: Int64) -> String) async -> [SendResult] {
        // The envelope's size depends on the batch's `qt` (its digits), so it is measured per hit.
        func envelopeBytes(_ queueTime: Int64) -> Int { body("", queueTime).utf8.count }
        var results: [SendResult] = []
        var batch = Batch()
        var bodies: [(ids: [String], body: String)] = []
        for hit in hits {
            let queueTime = queueTimes[hit.id] ?? Self.queueTime(now: now, createdAt: hit.createdAt)
            let entry = hit.wireEntry(queueTime: queueTime)
            let entryBytes = entry.utf8.count
            guard envelopeBytes(queueTime) + entryBytes < maxBatchBytes else {
                results.append(SendResult(
                    hitIds: [hit.id], outcome: .rejected(status: Self.hitTooLargeStatus),
                    rejectionReason: "the \(hit.type) hit is \(entryBytes) bytes as JSON, too large for any request (bodies must stay under \(maxBatchBytes) bytes)"))
                continue
            }
            if !batch.ids.isEmpty, batch.ids.count >= maxCount
                || envelopeBytes(max(batch.oldestQueueTime, queueTime)) + batch.bytes + 1 + entryBytes >= maxBatchBytes {
                bodies.append((batch.ids, body(batch.entries, batch.oldestQueueTime)))
                batch = Batch()
            }
            batch.add(id: hit.id, entry: entry, bytes: entryBytes, queueTime: queueTime)
        }
        if !batch.ids.isEmpty { bodies.append((batch.ids, body(batch.entries, batch.oldestQueueTime))) }

        for (ids, text) in bodies {
            let request = FSHTTPRequest.flagshipPOST(url: url, body: Data(text.utf8), apiKey: apiKey,
                                                   sdkVersion: sdkVersion, timeout: timeout)
            results.append(await result(of: request, hitIds: ids, service: service, now: now))
        }
        return results
    }

    /// `now - createdAt` in milliseconds: never negative (a clock set back), never a trap (a
    /// corrupt creation time far in the past gives the largest age).
    static func queueTime(now: Int64, createdAt: Int64) -> Int64 {
        let (age, overflow) = now.subtractingReportingOverflow(createdAt)
        if overflow { return createdAt > now ? 0 : .max }
        return max(0, age)
    }

    /// PROTOCOL.md section 6: 2xx delivered; 4xx other than 408 and 429 rejected; anything else
    /// (408, 429, 5xx, an unexpected 1xx or 3xx, a redirect not followed, no answer) retried,
    /// since it may yet succeed. Only a 2xx to the request that carried the hits delivers them.
    private func result(of request: FSHTTPRequest, hitIds: [String], service: String, now: Int64) async -> SendResult {
        let response: FSHTTPResponse
        do {
            response = try await transport.send(request)
        } catch {
            // A redirect not followed is an answer, but not one that says the hits arrived.
            let reached = switch error {
            case .redirectRefused, .redirectNotFollowed: "answered with a redirect"
            default: "could not be reached"
            }
            let reason = "\(service) \(reached): \(error.description(redacting: apiKey))"
            return SendResult(hitIds: hitIds, outcome: .retryLater(reason: reason))
        }
        switch response.status {
        case 200..<300:
            return SendResult(hitIds: hitIds, outcome: .delivered)
        case 400..<500 where response.status != 408 && response.status != 429:
            return SendResult(hitIds: hitIds, outcome: .rejected(status: response.status),
                              rejectionReason: "\(service) refused the request with HTTP status \(response.status)")
        default:
            let reason = "\(service) answered with HTTP status \(response.status)"
            return SendResult(hitIds: hitIds, outcome: .retryLater(reason: reason),
                              retryAfter: response.headers["retry-after"].flatMap {
                                  Self.retryAfterSeconds($0, now: Date(timeIntervalSince1970: Double(now) / 1000))
                              })
        }
    }

    /// `Retry-After` (RFC 9110): a number of seconds, or an HTTP date.
    static func retryAfterSeconds(_ value: String, now: Date = Date()) -> TimeInterval? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) { return seconds >= 0 ? TimeInterval(seconds) : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// The hits of one request being packed: their ids, their entries joined by commas.
    private struct Batch {
        var ids: [String] = []
        var entries = ""
        var bytes = 0
        var oldestQueueTime: Int64 = 0

        mutating func add(id: String, entry: String, bytes entryBytes: Int, queueTime: Int64) {
            if !ids.isEmpty {
                entries += ","
                bytes += 1
            }
            ids.append(id)
            entries += entry
            bytes += entryBytes
            oldestQueueTime = max(oldestQueueTime, queueTime)
        }
    }
}
