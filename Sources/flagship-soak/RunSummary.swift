import Foundation

/// What a run comes to: the rates it achieved, where its hits went, how its backlog, store and
/// memory trended, and whether the SDK kept up ("steady").
struct RunSummary: Sendable {
    /// A steady run's backlog grows by at most this share of the hit intake over its last half.
    static let backlogSlopeLimit = 0.02
    /// A steady run served the load offered: at most this share of the visitors was not started.
    static let notStartedLimit = 0.01

    let offeredRate: Double
    let achievedRate: Double
    let notStarted: Int
    let failedVisitors: Int
    let abandoned: Int
    let firstFailure: String?
    let accepted: Int
    let deliveredAtEnd: Int
    let deliveredAtClose: Int
    let requestsAtClose: Int
    let backlogAtEnd: Int
    let evicted: Int
    let shed: Int
    let refusedOverloaded: Int
    let lost: Int
    /// Over the last half: hits accepted per second, and the backlog's growth (hits/s).
    let intakeRate: Double
    let backlogSlope: Double?
    /// Over the last two thirds, MB per minute.
    let storeSlope: Double?
    let rssSlope: Double?
    let rssAnonymousSlope: Double?
    /// Over the last two thirds, MB per minute: SQLite's heap, malloc's bytes in use and free.
    let sqliteHeapSlope: Double?
    let mallocInUseSlope: Double?
    let mallocFreeSlope: Double?
    /// Over the last half: bytes the process wrote per visitor served (`ProcessIO.writtenBytes`,
    /// the WAL's frames and the checkpoints' pages) and bytes sent to storage per visitor
    /// (`storageBytes`); `nil` where /proc/self/io cannot be read or no visitor was served.
    let writtenPerVisitor: Double?
    let storagePerVisitor: Double?
    /// Returning visitors decided again without their history; `nil` when not counted.
    let decidedAgain: Int?
    /// Visitors left out of that count: a visit began before an earlier one of theirs was decided.
    let overlappedVisits: Int
    let overlapsOverflowed: Bool
    /// The SDK's log lines of the prunes that deleted visitors during the run.
    let prunes: [String]
    /// Why the run is not steady; empty when it is.
    let unsteadyReasons: [String]

    var isSteady: Bool { unsteadyReasons.isEmpty }

    /// The backlog's growth as a share of the intake (0.01 = 1%).
    var backlogSlopeShare: Double? {
        guard let backlogSlope, intakeRate > 0 else { return nil }
        return backlogSlope / intakeRate
    }

    init(_ run: SoakRun) {
        let samples = run.samples
        let last = samples.last
        // The time the run lasted: its duration, or less when it was interrupted.
        let seconds = max(samples.last?.elapsed ?? run.plan.duration.inSeconds, 1e-9)
        offeredRate = Double(run.load.offered) / seconds
        achievedRate = Double(run.load.completed) / seconds
        notStarted = run.load.notStarted
        failedVisitors = run.load.failed
        abandoned = run.abandoned
        firstFailure = run.load.firstFailure
        accepted = last?.accepted ?? 0
        deliveredAtEnd = last?.delivered ?? 0
        deliveredAtClose = run.deliveredAtClose
        requestsAtClose = run.requestsAtClose
        backlogAtEnd = last?.backlog ?? 0
        // The counts once closed include the run's; without them (the SDK never started), the last sample's.
        evicted = run.closing?.evicted ?? last?.evicted ?? 0
        lost = run.closing?.lost ?? last?.lost ?? 0
        shed = run.closing?.shed ?? last?.shed ?? 0
        refusedOverloaded = run.closing?.refusedOverloaded ?? last?.refusedOverloaded ?? 0
        decidedAgain = run.decidedAgain
        prunes = run.prunes
        overlappedVisits = run.overlappedVisits
        overlapsOverflowed = run.overlapsOverflowed

        let lastHalf = samples.filter { $0.elapsed >= seconds / 2 - 1e-9 }
        intakeRate = Self.acceptedPerSecond(over: lastHalf)
        backlogSlope = Self.slope(lastHalf.map { ($0.elapsed, Double($0.backlog)) })
        writtenPerVisitor = Self.perVisitor(over: lastHalf) { $0.writtenBytes }
        storagePerVisitor = Self.perVisitor(over: lastHalf) { $0.storageBytes }
        let lastTwoThirds = samples.filter { $0.elapsed >= seconds / 3 - 1e-9 }
        storeSlope = Self.megabytesPerMinute(over: lastTwoThirds) { $0.storeBytes }
        rssSlope = Self.megabytesPerMinute(over: lastTwoThirds) { $0.rssBytes }
        rssAnonymousSlope = Self.megabytesPerMinute(over: lastTwoThirds) { $0.rssAnonymousBytes }
        sqliteHeapSlope = Self.megabytesPerMinute(over: lastTwoThirds) { $0.heap?.sqliteBytes }
        mallocInUseSlope = Self.megabytesPerMinute(over: lastTwoThirds) { $0.heap?.mallocInUseBytes }
        mallocFreeSlope = Self.megabytesPerMinute(over: lastTwoThirds) { $0.heap?.mallocFreeBytes }

        var reasons: [String] = []
        if run.interrupted { reasons.append(String(format: "interrupted after %.1f s", seconds)) }
        if let share = intakeRate > 0 ? (backlogSlope ?? 0) / intakeRate : nil, share > Self.backlogSlopeLimit {
            reasons.append(String(format: "backlog grows by %.1f%% of the intake (limit %.0f%%)", share * 100, Self.backlogSlopeLimit * 100))
        }
        if backlogSlope == nil { reasons.append("too few samples in the last half to measure the backlog's trend") }
        if evicted > 0 { reasons.append("\(evicted) hit(s) evicted") }
        if lost > 0 { reasons.append("\(lost) hit(s) lost") }
        if shed > 0 { reasons.append("\(shed) hit(s) shed") }
        if refusedOverloaded > 0 { reasons.append("\(refusedOverloaded) awaited hit(s) refused (overloaded)") }
        if run.load.offered > 0, Double(notStarted) > Self.notStartedLimit * Double(run.load.offered) {
            reasons.append("\(notStarted) of \(run.load.offered) visitors not started (\(run.plan.maxInFlight) in flight)")
        }
        if failedVisitors > 0 { reasons.append("\(failedVisitors) visitor(s) failed") }
        if let decidedAgain, decidedAgain > 0 { reasons.append("\(decidedAgain) returning visitor(s) decided again without their history") }
        unsteadyReasons = reasons
    }

