import FlagshipLocalServer

/// Picks who the next visitor is: a new one (a new index) or, for `1 - newShare` of them, one
/// served earlier, drawn from a ring of the most recent new ones. Seeded: a run is repeatable.
struct VisitorPicker {
    private let newShare: Double
    private var generator: SplitMix64
    private var recent: [Int] = []
    private var ringPosition = 0
    private let poolSize: Int
    private var nextNew = 0

    init(newShare: Double, poolSize: Int, seed: UInt64) {
        self.newShare = newShare
        self.poolSize = max(1, poolSize)
        generator = SplitMix64(seed: seed)
    }

    mutating func next() -> Int {
        if !recent.isEmpty, Double.random(in: 0..<1, using: &generator) >= newShare {
            return recent[Int.random(in: 0..<recent.count, using: &generator)]
        }
        let index = nextNew
        nextNew += 1
        if recent.count < poolSize {
            recent.append(index)
        } else {
            recent[ringPosition] = index
            ringPosition = (ringPosition + 1) % poolSize
        }
        return index
    }
}
