/// The injected faults and how many requests each has seen: which faults apply to a request.
///
/// Faults are tried in the order they were injected. Every latency fault that fires adds its
/// delay; the first other fault that fires decides the answer, and the faults after it are not
/// tried, so they do not count that request.
struct FaultSchedule {
    private struct Rule {
        let id: FaultID
        let kind: FaultKind
        /// `nil`: every route.
        let route: Route?
        let share: FaultShare
        var seen = 0
        var fired = 0
        var generator: SplitMix64

        /// Counts a request this rule is tried on, and says whether the fault applies to it.
        mutating func fires() -> Bool {
            seen += 1
            let fires: Bool
            switch share {
            case .every: fires = true
            case .next(let count): fires = fired < count
            case .everyNth(let period): fires = period > 0 && seen % period == 0
            case .fraction(let fraction, _): fires = generator.nextUnitInterval() < fraction
            }
            if fires { fired += 1 }
            return fires
        }

        var isExhausted: Bool {
            if case .next(let count) = share { return fired >= count }
            return false
        }
    }

    private var rules: [Rule] = []
    private var lastID = 0

    mutating func add(_ kind: FaultKind, route: Route?, share: FaultShare) -> FaultID {
        lastID += 1
        let id = FaultID(value: lastID)
        var seed: UInt64 = 0
        if case .fraction(_, let chosen) = share { seed = chosen }
        rules.append(Rule(id: id, kind: kind, route: route, share: share, generator: SplitMix64(seed: seed)))
        return id
    }

    mutating func remove(_ id: FaultID) {
        rules.removeAll { $0.id == id }
    }

    mutating func removeAll() {
        rules.removeAll()
    }

    /// The faults that apply to the next request on `route`: latencies, and at most one other.
    mutating func faults(for route: Route) -> [FaultKind] {
        var applied: [FaultKind] = []
        var decided = false
        for index in rules.indices where rules[index].route == nil || rules[index].route == route {
            let isLatency = rules[index].kind.isLatency
            guard isLatency || !decided else { continue }
            if rules[index].fires() {
                applied.append(rules[index].kind)
                decided = decided || !isLatency
            }
        }
        rules.removeAll { $0.isExhausted }
        return applied
    }
}