    /// Hits accepted per second from the first of `samples` to the last; 0 without time between them.
    private static func acceptedPerSecond(over samples: [Sample]) -> Double {
        guard let first = samples.first, let end = samples.last, end.elapsed > first.elapsed else { return 0 }
        return Double(end.accepted - first.accepted) / (end.elapsed - first.elapsed)
    }

    /// Bytes counted by `bytes` (in /proc/self/io) per visitor completed from the first of `samples`
    /// to the last; `nil` when either cannot read it or no visitor completed between them.
    private static func perVisitor(over samples: [Sample], _ bytes: (ProcessIO) -> Int64) -> Double? {
        guard let first = samples.first, let end = samples.last, let from = first.io, let to = end.io,
              end.completed > first.completed else { return nil }
        return Double(bytes(to) - bytes(from)) / Double(end.completed - first.completed)
    }

    /// The slope, in MB per minute, of the bytes `bytes` gives over the samples that have them.
    private static func megabytesPerMinute(over samples: [Sample], _ bytes: (Sample) -> Int64?) -> Double? {
        slope(samples.compactMap { sample in bytes(sample).map { (sample.elapsed / 60, Double($0) / 1e6) } })
    }

    /// The least-squares slope of y over x; `nil` for fewer than two distinct x.
    static func slope(_ points: [(x: Double, y: Double)]) -> Double? {
        guard points.count >= 2 else { return nil }
        let meanX = points.map(\.x).reduce(0, +) / Double(points.count)
        let meanY = points.map(\.y).reduce(0, +) / Double(points.count)
        let spread = points.map { ($0.x - meanX) * ($0.x - meanX) }.reduce(0, +)
        guard spread > 0 else { return nil }
        return points.map { ($0.x - meanX) * ($0.y - meanY) }.reduce(0, +) / spread
    }

    /// The end-of-run lines printed on stdout.
    func report() -> String {
        var lines = [
            String(format: "offered   %.1f visitors/s, achieved %.1f visitors/s", offeredRate, achievedRate),
            "visitors  not started \(notStarted), failed \(failedVisitors), cancelled at the end \(abandoned)"
                + (firstFailure.map { " (first failure: \($0))" } ?? ""),
            "hits      accepted \(accepted), delivered \(deliveredAtEnd) at the end, \(deliveredAtClose) once closed, "
                + "in \(requestsAtClose) requests",
            "          backlog \(backlogAtEnd) at the end, evicted \(evicted), lost \(lost), shed \(shed), "
                + "refused as overloaded \(refusedOverloaded)",
            "continuity " + (decidedAgain.map { "\($0) returning visitor(s) decided again without their history" }
                ?? "not counted (no decision provenance)")
                + (overlappedVisits > 0 ? "; \(overlapsOverflowed ? "over " : "")\(overlappedVisits) visitor(s) returned before their first visit "
                    + "was decided (decided twice from the allocations, not counted)" : ""),
        ]
        if let backlogSlope {
            lines.append(String(format: "backlog   %+.1f hits/s over the last half, %+.2f%% of the intake (%.1f hits/s)",
                                backlogSlope, (backlogSlopeShare ?? 0) * 100, intakeRate))
        }
        if let writtenPerVisitor {
            lines.append(String(format: "writes    %.0f bytes per visitor over the last half", writtenPerVisitor)
                + (storagePerVisitor.map { String(format: ", %.0f sent to storage", $0) } ?? ""))
        }
        lines.append("store     " + (storeSlope.map { String(format: "%+.3f MB/min", $0) } ?? "n/a") + " over the last two thirds")
        lines.append("RSS       " + (rssSlope.map { String(format: "%+.3f MB/min", $0) } ?? "n/a")
            + (rssAnonymousSlope.map { String(format: " (anonymous %+.3f MB/min)", $0) } ?? "") + " over the last two thirds")
        if let sqliteHeapSlope {
            lines.append(String(format: "heap      SQLite %+.3f MB/min", sqliteHeapSlope)
                + (mallocInUseSlope.map { String(format: ", malloc in use %+.3f MB/min", $0) } ?? "")
                + (mallocFreeSlope.map { String(format: ", free in its arenas %+.3f MB/min", $0) } ?? "") + " over the last two thirds")
        }
        for prune in prunes {
            lines.append("prune     " + prune)
        }
        lines.append("verdict   " + (isSteady ? "steady" : "not steady: " + unsteadyReasons.joined(separator: "; ")))
        return lines.joined(separator: "\n")
    }
}
