/// What the crash torture checks, kept apart from the processes so that its rules are tested on
/// their own: every acknowledged hit delivered at least once, and a hit delivered twice only
/// because a kill fell between the server taking its batch and the store forgetting it.
struct CrashLedger: Equatable {
    /// One process's life: what it acknowledged and what the server accepted from it.
    struct Run: Equatable {
        /// Labels of the hits whose `sendHit` returned (committed) before the kill.
        var acknowledged: [String]
        /// The labels in each events request the server accepted from this process, in order.
        var acceptedBatches: [[String]]
        /// Ended by our SIGKILL (the drain runs at the end are not killed).
        var killed: Bool
    }

    var runs: [Run] = []

    struct Tally: Equatable {
        var acknowledged = 0
        /// Distinct hits the server accepted.
        var delivered = 0
        /// Acknowledged, never delivered: the promise broken. Must be empty.
        var lost: [String] = []
        /// Extra deliveries (a hit delivered three times counts two).
        var duplicated = 0
        /// Extra deliveries not in the last batch a killed process had sent: the SDK sent a hit
        /// again though it knew it was delivered. Must be empty.
        var unexplainedDuplicates: [String] = []
        /// Delivered though never acknowledged: committed, the kill came before the `ack` line.
        var deliveredUnacknowledged = 0
    }

    func tally() -> Tally {
        var tally = Tally()
        var deliveries: [String: [(run: Int, batch: Int)]] = [:]
        for (runIndex, run) in runs.enumerated() {
            for (batchIndex, batch) in run.acceptedBatches.enumerated() {
                for label in batch { deliveries[label, default: []].append((runIndex, batchIndex)) }
            }
        }
        let acknowledged = Set(runs.flatMap(\.acknowledged))
        tally.acknowledged = runs.reduce(0) { $0 + $1.acknowledged.count }
        tally.delivered = deliveries.count
        tally.lost = acknowledged.filter { deliveries[$0] == nil }.sorted()
        tally.deliveredUnacknowledged = deliveries.keys.filter { !acknowledged.contains($0) }.count
        for (label, places) in deliveries where places.count > 1 {
            tally.duplicated += places.count - 1
            // Every delivery but the last must have been the last batch of a killed process.
            let explained = places.dropLast().allSatisfy { place in
                let run = runs[place.run]
                return run.killed && place.batch == run.acceptedBatches.count - 1
            }
            if !explained { tally.unexplainedDuplicates.append(label) }
        }
        tally.unexplainedDuplicates.sort()
        return tally
    }
}
