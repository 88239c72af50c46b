import Foundation
import Logging

/// Where a visitor's hits and activates go: one per SDK instance, not one per visitor.
///
/// The seam the SQLite-backed strategies plug into: visitors only ever call these.
protocol HitTracking: Sendable {
    /// Queues a hit for the next batch.
    func track(_ hit: OutgoingHit) async
    /// Sends an activate now (with any still pending); `onDelivered` runs once it was accepted.
    func activate(_ activate: OutgoingHit, onDelivered: (@Sendable () -> Void)?) async
    /// Sends what is pending, once, then stops. Safe to call twice.
    func close() async
}

/// The in-memory tracking manager: a pool of hits sent in batches when `batchIntervalTimer`
/// elapses or the pool reaches `poolMaxSize`, activates sent at once. A batch that fails with a
/// retryable answer goes back to the pool for the next interval (never a tight loop); one the
/// server refuses for good is dropped with an error log. Memory is bounded by `maxPendingHits`.
actor TrackingManager: HitTracking {
    private let events: EventsClient
    private let config: FSTrackingManagerConfig
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let maxPendingHits: Int

    private var pendingHits: [OutgoingHit] = []
    private var pendingActivates: [(hit: OutgoingHit, onDelivered: (@Sendable () -> Void)?)] = []
    private var timer: Task<Void, Never>?
    private var closed = false

    init(events: EventsClient, config: FSTrackingManagerConfig, logger: Logger,
         now: @escaping @Sendable () -> Date, maxPendingHits: Int = 10_000) {
        self.events = events
        self.config = config
        self.logger = logger
        self.now = now
        self.maxPendingHits = maxPendingHits
    }

    func track(_ hit: OutgoingHit) async {
        guard !closed else {
            logger.error("\(hit.type) hit not sent: the SDK was closed")
            return
        }
        startTimerIfNeeded()
        pendingHits.append(hit)
        if pendingHits.count > maxPendingHits {
            let dropped = pendingHits.count - maxPendingHits
            pendingHits.removeFirst(dropped)
            logger.error("\(dropped) unsent hit(s) dropped: more than \(maxPendingHits) waiting")
        }
        if pendingHits.count >= config.poolMaxSize {
            await sendPendingHits()
        }
    }

    func activate(_ activate: OutgoingHit, onDelivered: (@Sendable () -> Void)?) async {
        guard !closed else {
            logger.error("Activate not sent: the SDK was closed")
            return
        }
        startTimerIfNeeded()
        pendingActivates.append((activate, onDelivered))
        await sendPendingActivates()
    }

    func close() async {
        guard !closed else { return }
        closed = true
        timer?.cancel()
        timer = nil
        await sendPendingActivates()
        await sendPendingHits()
        let left = pendingHits.count + pendingActivates.count
        if left > 0 {
            logger.warning("\(left) hit(s) and activate(s) could not be sent before closing")
        }
    }

    // MARK: Sending

    private func startTimerIfNeeded() {
        guard timer == nil, !closed else { return }
        let interval = config.batchIntervalTimer
        timer = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(interval * 1_000_000_000))
                guard !Task.isCancelled, let self else { return }
                await self.sendPendingActivates()
                await self.sendPendingHits()
            }
        }
    }

    private func sendPendingHits() async {
        guard !pendingHits.isEmpty else { return }
        // Taken out of the pool while in flight: a concurrent flush sends other hits, never these.
        let batch = pendingHits
        pendingHits.removeAll()
        let results = await events.sendHits(batch, now: now().unixMilliseconds)
        let byId = Dictionary(batch.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var retry: [OutgoingHit] = []
        for result in results {
            switch result.outcome {
            case .delivered:
                logger.debug("\(result.hitIds.count) hit(s) sent")
            case .retryLater(let reason):
                retry += result.hitIds.compactMap { byId[$0] }
                logger.warning("\(result.hitIds.count) hit(s) not sent (\(reason)): retrying at the next batch")
            case .rejected(let status):
                let types = Set(result.hitIds.compactMap { byId[$0]?.type }).sorted().joined(separator: ", ")
                logger.error("\(result.hitIds.count) hit(s) (\(types)) refused with status \(status)\(result.rejectionReason.map { " (\($0))" } ?? ""): dropped")
            }
        }
        pendingHits.insert(contentsOf: retry, at: 0)
    }

    private func sendPendingActivates() async {
        guard !pendingActivates.isEmpty else { return }
        let batch = pendingActivates
        pendingActivates.removeAll()
        let results = await events.sendActivates(batch.map(\.hit), now: now().unixMilliseconds)
        var outcomes: [String: SendResult.Outcome] = [:]
        for result in results {
            for id in result.hitIds { outcomes[id] = result.outcome }
        }
        for entry in batch {
            switch outcomes[entry.hit.id] {
            case .delivered?:
                entry.onDelivered?()
            case .retryLater(let reason)?:
                pendingActivates.append(entry)
                logger.warning("Activate not sent (\(reason)): retrying at the next batch")
            case .rejected(let status)?:
                logger.error("Activate refused with status \(status): dropped")
            case nil:
                pendingActivates.append(entry)
            }
        }
    }
}
